"""The planner's cache blocking for each x86 preset and L2 sizes from 256 KiB to 2 MiB: a big
matmul's register tile fits the vector registers, a reduce block's slab of a tile fits L1d (or
the reduce is left whole: at most WHOLE_REDUCE deep, its columns WHOLE_REDUCE_LINES lines wide),
the right-hand operand's block (depth x the columns one block covers) fits half the L2, and a
bigger L2 never gets a smaller block. Planner choices only: nothing is compiled."""
import dataclasses

import pytest

from tinylab.codegen.heuristic import choose_opts
from tinylab.codegen.heuristic_costs import WHOLE_REDUCE, WHOLE_REDUCE_LINES
from tinylab.codegen.plan import Action, AxisKind, KernelPlan
from tinylab.dtype import dtypes
from tinylab.ir import node as ir
from tinylab.ir.ops import Op
from tinylab.target.cpu_target import KIB, MIB, PRESETS
from tinylab.schedule.schedule import schedule

L2_SIZES = (256 * KIB, 512 * KIB, 1 * MIB, 2 * MIB)
SHAPES = ((1024, 1024, 1024), (512, 4096, 4096))  # (m, n, k): operands of 4 MiB and more


def _matmul(m, n, k) -> KernelPlan:
    x = ir.buffer(object(), (m, k), dtypes.float32, "CPU")
    w = ir.buffer(object(), (k, n), dtypes.float32, "CPU")
    product = ir.alu(Op.MUL, ir.expand(ir.reshape(x, (m, 1, k)), (m, n, k)),
                     ir.expand(ir.reshape(ir.permute(w, (1, 0)), (1, n, k)), (m, n, k)))
    out = ir.reshape(ir.reduce(Op.REDUCE_SUM, product, (2,)), (m, n))
    return KernelPlan.from_ast(schedule([out]).kernels[0].ast)


def _blocking(preset: str, l2: int, shape) -> tuple[int, int, int, object]:
    """(accumulators, reduce-block depth, columns one block covers, target) of the plan."""
    target = dataclasses.replace(PRESETS[preset], cores=2, l2_bytes=l2)
    plan = _matmul(*shape)
    plan = plan.apply_all(choose_opts(plan, list(Action), target))
    accumulators = 1
    for axis in plan.axes:
        if axis.kind is AxisKind.UPCAST:
            accumulators *= axis.size
    blocks = [a for a in plan.axes if a.kind is AxisKind.BLOCK]
    depth = next((a.mult for a in blocks if a.reduce), shape[2])  # none: the whole reduce
    columns = next((a.mult for a in blocks if not a.reduce and a.origin == 1), shape[1])
    return accumulators, depth, columns, target


@pytest.mark.parametrize("preset", ["sse4", "avx2", "avx512"])
@pytest.mark.parametrize("shape", SHAPES)
def test_blocking_is_sensible_for_every_l2(preset, shape):
    previous = 0
    for l2 in L2_SIZES:
        accumulators, depth, columns, target = _blocking(preset, l2, shape)
        assert accumulators <= target.vector_registers * 3 // 4, (l2, accumulators)
        if depth == shape[2]:
            assert depth <= WHOLE_REDUCE and \
                columns * 4 >= WHOLE_REDUCE_LINES * target.cache_line_bytes, (l2, columns)
        else:
            assert depth * 2 * target.lanes_of(4) * 4 <= target.l1d_bytes, (l2, depth)
        assert depth * columns * 4 <= l2 // 2, (l2, depth, columns)
        assert depth * columns >= previous, (l2, depth, columns)  # more L2, no smaller block
        previous = depth * columns


def test_the_choices_change_with_the_preset_and_the_l2():
    chosen = {(p, l2): _blocking(p, l2, SHAPES[0])[:3] for p in ("sse4", "avx2", "avx512")
              for l2 in L2_SIZES}
    assert len({chosen[p, 512 * KIB] for p in ("sse4", "avx2", "avx512")}) > 1
    assert len({chosen["avx2", l2] for l2 in L2_SIZES}) > 1
