"""The readable heuristic that picks optimization actions for a kernel plan.

`choose_opts(plan, actions, threads)` -> list[Opt]. Rules, in order: thread the outermost global
loop when there is enough work; unroll short inner reduce loops. Each rule is a few lines and
only uses actions the device supports (`actions`). BEAM search (beam.py) replaces this when on.
"""
from __future__ import annotations

from .plan import AxisKind, KernelPlan, Opt, OptError

THREAD_MIN_WORK = 1 << 15   # below this many loop iterations, threads cost more than they save


def _work(plan: KernelPlan) -> int:
    total = 1
    for axis in plan.axes:
        total *= axis.size
    return total


def _try(plan: KernelPlan, opt: Opt) -> KernelPlan:
    try:
        return plan.apply(opt)
    except OptError:
        return plan


def choose_opts(plan: KernelPlan, actions, threads: int) -> list[Opt]:
    start = plan
    if "UNROLL" in actions and plan.has_reduce:
        reduce_axes = plan.axes_of(AxisKind.REDUCE)
        last = reduce_axes[-1]
        size = plan.axes[last].size
        for amount in (4, 2):
            if size % amount == 0 and size >= 4 * amount:
                plan = _try(plan, Opt("UNROLL", last, amount))
                break
    if "THREAD" in actions and threads > 1 and _work(plan) >= THREAD_MIN_WORK:
        globals_ = plan.axes_of(AxisKind.GLOBAL)
        if globals_ and plan.axes[globals_[0]].size >= threads:
            plan = _try(plan, Opt("THREAD", globals_[0], threads))
    return plan.opts[len(start.opts):]
