"""Ops and schedule item kinds are enum members everywhere: no `getattr` (or `hasattr`/`setattr`)
with a name computed at run time outside the few lookups listed below with their reason, and no
item kind compared with a string literal. The primitive registry (ir/ops.py) is the one place
that makes a name an Op member: `Op.register` sets the row as an attribute of Op."""
import ast
from pathlib import Path

from tinylab.schedule.items import ItemKind

PACKAGE = Path(__file__).resolve().parents[1] / "tinylab"
ELSEWHERE = ()

# (file, the call as written) -> why its name is computed: none of them names an op
COMPUTED_NAMES = {
    ("as_tinygrad.py", "setattr(module, MARK, True)"): "MARK is a module constant",
    ("as_tinygrad.py", "getattr(sys.modules.get('tinygrad'), MARK, False)"): "MARK, a constant",
    ("as_tinygrad.py", "getattr(found, MARK, False)"): "MARK is a module constant",
    ("dtype.py", "getattr(dtypes, dtype.lower(), None)"): "a dtype spelled by the user",
    ("engine/schedule_store.py", "getattr(dtypes, rest[0])"): "a dtype by name, from disk",
    ("frontend/narrow_floats.py", "getattr(cls, name)"): "wraps Tensor methods, a table of names",
    ("frontend/narrow_floats.py", "setattr(cls, name, _in_float32(getattr(cls, name)))"):
        "wraps Tensor methods listed in COMPOSITES",
    ("inspection/model.py", "getattr(type(options)(), name)"): "SchedulerOptions field defaults",
    ("ir/ops.py", "setattr(cls, name, row)"): "Op.register makes the row a member of Op",
    ("ir/ops.py", "delattr(cls, name)"): "Op.unregister drops a row a test registered",
    ("codegen/linear_ops.py", "setattr(LinearOp, _name, LinearOp._member(_name))"):
        "each structure instruction a member of LinearOp",
    ("schedule/fusion_rules.py", "getattr(options, self.switch)"):
        "the SchedulerOptions field a fusion rule's row names as its switch",
    ("runtimes/cpu.py", "getattr(lib, name)"): "a kernel's symbol in its shared library",
    ("torch/graph_program.py", "getattr(gm, name)"): "an FX graph module's parameter by path",
}
ACCESSORS = ("getattr", "hasattr", "setattr", "delattr")


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if not relative.startswith(ELSEWHERE):
            yield relative, ast.parse(path.read_text())


def _is_item_kind_literal(node) -> bool:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_item_kind_literal(element) for element in node.elts)
    return isinstance(node, ast.Constant) and node.value in {kind.value for kind in ItemKind}


def test_no_attribute_lookup_by_a_computed_name():
    found = []
    for relative, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ACCESSORS and len(node.args) >= 2 and \
                    not isinstance(node.args[1], ast.Constant):
                if (relative, ast.unparse(node)) not in COMPUTED_NAMES:
                    found.append(f"{relative}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "dispatch through a table keyed by the Op, not getattr:\n" + "\n".join(found)


def test_item_kinds_are_compared_as_enum_members():
    found = []
    for relative, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and \
                    any(_is_item_kind_literal(side) for side in (node.left, *node.comparators)):
                found.append(f"{relative}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "compare with ItemKind.KERNEL / ItemKind.COPY:\n" + "\n".join(found)


def test_the_allow_list_is_still_needed():
    """Every listed lookup still exists (a stale entry would allow a new one silently)."""
    seen = {(relative, ast.unparse(node)) for relative, tree in _modules()
            for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert set(COMPUTED_NAMES) <= seen, set(COMPUTED_NAMES) - seen


def test_an_item_kind_is_still_its_word():
    """The JSON model and printers show the value; an enum member equals it."""
    assert [str(kind) for kind in ItemKind] == ["kernel", "copy"]
    assert ItemKind.KERNEL == "kernel" and ItemKind("copy") is ItemKind.COPY


def test_a_schedule_of_a_copy_and_kernels_uses_the_enum():
    """A device copy between two kernels: each item's kind is an ItemKind member, the schedule's
    kernels are its KERNEL items, and the values are right after the copy."""
    import numpy as np

    from tinylab import Tensor
    from tinylab.schedule.schedule import schedule
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    moved = ((Tensor(x, device="CPU") + 1).to("PYTHON") * 2).sum(axis=0)
    planned = schedule([moved.node])
    kinds = [item.kind for item in planned.items]
    assert all(isinstance(kind, ItemKind) for kind in kinds)
    assert ItemKind.COPY in kinds and kinds.count(ItemKind.KERNEL) == len(planned.kernels) >= 2
    np.testing.assert_array_equal(moved.numpy(), ((x + 1) * 2).sum(axis=0))
