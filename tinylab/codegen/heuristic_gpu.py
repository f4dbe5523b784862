"""The readable heuristic for GPU plans (OpenCL, CUDA): register tiles, then work-groups.

`choose_gpu_opts(plan, actions)` -> list[Opt]. Rules, in order: a reduce with few outputs is
split across a work-group (GROUP); an output axis along which some input is reused gets a 4-wide
register tile (UPCAST, at most two); a long inner reduce loop is unrolled by 4; then output axes
become work-group dimensions (LOCAL), innermost first, up to MAX_LOCAL work-items per group.
"""
from __future__ import annotations

from .plan import Action, AxisKind, KernelPlan, Opt, OptError, view_index

MAX_LOCAL = 256          # work-items per work-group
GROUP_MAX_OUTPUTS = 256  # a reduce with fewer outputs cannot fill a GPU: split it (GROUP)
GROUP_MIN_REDUCE = 256   # ... when its reduce loop is at least this long


def _try(plan: KernelPlan, opt: Opt) -> KernelPlan:
    try:
        return plan.apply(opt)
    except OptError:
        return plan


def _size(plan: KernelPlan, *kinds: AxisKind) -> int:
    total = 1
    for axis in plan.axes_of(*kinds):
        total *= plan.axes[axis].size
    return total


def _group(plan: KernelPlan) -> KernelPlan:
    reduces = plan.axes_of(AxisKind.REDUCE)
    if not reduces or _size(plan, AxisKind.GLOBAL) > GROUP_MAX_OUTPUTS:
        return plan
    size = plan.axes[reduces[-1]].size
    for amount in (256, 128, 64, 32, 16):
        if size % amount == 0 and size >= GROUP_MIN_REDUCE:
            return _try(plan, Opt(Action.GROUP, reduces[-1], amount))
    return plan


def _reused_along(plan: KernelPlan, axis: int) -> bool:
    """Some input's index ignores this axis: a tile along it loads that input once."""
    loop_vars = plan.loop_vars()
    values = {i: loop_vars.get(i, 0) for i in range(len(plan.axes))}
    var = loop_vars[axis].as_atom()
    for load in plan.loads:
        index, _ = view_index(load.view, plan.index_exprs(values))
        if var not in index.vars():
            return True
    return False


def _upcast(plan: KernelPlan) -> KernelPlan:
    if not plan.has_reduce or plan.axes_of(AxisKind.GROUP):  # grouped: each tile would need
        return plan                                          # its own local-memory array
    for _ in range(2):
        tiled = {plan.axes[i].origin for i in plan.axes_of(AxisKind.UPCAST)}
        candidates = [i for i in plan.axes_of(AxisKind.GLOBAL)
                      if plan.axes[i].size % 4 == 0 and plan.axes[i].size >= 16
                      and plan.axes[i].origin not in tiled and _reused_along(plan, i)]
        if not candidates:
            break
        plan = _try(plan, Opt(Action.UPCAST, candidates[0], 4))
    return plan


def _unroll(plan: KernelPlan) -> KernelPlan:
    reduces = plan.axes_of(AxisKind.REDUCE)
    if reduces and plan.axes[reduces[-1]].size % 4 == 0 and plan.axes[reduces[-1]].size >= 16:
        return _try(plan, Opt(Action.UNROLL, reduces[-1], 4))
    return plan


def _local(plan: KernelPlan) -> KernelPlan:
    """Sizes are chosen innermost axis first; applied outermost first, so the innermost axis
    ends up last, on work-group dimension 0 (neighbouring work-items, neighbouring addresses)."""
    budget = MAX_LOCAL // _size(plan, AxisKind.GROUP)
    globals_ = plan.axes_of(AxisKind.GLOBAL)
    amounts = {}
    for position, axis in enumerate(reversed(globals_)):
        cap = budget if position > 0 or len(globals_) == 1 else min(budget, 32)
        size = plan.axes[axis].size
        amounts[axis] = max([a for a in (2, 4, 8, 16, 32, 64, 128, 256)
                             if a <= cap and size % a == 0], default=1)
        budget //= amounts[axis]
    removed = 0   # a global axis split entirely into a LOCAL one disappears from its place
    for axis in globals_:
        if amounts[axis] > 1:
            whole = plan.axes[axis - removed].size == amounts[axis]
            plan = _try(plan, Opt(Action.LOCAL, axis - removed, amounts[axis]))
            removed += whole
    return plan


def choose_gpu_opts(plan: KernelPlan, actions) -> list[Opt]:
    start = plan
    rules = ((Action.GROUP, _group), (Action.UPCAST, _upcast), (Action.UNROLL, _unroll),
             (Action.LOCAL, _local))
    for action, rule in rules:
        if action in actions:
            plan = rule(plan)
    return plan.opts[len(start.opts):]
