"""Partial sums: how long one accumulator's chain of additions may grow before it is folded in.

A float32 accumulator that takes n additions in a row carries a rounding error that grows with n
(about n·eps of the running total in the worst case). A BatchNorm mean over a 512×24×24 batch is
a chain of 18,432 additions per lane, which left its result 100 times less exact than PyTorch's.
When a reduce's chain is longer than LONG_CHAIN, the kernel keeps a partial accumulator that
restarts at each iteration of one reduce loop and is added into the total when that loop's inner
loops end: two chains of about √n instead of one of n (PyTorch's GEMMs and sums do the same by
blocking). The split is picked from the plan, so every backend and every tuned plan gets it:
`plan_partial_sums(plan)` is the plan stage's last step (after the heuristic's or BEAM's actions),
so the plan BEAM times, the compile record prints and linearize builds carries the decision.
"""
from __future__ import annotations

import math

from ..ir import symbolic as sym
from ..ir.ops import Op
from .plan import AxisKind, KernelPlan

LONG_CHAIN = 1024   # additions one accumulator may take in a row before it gets partial sums
SHORTEST_PARTIAL = 16  # a partial takes at least this many (its fold is one more addition)


def chain_lengths(plan: KernelPlan) -> tuple[int, list[tuple[int, int]]]:
    """(additions per accumulator, [(axis number, additions per partial restarted in it)]) for
    each reduce loop a partial could restart in, outermost first."""
    unrolled = math.prod(a.size for a in plan.axes if a.kind is AxisKind.UNROLL)
    loops = [i for i, a in enumerate(plan.axes) if a.kind is AxisKind.REDUCE]
    sizes = [sym.max_of(plan.axes[i].size) for i in loops]
    total = unrolled * math.prod(sizes)
    levels = [(axis, unrolled * math.prod(sizes[n + 1:])) for n, axis in enumerate(loops)]
    return total, levels


def _balance(total: int, partial: int) -> int:
    """The longer of the two chains (partials, and folds into the total): smaller is better."""
    return max(partial, -(-total // partial))


def split_long_chain(plan: KernelPlan) -> tuple[KernelPlan, int | None]:
    """The plan to linearize and the axis whose loop restarts the partial accumulator (None:
    one accumulator is exact enough, as for a max or an integer sum). Picks the reduce loop
    that balances the two chains best; if splitting the outermost reduce loop in two balances
    them much better (a single long loop), the returned plan has that loop split (the kernel
    keeps its name)."""
    reduce = plan.reduce_node
    if reduce is None or reduce.op is not Op.REDUCE_SUM or not reduce.dtype.is_float \
            or any(a.kind in (AxisKind.GROUP, AxisKind.LOCAL) for a in plan.axes):
        return plan, None  # a max, or an integer sum, is exact in any order
    total, levels = chain_lengths(plan)
    if total <= LONG_CHAIN:
        return plan, None
    candidates = [(_balance(total, partial), axis) for axis, partial in levels
                  if partial >= SHORTEST_PARTIAL]
    best = min(candidates, default=None)
    split = _split_outermost(plan, total, levels)
    if split is not None and (best is None or 2 * split[0] <= best[0]):
        return split[1], levels[0][0]
    return (plan, best[1]) if best is not None else (plan, None)


def plan_partial_sums(plan: KernelPlan) -> KernelPlan:
    """`plan` with its partial-sum decision (`partial_axis`; the outermost reduce loop split in
    two first where that balances the chains much better), frozen, keeping the kernel's name.
    A plan that already passed this step comes back as it is."""
    if plan.partials_planned:
        return plan
    split, axis = split_long_chain(plan)
    out = split.copy()
    out.partials_planned, out.partial_axis, out.kept_name = True, axis, plan.name
    return out.frozen()


def _split_outermost(plan: KernelPlan, total: int, levels: list) -> tuple[int, KernelPlan] | None:
    """Split the outermost reduce loop in two reduce loops (outer × inner), the inner size a
    divisor chosen to balance the chains; None when its size is symbolic or prime."""
    axis_number, partial_inside = levels[0]
    axis = plan.axes[axis_number]
    if sym.is_symbolic(axis.size):
        return None
    choices = [(_balance(total, partial_inside * inner), inner) for inner in _divisors(axis.size)
               if 1 < inner < axis.size and partial_inside * inner >= SHORTEST_PARTIAL]
    if not choices:
        return None
    balance, inner = min(choices)
    split = plan.copy()
    split.split_loop(axis_number, inner, AxisKind.REDUCE)
    return balance, split.frozen()


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]
