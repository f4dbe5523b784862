"""Every mutable module-level container and cache of tinylab is registered with tinylab.memo
(EngineState reads it: `reset()` empties the caches, `module_state()` lists every size), or is one
of the few constant tables listed below with why it is still a plain dict, list or set.
Constants are otherwise tuples, frozensets or MappingProxyTypes, which this test lets pass."""
import ast
import collections
import enum
import importlib
import pkgutil
import weakref
from pathlib import Path

import numpy as np
import pytest

import tinylab
from tinylab import Device, Tensor, memo

PACKAGE = Path(tinylab.__file__).resolve().parent
MUTABLE = (dict, list, set, bytearray, collections.deque, weakref.WeakKeyDictionary,
           weakref.WeakValueDictionary, weakref.WeakSet)

# Constant tables left mutable, by the issue-55 engineer whose files they are (renderers and the
# op tables become rows of one table per primitive; fusion explanations and what-if scenarios
# rows of the fusion-rule registry; inspector colours part of the view registry): each is read,
# never written, and is frozen when its file is rewritten.
BY_OWNER = {
    "prims (issue 55 item 1: the renderers' constant spellings beside the primitive rows)": (
        "ir.ops.REDUCE_ALU", "renderers.c_lanes.NATIVE_LANES", "renderers.c_lanes.VECTOR_NAMES",
        "renderers.metal.NAMES", "renderers.opencl.NAMES", "renderers.python.STEPS",
        "renderers.wgsl.REGISTER", "renderers.wgsl.MEMORY", "renderers.wgsl._LITERAL_WORDS",
        "renderers.wgsl.HELPERS", "renderers.wgsl_int64.HELPERS", "renderers.wgsl_int64.NEEDS"),
    "registry (issue 55 item 3: fusion rules and inspector views as rows)": (
        "inspection.kernel_graph.COLORS",
        "inspection.kernel_graph.TRANSFORM_COLORS", "inspection.kernel_graph.HEADER",
        "inspection.memory_timeline.ROLE_COLORS", "inspection.passes.DIFF_COLORS",
        "inspection.roofline.LEVEL_COLORS"),
}
# Plain containers that must stay plain, with why
CONSTANT = {
    "runtimes.python.NAMESPACE": "copied into each kernel's globals (exec needs a real dict)",
    "memo.REGISTERED": "the registry itself",
    "config._ENV": "the environment read once at import (tests patch it as the environment)",
    "memo.MEMOS": "the registry of Memo tables (each also in REGISTERED)",
}
ALLOWED = {name: owner for owner, names in BY_OWNER.items() for name in names} | CONSTANT


def _assigned_names(tree: ast.Module):
    """Names bound at module level (in if/try blocks too) and the classes defined there."""
    names, classes, pending = [], [], list(tree.body)
    while pending:
        statement = pending.pop(0)
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else \
                [statement.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
        elif isinstance(statement, ast.FunctionDef):
            names.append(statement.name)
        elif isinstance(statement, ast.ClassDef):
            classes.append(statement.name)
        elif isinstance(statement, (ast.If, ast.Try, ast.With)):
            pending += statement.body + getattr(statement, "orelse", []) + \
                [s for h in getattr(statement, "handlers", []) for s in h.body]
    return names, classes


def _is_state(value) -> bool:
    return isinstance(value, MUTABLE) or callable(getattr(value, "cache_clear", None))


def _module_state():
    """(dotted name under tinylab, value) for every module-level and class-level container."""
    for info in pkgutil.walk_packages(tinylab.__path__, "tinylab."):
        module = importlib.import_module(info.name)
        short = info.name.removeprefix("tinylab.")
        names, classes = _assigned_names(ast.parse(Path(module.__file__).read_text()))
        for name in names:
            value = vars(module).get(name)
            if not name.startswith("__") and _is_state(value):
                yield f"{short}.{name}", value
        for class_name in classes:
            cls = vars(module).get(class_name)
            if not isinstance(cls, type) or issubclass(cls, (enum.Enum, tuple)):
                continue
            for name, value in vars(cls).items():
                if not name.startswith("__") and _is_state(value):
                    yield f"{short}.{class_name}.{name}", value


def test_every_mutable_module_table_is_registered_or_a_listed_constant():
    stray = [name for name, value in _module_state()
             if not memo.is_registered(value) and name not in ALLOWED]
    assert not stray, ("register these with tinylab.memo (Memo, @cached, register) or make "
                       "them tuples/frozensets/MappingProxyType:\n" + "\n".join(stray))


def test_the_allow_list_names_only_plain_containers_that_exist():
    found = dict(_module_state())
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"no longer mutable (or gone): remove from the list: {stale}"
    assert not [name for name in ALLOWED if memo.is_registered(found[name])]


def test_the_walk_sees_state_in_each_place():
    """The checker itself: module tables in if-blocks, classes' tables, lru_cache functions."""
    tree = ast.parse("A = {}\nif True:\n    B = []\nclass C:\n    D = set()\n@f\ndef e(): pass")
    assert _assigned_names(tree) == (["A", "e", "B"], ["C"])
    assert _is_state(memo.cached("test walk", 2)(lambda: 1)) and _is_state(weakref.WeakSet())
    assert not _is_state((1,)) and not _is_state(frozenset())
    del memo.REGISTERED["test walk"]


def test_reset_empties_caches_and_keeps_live_tables_and_rows():
    from tinylab.engine.backends import BACKENDS
    x = Tensor(np.arange(6, dtype=np.float32)).realize()
    got = (x.reshape(2, 3).permute(1, 0) * 2).sum(axis=1).numpy()
    built_in = set(BACKENDS)
    held = Device.state.module_state()
    assert held["backends"][1] == len(BACKENDS) and held["interned nodes"][1] > 0
    Device.state.reset()
    after = Device.state.module_state()
    assert all(entries == 0 for role, entries, _ in after.values() if role is memo.Role.CACHE)
    assert set(BACKENDS) == built_in and after["settings"][1] == held["settings"][1]
    assert after["live buffers"][1] >= 1       # x is still alive, its buffer registered
    again = (x.reshape(2, 3).permute(1, 0) * 2).sum(axis=1).numpy()
    np.testing.assert_array_equal(got, np.arange(6).reshape(2, 3).T.sum(axis=1) * 2)
    np.testing.assert_array_equal(again, got)


def test_a_cache_must_be_bounded_and_names_are_unique():
    with pytest.raises(ValueError, match="bounded"):
        memo.register("unbounded test cache", {}, memo.Role.CACHE)
    with pytest.raises(ValueError, match="registered already"):
        memo.register("backends", [], memo.Role.ROWS)
