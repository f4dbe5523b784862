"""One vocabulary per stage: the linear program's instructions are `LinearOp` members and a loop's
kind an `AxisKind` member (str enums, so printed programs and golden files read the same words);
renderers and the linear-program printer compare members, never bare strings (a launch id's
space is an `IdSpace` member, target/launch.py)."""
import re
from pathlib import Path

import numpy as np

from tinylab import Context, Tensor, trace
from tinylab.codegen.linear_ops import LinearOp
from tinylab.codegen.plan import ACTIONS, Action, AxisKind
from tinylab.target.launch import IdSpace

ROOT = Path(__file__).resolve().parents[2] / "tinylab"
WORDS = set(LinearOp.__members__) | {kind.value for kind in AxisKind} | set(map(str, IdSpace))
QUOTED = r"(?:\"\w+\"|'\w+')"   # either quote (f-strings hold the other); \w: EXP2
COMPARED = re.compile(rf"(?:==|!=|\bin|\bnot in)\s*\(?((?:{QUOTED},?\s*)+)\)?")


def test_renderers_compare_members_not_strings():
    found = []
    for path in sorted((ROOT / "renderers").glob("*.py")) + [ROOT / "codegen" / "plan_printer.py"]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.lstrip().startswith("#"):
                continue
            for match in COMPARED.finditer(line):
                words = set(re.findall(r"[\"'](\w+)[\"']", match.group(1)))
                if words & WORDS:
                    found.append(f"{path.name}:{number}: {line.strip()}")
    assert not found, "bare op or axis-kind names compared:\n" + "\n".join(found)


def test_the_enums_read_as_their_words():
    assert [str(kind) for kind in AxisKind] == [kind.name.lower() for kind in AxisKind]
    assert AxisKind.THREAD == "thread" and f"{AxisKind.BLOCK}" == "block"
    assert LinearOp.RANGE == "RANGE" and LinearOp("ADD") is LinearOp.ADD


def test_each_splitting_action_names_the_axis_kind_it_makes():
    kinds = {action: action.split_kind for action in ACTIONS}
    assert kinds == {Action.UPCAST: AxisKind.UPCAST, Action.UNROLL: AxisKind.UNROLL,
                     Action.VECTORIZE: AxisKind.VECTOR, Action.LOCAL: AxisKind.LOCAL,
                     Action.GROUP: AxisKind.GROUP, Action.THREAD: None, Action.BLOCK: None,
                     Action.SWAP: None}


def test_a_linear_program_holds_members_and_prints_words():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    with trace() as recorded, Context(NOOPT=1):
        got = (Tensor(x) * 2).sum(axis=1).numpy()
    np.testing.assert_allclose(got, (x * 2).sum(axis=1))
    kernel = recorded.kernels[-1]
    linear = kernel.passes["linear"]
    assert " RANGE " in linear and " global" in linear and "AxisKind" not in linear
    program = kernel.compiled.program
    ranges = [instr for instr in program.instrs if instr.op is LinearOp.RANGE]
    assert ranges and all(isinstance(instr.arg[2], AxisKind) for instr in ranges)
    assert all(isinstance(kind, AxisKind) for _, _, kind in program.loops)
