"""The readable heuristic that picks optimization actions for a CPU kernel plan.

`choose_opts(plan, actions, threads)` -> list[Opt]. In order:
1. vectorize the global axis along which the output (and most inputs) are contiguous, else a
   reduce axis along which inputs are contiguous (a vector accumulator, summed at the end);
2. register-tile: upcast a second global axis whose loads are shared across the vector lanes
   (matmul and conv rows), so one vector load feeds several accumulators;
3. unroll a long inner reduce loop;
4. thread the outermost global loop when there is enough work.
Each rule only uses actions the device supports. BEAM search (beam.py) replaces this when on.
"""
from __future__ import annotations

from ..ir import symbolic as sym
from ..ir.ops import Op
from .plan import AxisKind, KernelPlan, Opt, OptError, view_index

THREAD_MIN_WORK = 1 << 16   # loop iterations below which threads cost more than they save
VECTOR_WIDTHS = (16, 8, 4)
MAX_ACCUMULATORS = 24       # vector registers kept for accumulators (AVX-512 has 32)


def work(plan: KernelPlan) -> int:
    total = 1
    for axis in plan.axes:
        total *= axis.size
    return total


def dim_stride(view, dim: int, ndim: int) -> int | None:
    """How far the buffer index moves when dimension `dim` grows by one (None: not linear)."""
    if view.shape[dim] == 1:
        return 0
    names = [sym.var(f"d{k}", 0, max(s - 1, 0)) for k, s in enumerate(view.shape)]
    base, valid = view_index(view, names)
    if not valid.is_true and any(dim_var in leaf.x.vars() for leaf in valid.leaves()
                                 for dim_var in [names[dim].as_atom()]):
        return None
    atom = names[dim].as_atom()
    step = sym.substitute(base, {atom: names[dim] + 1}) - base
    return step.const if step.is_const else None


def _views(plan: KernelPlan):
    return [(n.op, n.view) for n in plan.ast.toposort() if n.op in (Op.LOAD, Op.STORE)]


def _score_dim(plan: KernelPlan, dim: int, views) -> int:
    score = 0
    for op, view in views:
        stride = dim_stride(view, dim, len(plan.shape))
        weight = 3 if op is Op.STORE else 1
        if stride == 1:
            score += 2 * weight
        elif stride == 0:
            score += weight
        else:
            score -= 2 * weight
    return score


def _try(plan: KernelPlan, opt: Opt) -> KernelPlan:
    try:
        return plan.apply(opt)
    except OptError:
        return plan


def _axis_of_dim(plan: KernelPlan, dim: int, kinds) -> int | None:
    for i, axis in enumerate(plan.axes):
        if axis.origin == dim and axis.kind in kinds and axis.mult == 1:
            return i
    for i, axis in enumerate(plan.axes):
        if axis.origin == dim and axis.kind in kinds:
            return i
    return None


def vectorize(plan: KernelPlan) -> KernelPlan:
    views = _views(plan)
    best = None
    for kinds in ((AxisKind.GLOBAL,), (AxisKind.REDUCE,)):
        for i, axis in enumerate(plan.axes):
            if axis.kind not in kinds:
                continue
            width = next((w for w in VECTOR_WIDTHS if axis.size % w == 0), None)
            if width is None:
                continue
            score = _score_dim(plan, axis.origin, views)
            if score > 0 and (best is None or score > best[0]):
                best = (score, i, width)
        if best is not None:
            break
    if best is None:
        return plan
    return _try(plan, Opt("VECTORIZE", best[1], best[2]))


def register_tile(plan: KernelPlan) -> KernelPlan:
    """Upcast a global axis whose inputs are shared by the vector lanes (reuse in registers)."""
    vector = plan.vector_axis
    if vector is None or vector.reduce or not plan.has_reduce:
        return plan
    views = [v for op, v in _views(plan) if op is Op.LOAD]
    best = None
    for i, axis in enumerate(plan.axes):
        if axis.kind is not AxisKind.GLOBAL or axis.origin == vector.origin:
            continue
        shared = sum(1 for v in views if dim_stride(v, vector.origin, len(plan.shape)) == 0
                     and dim_stride(v, axis.origin, len(plan.shape)) != 0)
        reused = sum(1 for v in views if dim_stride(v, axis.origin, len(plan.shape)) == 0)
        if shared and reused:
            amount = next((a for a in (8, 6, 4, 3, 2) if axis.size % a == 0 and axis.size > a), 0)
            if amount and (best is None or axis.size > plan.axes[best[0]].size):
                best = (i, amount)
    if best is None:
        return plan
    plan = _try(plan, Opt("UPCAST", best[0], best[1]))
    # a second vector column per row when the vector axis is long enough
    vector_axis = _axis_of_dim(plan, plan.vector_axis.origin, (AxisKind.GLOBAL,))
    if vector_axis is not None and plan.axes[vector_axis].size % 2 == 0 and \
            best[1] * 2 <= MAX_ACCUMULATORS and plan.axes[vector_axis].size >= 4:
        plan = _try(plan, Opt("UPCAST", vector_axis, 2))
    return plan


def unroll(plan: KernelPlan) -> KernelPlan:
    reduce_axes = plan.axes_of(AxisKind.REDUCE)
    if not reduce_axes:
        return plan
    last = reduce_axes[-1]
    size = plan.axes[last].size
    tiles = 1
    for axis in plan.axes:
        if axis.kind is AxisKind.UPCAST:
            tiles *= axis.size
    if tiles >= 8:
        return plan  # the register tile already gives enough independent work
    for amount in (4, 2):
        if size % amount == 0 and size >= 4 * amount:
            return _try(plan, Opt("UNROLL", last, amount))
    return plan


def thread(plan: KernelPlan, threads: int, can_swap: bool) -> KernelPlan:
    if threads < 2 or work(plan) < THREAD_MIN_WORK:
        return plan
    globals_ = plan.axes_of(AxisKind.GLOBAL)
    if not globals_:
        return plan
    first = globals_[0]
    if plan.axes[first].size < threads:
        bigger = [g for g in globals_ if plan.axes[g].size >= threads]
        if not bigger or not can_swap:
            return plan
        plan = _try(plan, Opt("SWAP", first, bigger[0]))
    return _try(plan, Opt("THREAD", plan.axes_of(AxisKind.GLOBAL)[0], threads))


def choose_opts(plan: KernelPlan, actions, threads: int) -> list[Opt]:
    start = len(plan.opts)
    if "VECTORIZE" in actions:
        plan = vectorize(plan)
    if "UPCAST" in actions:
        plan = register_tile(plan)
    if "UNROLL" in actions:
        plan = unroll(plan)
    if "THREAD" in actions:
        plan = thread(plan, threads, "SWAP" in actions)
    return plan.opts[start:]
