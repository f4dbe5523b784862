"""The CPU heuristic's register tile (heuristic.py step 2): which global axes to upcast so each
load feeds several accumulators within the target's vector registers, the measured micro-kernel
where the target carries one, and the small-tile transpose. Pure functions of a plan and a target.
"""
from __future__ import annotations

import math

from ..ir.view import dim_stride, masked_along
from ..target.cpu_target import CPUTarget
from .heuristic_costs import (SELECTED_ROWS, TILE_SIZES, _itemsize, _largest_divisor, _try,
                              accesses, accumulator_budget, work)
from .buffer_access import buffer_extent
from .plan import Action, AxisKind, KernelPlan, Opt


def _tile_candidates(plan: KernelPlan, table):
    """Global axes worth upcasting: some inner loads ignore them (reused per tile row: read at
    the same index under the same mask; a load padded along the axis differs per row) while
    others depend on them (the work that differs per row). Best first: most shared loads, then
    the smallest buffers read per row (a conv's weights, not a batch of images: a tile's rows
    then stay in cache), then a dense axis: those loads are contiguous along it and not along
    a reduce axis (a packed matmul panel's rows: a tile's broadcasts share cache lines; a conv
    window's columns slide along kx and are not dense), then the longest axis.
    Returns (size, index, dense) per candidate."""
    vector = plan.vector_axis
    inner = [view for kind, view, trips in table if kind == "load" and trips > 1]
    reduce = [a.origin for a in plan.axes if a.kind is AxisKind.REDUCE]
    out = []
    for i, axis in enumerate(plan.axes):
        if axis.kind is not AxisKind.GLOBAL or (vector is not None and
                                                axis.origin == vector.origin):
            continue
        strides = [dim_stride(v, axis.origin) for v in inner]
        shared = sum(1 for v, s in zip(inner, strides)
                     if s == 0 and not masked_along(v, axis.origin))
        varying = sum(buffer_extent(v) for v, s in zip(inner, strides) if s != 0)
        dense = all(s == 0 or (s == 1 and not any(dim_stride(v, r) == 1 for r in reduce))
                    for v, s in zip(inner, strides))
        if shared and varying:
            out.append((shared, -varying, dense, axis.size, i))
    return [(size, i, dense) for _, _, dense, size, i in sorted(out, reverse=True)]


def _vector_outer(plan: KernelPlan) -> int | None:
    """The global loop over the vector axis's other lanes (where a second vector per tile row
    comes from), if the vector runs along outputs."""
    vector = plan.vector_axis
    if vector is None or vector.reduce:
        return None
    return next((i for i, a in enumerate(plan.axes) if a.origin == vector.origin
                 and a.kind is AxisKind.GLOBAL), None)


def _dense_vectors(plan: KernelPlan) -> bool:
    """Every load inside the reduce that moves with the vector lanes reads them contiguously:
    a second vector per row costs one more vector load (not a gather) and each broadcast of the
    rows then feeds two accumulators."""
    origin = plan.vector_axis.origin
    strides = [dim_stride(view, origin) for kind, view, trips in accesses(plan)
               if kind == "load" and trips > 1]
    return any(s == 1 for s in strides) and all(s in (0, 1) for s in strides)


def _selected_rows(plan: KernelPlan, axis: int) -> bool:
    """Whether each tile row along `axis` reads a broadcast masked along the vector lanes: a
    conv's input gradient pads the product of the output gradient and the weights, so each
    weight broadcast is selected lane by lane (one more vector op per row and vector, which
    vector loads of the other tile axis, masked by the load itself, do not cost). Such an axis
    takes at most SELECTED_ROWS rows and leaves the budget to the other (conv2's input gradient,
    AMD Zen 4: 8 x 2 rows 116 ms, 4 x 4 rows 92 ms at 16 lanes; 8 x 1 98 ms, 4 x 2 88 ms at 8)."""
    vector = plan.vector_axis
    if vector is None:
        return False
    origin = plan.axes[axis].origin
    return any(dim_stride(view, origin) != 0 and dim_stride(view, vector.origin) == 0 and
               masked_along(view, vector.origin)
               for kind, view, trips in accesses(plan) if kind == "load" and trips > 1)


def _two_vectors_first(plan: KernelPlan, outer_size: int, budget: int) -> bool:
    """Take a second vector per tile row before the rows when its loads are dense and unpadded
    (padded lanes measured slower: conv2's input gradient at 2 x 16 lanes of 24) and either the
    row is exactly two vectors (a 16-float panel of 8 lanes) or the budget cannot hold the
    biggest row tile with two vectors (16 AVX2 registers: 4 rows x 2 vectors read 6 values per
    8 FMAs, 8 rows x 1 vector 9)."""
    if outer_size % 2 or plan.vector_axis.origin in plan.padded or not _dense_vectors(plan):
        return False
    return outer_size == 2 or budget < 2 * TILE_SIZES[0]


def measured_tile(plan: KernelPlan, target: CPUTarget) -> KernelPlan | None:
    """The target's measured micro-kernel (rows x vectors of its lanes) on a kernel whose vector
    runs along dense outputs (a matmul's columns): the vectors per row, then the rows on the best
    tile axis, each the largest amount at most the measured one that divides the axis. None
    where the kernel is not of that kind (the model plans it): a conv (several reduce axes) or
    a packed matmul whose panel is one vector (no second vector per row to choose)."""
    outer = _vector_outer(plan)
    if not target.micro_kernel or outer is None or plan.n_reduce != 1 or \
            not _dense_vectors(plan) or plan.vector_axis.origin in plan.padded:
        return None
    rows, vectors = target.micro_kernel[:2]
    size = plan.axes[outer].size
    amount = _largest_divisor(size, vectors)
    if amount > 1:  # a packed panel of exactly two vectors is upcast whole
        plan = _try(plan, Opt(Action.UPCAST, outer, amount))
    candidates = _tile_candidates(plan, accesses(plan))
    if not candidates:
        return None
    nearest = _broadcast_rows(plan, candidates)
    # fewer vectors per row than measured (a panel narrower than the tile): more rows instead,
    # so the tile keeps the measured number of accumulators (FMA latency x pipes needs them)
    rows = min(rows * vectors // max(1, amount), accumulator_budget(target) // max(1, amount))
    size, axis, _ = nearest or candidates[0]
    amount = _largest_divisor(size, rows)
    return _try(plan, Opt(Action.UPCAST, axis, amount)) if amount > 1 else plan


def _broadcast_rows(plan: KernelPlan, candidates: list):
    """The candidate whose rows a micro-kernel wants: each row reads one broadcast (loads that
    depend on the axis do not move with the vector lanes), the rows nearest in memory first.
    A packed matmul (m/p, n/p, p, p, k) has two axes of rows (panels of rows, and the rows in
    one panel, next to each other) and one of column panels, whose every row costs a vector load
    per accumulator. The ranking of _tile_candidates puts the column panels first where the
    matrix is taller than wide (fewer bytes of columns): 2048x512 @ 512x1024 under
    CPU_TARGET=avx2, AMD Zen 4: 4 column panels x 2 vectors 18.1 ms, 4 rows x 2 vectors 11.3."""
    vector = plan.vector_axis.origin
    inner = [view for kind, view, trips in accesses(plan) if kind == "load" and trips > 1]
    best = None
    for size, i, dense in candidates:
        strides = [dim_stride(v, plan.axes[i].origin) for v in inner]
        varying = [v for v, s in zip(inner, strides) if s != 0]
        if all(dim_stride(v, vector) == 0 for v in varying):
            nearest = min(math.inf if s is None else abs(s) for s in strides if s != 0)
            if best is None or nearest < best[0]:
                best = (nearest, (size, i, dense))
    return best and best[1]


def _pick(plan: KernelPlan, candidates: list, budget: int):
    """(axis, amount, dense) of the first candidate (in order) that takes the biggest tile
    amount dividing it within `budget`; None if none does."""
    return next(((axis, amount, dense) for size, axis, dense in candidates
                 for amount in TILE_SIZES
                 if size % amount == 0 and amount <= budget and
                 (size > amount or size <= TILE_SIZES[0]) and
                 (amount <= SELECTED_ROWS or not _selected_rows(plan, axis))), None)


def _spread_rows(plan: KernelPlan, budget: int, second_vector: bool) -> bool:
    """Whether a tile of one vector per row should split its rows over two axes: its first
    axis would take rows enough to leave no second axis room for two (8 x 1 on 12 AVX2
    accumulators), and another axis could take two. R x 1 rows read R + 1 values per R FMAs,
    R/2 x 2 read R/2 + 2 (conv3's forward under CPU_TARGET=avx2, one thread, AMD Zen 4: 8 x 1
    14.1 ms, 4 x 2 12.2 ms). A second vector per row (a packed panel) is a second axis
    already."""
    if second_vector:
        return False
    candidates = _tile_candidates(plan, accesses(plan))
    first = _pick(plan, candidates, budget)
    if first is None or budget // first[1] >= 2:
        return False
    origin = plan.axes[first[0]].origin
    return any(plan.axes[axis].origin != origin and size % 2 == 0
               for size, axis, _ in candidates)


def register_tile(plan: KernelPlan, target: CPUTarget) -> KernelPlan:
    if not plan.has_reduce:
        return plan
    measured = measured_tile(plan, target)
    if measured is not None:
        return measured
    budget = accumulator_budget(target)
    outer = _vector_outer(plan)
    second_vector = outer is not None and plan.axes[outer].size % 2 == 0 and \
        plan.axes[outer].size >= 4  # the rule at the end takes one where the budget allows
    if outer is not None and _two_vectors_first(plan, plan.axes[outer].size, budget):
        plan = _try(plan, Opt(Action.UPCAST, outer, 2))
        budget //= 2
        second_vector = True
    spread = _spread_rows(plan, budget, second_vector)
    tiled: set = set()
    dense_tiled: set = set()
    for _ in range(2):
        # a second tile axis of another dimension when there is one (two dims share loads
        # both ways; one dim tiled twice spreads the tile's rows over more memory), except
        # after a dense axis, whose rows share cache lines (unless the rows are spread); a
        # short axis (a 5x5 kernel's) may be tiled whole
        def rank(candidate):  # dense tiled axes, then untiled ones, then the rest
            origin = plan.axes[candidate[1]].origin
            return 0 if origin in dense_tiled and not spread else \
                1 if origin not in tiled else 2
        candidates = sorted(_tile_candidates(plan, accesses(plan)), key=rank)  # stable
        choice = _pick(plan, candidates, budget // 2 if spread and not tiled else budget)
        if choice is None:
            break
        axis, amount, dense = choice
        tiled.add(plan.axes[axis].origin)
        if dense:
            dense_tiled.add(plan.axes[axis].origin)
        plan = _try(plan, Opt(Action.UPCAST, axis, amount))
        budget //= amount
    outer = _vector_outer(plan)
    if outer is not None and budget >= 2:  # a second vector per row
        if plan.axes[outer].size % 2 == 0 and plan.axes[outer].size >= 4:
            plan = _try(plan, Opt(Action.UPCAST, outer, 2))
    return plan


def transpose_tile(plan: KernelPlan, target: CPUTarget) -> KernelPlan:
    """A copy that transposes (no reduce, no vector: the store's contiguous axis is a gather for
    a load) walks its innermost loop across the load's rows, one element of each, and those
    rows, a power-of-two stride apart, share L1 sets. Upcasting the load's contiguous axis by a
    vector's lanes reads a run of each row per step instead (a 1024x1024 matmul's rows panel
    copy: 1.45 -> 0.49 ms on Zen 3)."""
    if plan.has_reduce or plan.vector_axis is not None or \
            work(plan) * _itemsize(plan) <= target.l1d_bytes:  # a copy L1d holds: no gain
        return plan
    table = accesses(plan)
    stores = [view for kind, view, _ in table if kind == "store"]
    loads = [view for kind, view, _ in table if kind == "load"]
    lanes = target.lanes_of(_itemsize(plan))
    last = len(plan.axes) - 1
    for i, axis in enumerate(plan.axes):
        if axis.kind is not AxisKind.GLOBAL or i == last:
            continue
        if any(dim_stride(v, axis.origin) == 1 for v in loads) and \
                all(dim_stride(v, axis.origin) > 1 for v in stores):
            amount = _largest_divisor(axis.size, lanes)
            return _try(plan, Opt(Action.UPCAST, i, amount)) if amount > 1 else plan
    return plan
