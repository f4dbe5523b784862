"""The readable heuristic that picks optimization actions for a CPU kernel plan.

`choose_opts(plan, actions, target)` -> list[Opt], for a `CPUTarget` (target/cpu_target.py:
vector width, registers, caches, cores). In order:
1. vectorize: pick the axis (and width, at most the target's lanes) where vector lanes save the
   most memory operations — loads inside the reduce loop count once per trip, stores once; a
   lane-contiguous (stride 1) or lane-invariant (stride 0) access is one vector op, anything else
   a gather of scalars;
2. register-tile: upcast up to two more global axes whose loads are shared by the other
   (a matmul's rows and columns, a conv's channels), so each load feeds several accumulators;
   the accumulators fit the target's vector registers; where the target carries a measured
   micro-kernel (engine/calibrate.py: rows x vectors timed on this CPU) a matmul-like kernel takes
   that tile instead of the model's;
3. order the reduce loops: the one whose step moves the tile's loads to the fewest new cache
   lines innermost (a conv's taps or its channels, by which operand the vector runs along);
   then unroll a long inner reduce loop when the tile is small;
4. block a long reduce whose operands overflow the cache: each pass adds a block of the reduce to
   the output, so one block of the operands stays in L2 while every output tile reads it;
5. thread the outermost global loop over the target's cores when there is enough work.
Each rule only uses actions the device supports. BEAM search (beam.py) replaces this when on.
The cost model and the target-derived sizes are heuristic_costs.py, step 2 heuristic_tile.py.
No constant here belongs to one CPU: each is a ratio, a count of operations, or read from the target.
"""
from __future__ import annotations

from ..ir.view import dim_stride, masked_along
from ..target.cpu_target import CPUTarget
from .heuristic_costs import (BLOCK_SIZES, PADDING_COST, WHOLE_REDUCE, WHOLE_REDUCE_LINES,
                              _alu_work, _cost_per_element, _itemsize, _try, _vector_choices,
                              accesses, block_sizes, cache_bytes, thread_min_work, work)
from .heuristic_tile import register_tile, transpose_tile
from .buffer_access import buffer_extent
from .plan import Action, AxisKind, KernelPlan, Opt

def vectorize(plan: KernelPlan, target: CPUTarget) -> KernelPlan:
    """Vectorize the axis and width with the lowest estimated cost per element."""
    table = accesses(plan)
    alu = _alu_work(plan, table)
    best = (_cost_per_element(plan, 0, 1, table, alu), None, 1)
    for i, axis, width, lanes_used in _vector_choices(plan, target):
        if lanes_used < 1:
            lanes_used /= PADDING_COST
        cost = _cost_per_element(plan, axis.origin, width, table, alu) / lanes_used
        if axis.kind is AxisKind.REDUCE:
            cost *= 1.05  # a horizontal sum at the end: prefer output lanes on a tie
        if cost < best[0]:
            best = (cost, i, width)
    return plan if best[1] is None else _try(plan, Opt(Action.VECTORIZE, best[1], best[2]))


def _lines_per_step(plan: KernelPlan, origin: int, line_bytes: int) -> float:
    """New cache lines the tile's loads inside the reduce touch when reduce dimension `origin`
    steps by one: each copy of a load in the tile (one per row of a tile axis it depends on,
    one per lane where it gathers) moves by its stride, at most one line."""
    vector = plan.vector_axis
    total = 0.0
    for node in plan.loads:
        view = node.view
        stride = dim_stride(view, origin)
        if stride == 0:
            continue
        copies = 1
        for axis in plan.axes:
            if axis.kind is AxisKind.UPCAST and (dim_stride(view, axis.origin) != 0 or
                                                 masked_along(view, axis.origin)):
                copies *= axis.size
        if vector is not None and dim_stride(view, vector.origin) not in (0, 1):
            copies *= vector.size
        moved = 1.0 if stride is None else abs(stride) * node.dtype.itemsize / line_bytes
        total += copies * min(1.0, moved)
    return total


def order_reduce(plan: KernelPlan, target: CPUTarget) -> KernelPlan:
    """SWAP reduce loops so that the one whose step touches the fewest new cache lines runs
    innermost, the most outermost (ties keep their order). A conv's input gradient sums over
    channels and window taps: vectorized along the input's columns (the output gradient
    loaded as vectors, weights broadcast per channel row) the channel loop goes inside, where
    the weights are consecutive; vectorized along channels (weights relaid channel-last, the
    gradient broadcast per image row) the taps go inside, where the gradient's values are
    neighbours. Single-threaded, AMD Zen 4: conv3's input gradient under CPU_TARGET=avx2
    34.7 -> 23.8 ms with the taps inside, conv2's 243 -> 178 ms with the channels inside."""
    reduce = plan.axes_of(AxisKind.REDUCE)
    if len(reduce) < 2:
        return plan
    cost = {i: _lines_per_step(plan, plan.axes[i].origin, target.cache_line_bytes)
            for i in reduce}
    wanted = sorted(reduce, key=lambda i: -cost[i])  # stable: ties keep their order
    order = list(reduce)  # order[k]: the axis (by its first position) at position reduce[k]
    for k, axis in enumerate(wanted):
        j = order.index(axis)
        if j != k:
            plan = _try(plan, Opt(Action.SWAP, reduce[k], reduce[j]))
            order[k], order[j] = order[j], order[k]
    return plan


def unroll(plan: KernelPlan) -> KernelPlan:
    reduce_axes = plan.axes_of(AxisKind.REDUCE)
    if not reduce_axes:
        return plan
    tiles = 1
    for axis in plan.axes:
        if axis.kind in (AxisKind.UPCAST, AxisKind.UNROLL):
            tiles *= axis.size
    if tiles >= 8:
        return plan  # the register tile already gives enough independent work
    last = reduce_axes[-1]
    size = plan.axes[last].size
    for amount in (4, 2):
        if size % amount == 0 and size >= 4 * amount:
            return _try(plan, Opt(Action.UNROLL, last, amount))
    return plan


def block_depths(plan: KernelPlan, first: int, target: CPUTarget) -> list[int]:
    """Depths a BLOCK of reduce axis `first` may take, deepest first. Where it is the only
    reduce loop (a matmul's k), block_sizes(target): each block's accumulators are loaded and
    stored once, so a block stays deep. Where inner reduce loops run many trips per step of it
    (a conv weight gradient: one whole image per step of the batch), one step already reads a
    lot: every divisor from 2 whose block still runs block_sizes' shallowest depth of inner
    trips."""
    axis = plan.axes[first]
    inner = 1
    for other in plan.axes_of(AxisKind.REDUCE):
        if other != first:
            inner *= plan.axes[other].size
    if inner == 1:
        return [a for a in block_sizes(target, _itemsize(plan))
                if axis.size % a == 0 and axis.size >= 2 * a]
    return [a for a in range(axis.size // 2, 1, -1)
            if axis.size % a == 0 and a * inner >= BLOCK_SIZES[-1]]


def block(plan: KernelPlan, target: CPUTarget) -> KernelPlan:
    """BLOCK the outermost reduce loop of a register-tiled kernel whose operands overflow the
    cache. The operands every row of output tiles reads again (those the outermost output loop
    does not index: a matmul's right-hand matrix) should keep one block in cache_bytes(target);
    where the shallowest block is still too big, a global BLOCK narrows the columns it covers.
    A matmul's reduce (its only one) of at most WHOLE_REDUCE steps is not blocked where a column
    block of at least WHOLE_REDUCE_LINES cache lines a row holds the whole depth: every reduce
    block after the first reads back the partial sums in the output, a tile's rows a whole row
    apart, and those loads miss at the end of each tile. 1024^3 under CPU_TARGET=avx2 (64
    columns, no reduce block, instead of 512 columns x 128 deep), AMD EPYC Zen 4, TinyJit, 15
    interleaved runs: 12.25 / 12.05 -> 11.60 / 11.39 ms (numpy 11.4); natively (128 columns)
    12.16 / 11.83 -> 11.80 / 11.40; 1024 x 1024 @ 1024 x 4096 avx2 57.3 -> 46.1 ms. At a depth of
    2048 it lost: 2048^3 avx2 (32 columns) 94 -> 116 ms, natively (64 columns) 84 -> 87."""
    cache = cache_bytes(target)
    reduce_axes, globals_ = plan.axes_of(AxisKind.REDUCE), plan.axes_of(AxisKind.GLOBAL)
    if not reduce_axes or not globals_ or not plan.axes_of(AxisKind.UPCAST):
        return plan
    first, rows = reduce_axes[0], plan.axes[globals_[0]]
    axis = plan.axes[first]
    inner = [(n.view, n.dtype.itemsize) for n in plan.loads if dim_stride(n.view, axis.origin) != 0]
    if sum(buffer_extent(v) * size for v, size in inner) <= cache:
        return plan
    shared = sum(buffer_extent(v) * size for v, size in inner if dim_stride(v, rows.origin) == 0)
    per_step = shared / plan.shape[axis.origin] * axis.mult  # shared bytes one trip reads
    amounts = block_depths(plan, first, target)
    if not amounts or not shared or (shared <= cache and len(reduce_axes) > 1):
        return plan  # (a conv whose shared operand, its weights, fits whole: nothing to keep)
    if len(reduce_axes) == 1 and axis.size <= WHOLE_REDUCE:
        share = cache / (per_step * axis.size)
        if share >= 1:  # all of the shared operand fits: nothing to block
            return plan
        columns = _column_block(plan, globals_, share)
        if columns and per_step * columns[1] / plan.axes[columns[0]].size >= \
                WHOLE_REDUCE_LINES * target.cache_line_bytes:
            return _try(plan, Opt(Action.BLOCK, *columns))
    amount = next((a for a in amounts if per_step * a <= cache), min(amounts))
    if per_step * amount > cache:  # narrow the columns of a block
        columns = _column_block(plan, globals_, cache / (per_step * amount))
        if columns:
            plan = _try(plan, Opt(Action.BLOCK, *columns))
    reduce_axes = plan.axes_of(AxisKind.REDUCE)
    return _try(plan, Opt(Action.BLOCK, reduce_axes[0], amount))


def _column_block(plan: KernelPlan, globals_: list, share: float) -> tuple[int, int] | None:
    """(axis, width) of the widest global BLOCK that keeps `share` of the columns the first
    global loop after the rows walks (a width of at least 2 dividing it); None where none does."""
    for g in globals_[1:]:
        size = plan.axes[g].size
        width = max((w for w in range(2, size) if size % w == 0 and w <= share * size),
                    default=0)
        if width:
            return g, width
    return None


def thread(plan: KernelPlan, target: CPUTarget, can_swap: bool) -> KernelPlan:
    """THREAD the outermost global loop over the target's cores (SWAP a long enough loop
    outward first when it is shorter than the number of cores)."""
    threads = target.cores
    if threads < 2 or work(plan) < thread_min_work(target):
        return plan
    globals_ = plan.axes_of(AxisKind.GLOBAL)
    if not globals_:
        return plan
    first = globals_[0]
    if plan.axes[first].size < threads:
        bigger = [g for g in globals_ if plan.axes[g].size >= threads]
        if not bigger or not can_swap:
            return plan
        plan = _try(plan, Opt(Action.SWAP, first, bigger[0]))
    return _try(plan, Opt(Action.THREAD, plan.axes_of(AxisKind.GLOBAL)[0], threads))


def _complete(plan: KernelPlan, actions, target: CPUTarget) -> KernelPlan:
    """A vectorized (or not) plan with its register tile and unrolling."""
    if Action.UPCAST in actions:
        plan = transpose_tile(register_tile(plan, target), target)
    if Action.SWAP in actions:
        plan = order_reduce(plan, target)
    if Action.UNROLL in actions:
        plan = unroll(plan)
    if Action.BLOCK in actions:
        plan = block(plan, target)
    return plan


def candidates(plan: KernelPlan, actions, target: CPUTarget) -> list[KernelPlan]:
    """Complete single-threaded plans, one per choice of vector axis and width (and none), the
    model's favourite first: what a measured choice (codegen/beam.py's tune) times."""
    vectorized = vectorize(plan, target) if Action.VECTORIZE in actions else plan
    first = _complete(vectorized, actions, target)
    out, seen = [first], {tuple(first.opts)}
    options = [plan]
    if Action.VECTORIZE in actions:
        options += [_try(plan, Opt(Action.VECTORIZE, i, width))
                    for i, _, width, _ in _vector_choices(plan, target)]
    for option in options:
        complete = _complete(option, actions, target)
        if tuple(complete.opts) not in seen:
            seen.add(tuple(complete.opts))
            out.append(complete)
    return out


def choose_opts(plan: KernelPlan, actions, target: CPUTarget) -> list[Opt]:
    start = len(plan.opts)
    vectorized = vectorize(plan, target) if Action.VECTORIZE in actions else plan
    plan = _complete(vectorized, actions, target)
    if Action.THREAD in actions:
        plan = thread(plan, target, Action.SWAP in actions)
    return plan.opts[start:]
