"""GPU lowering of work-group axes in the plan (its rendering is renderers/gpu_c.py), called by
the linearizer through three small hooks.

LOCAL axes are work-item ids inside a work-group; GROUP axes split a reduce across a work-group:
each work-item reduces its share into registers, then `GROUP_REDUCE` combines the work-group's
partial results through local (shared) memory behind a barrier, and only the work-item with
group id 0 stores. Plans without LOCAL/GROUP axes (every CPU plan) pass through unchanged.
"""
from __future__ import annotations

from ..ir import symbolic as sym
from ..ir.ops import REDUCE_ALU
from .linear_ops import LinearOp
from .plan import AxisKind


def order_loops(plan, loop_axes: list[int]) -> list[int]:
    """Loops outermost first: output loops (GLOBAL, THREAD, LOCAL), then GROUP, then REDUCE.
    On a GPU the output and GROUP loops are ids, so the reduce loops are the only real loops."""
    def rank(axis: int) -> int:
        kind = plan.axes[axis].kind
        return 2 if plan.axes[axis].reduce and kind is not AxisKind.GROUP else \
            1 if kind is AxisKind.GROUP else 0
    return sorted(loop_axes, key=rank)


def _work_group_axes(plan) -> tuple[list[int], list[int]]:
    local = [i for i, a in enumerate(plan.axes) if a.kind is AxisKind.LOCAL]
    group = [i for i, a in enumerate(plan.axes) if a.kind is AxisKind.GROUP]
    return local, group


def _linear(builder, axes: list[int]) -> tuple[sym.Lin, int]:
    """Row-major linear index of `axes` (their loop variables) and the product of their sizes."""
    index, size = sym.ZERO, 1
    for axis in reversed(axes):
        index = index + builder.vars[axis] * size
        size *= builder.plan.axes[axis].size
    return index, size


def group_reduce(builder, acc: int, node) -> int:
    """After the reduce loops: combine the accumulator across GROUP work-items (or return it)."""
    local, group = _work_group_axes(builder.plan)
    if not group:
        return acc
    local_index, local_size = _linear(builder, local)
    group_index, group_size = _linear(builder, group)
    slot = local_index * group_size + group_index
    base = local_index * group_size
    arg = (REDUCE_ALU[node.op].name, slot, base, group_size, local_size * group_size)
    return builder.emit(LinearOp.GROUP_REDUCE, builder.instrs[acc].dtype, (acc,), arg, post=True,
                        unique=True)


def guard_store(builder, valids: tuple) -> tuple:
    """Stores after a grouped reduce happen once per work-group: only where every group id is 0."""
    _, group = _work_group_axes(builder.plan)
    if not group:
        return valids
    first = sym.and_(*[sym.lt(builder.vars[axis], 1) for axis in group])
    return tuple(sym.and_(valid, first) for valid in valids)
