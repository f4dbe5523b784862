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
No constant here belongs to one CPU: each is a ratio, a count of operations, or read from the target.
"""
from __future__ import annotations

import math

from ..ir.ops import Op
from ..ir.view import dim_stride, masked_along
from ..target.cpu_target import CPUTarget
from .linearize import buffer_extent
from .plan import Action, AxisKind, KernelPlan, Opt, OptError

MIN_VECTOR_BITS = 128       # narrowest vector tried (4 float32 lanes), the widest is the target's
TILE_SIZES = (8, 6, 5, 4, 3, 2)  # register-tile amounts, biggest first
SELECTED_ROWS = 4           # most rows of a tile axis whose rows are masked broadcasts (below)
PADDING_COST = 1.1          # masked loads and stores of a padded vector axis: an exact width wins ties
BLOCK_SIZES = (512, 256, 128)  # reduce-block depths, kept where a tile's slab fits L1 (block_sizes)
WHOLE_REDUCE = 1024         # a matmul reduce at most this deep is left whole where its columns narrow
WHOLE_REDUCE_LINES = 4      # enough for it (block): the narrowed columns span 4 cache lines a row
GATHER_COST = 3.0           # per element: a scalar load, its address and a lane insert (measured
                            # on conv weight gradients: 16-lane gathers lost to 4-lane vectors)
THREAD_MIN_VECTORS = 1 << 12  # vector iterations below which a parallel region costs more than
                              # it saves (its start and join take microseconds)


def vector_widths(target: CPUTarget, itemsize: int = 4) -> tuple[int, ...]:
    """Lanes to try: one full vector of the target, then halves down to a 128-bit vector. Wider
    values would be split by the compiler into several registers (and spill)."""
    lanes, narrowest = target.lanes_of(itemsize), max(2, MIN_VECTOR_BITS // (8 * itemsize))
    widths = [lanes]
    while widths[-1] // 2 >= narrowest:
        widths.append(widths[-1] // 2)
    return tuple(widths)


def accumulator_budget(target: CPUTarget) -> int:
    """Vector registers a register tile may keep as accumulators: three quarters of them, the
    rest hold the loaded operands and broadcasts (AVX-512 and NEON: 24 of 32; AVX2: 12 of 16)."""
    return target.vector_registers * 3 // 4


def cache_bytes(target: CPUTarget) -> int:
    """What a reduce block's shared operand may occupy: half the L2 of a core."""
    return target.l2_bytes // 2


def block_sizes(target: CPUTarget, itemsize: int = 4) -> tuple[int, ...]:
    """Reduce-block depths whose slab of a tile's operands (a vector's width of each per step of
    the reduce) fits L1d, deepest first; the shallowest is always allowed."""
    per_step = 2 * target.lanes_of(itemsize) * itemsize
    fitting = tuple(d for d in BLOCK_SIZES if d * per_step <= target.l1d_bytes)
    fitting = fitting or BLOCK_SIZES[-1:]
    measured = target.micro_kernel[2:]  # the measured depth first, where it fits L1d
    if measured and 0 < measured[0] and measured[0] * per_step <= target.l1d_bytes:
        fitting = measured + tuple(d for d in fitting if d != measured[0])
    return fitting


def thread_min_work(target: CPUTarget) -> int:
    """Loop iterations (elements) below which threads cost more than they save."""
    return THREAD_MIN_VECTORS * target.lanes_of(4)


def work(plan: KernelPlan) -> int:
    total = 1
    for axis in plan.axes:
        total *= axis.size
    return total


def accesses(plan: KernelPlan) -> list[tuple[str, object, int]]:
    """(kind, view, trips) per LOAD/STORE: trips = how often it runs per output element."""
    reduce = plan.reduce_node
    inner = set(reduce.src[0].toposort()) if reduce is not None else set()
    trips = 1
    for dim in range(len(plan.shape) - plan.n_reduce, len(plan.shape)):
        trips *= plan.shape[dim]
    out = []
    for node in plan.ast.toposort():
        if node.op is Op.LOAD:
            out.append(("load", node.view, trips if node in inner else 1))
        elif node.op is Op.STORE:
            out.append(("store", node.view, 1))
    return out


def _cost_per_element(plan: KernelPlan, dim: int, width: int, table, alu_work: float) -> float:
    """Estimated operations per output element with `width` lanes along `dim`: a contiguous or
    lane-invariant access is one vector operation for `width` elements, any other access (a
    gather) one operation per element; ALU work is shared by the lanes."""
    cost = alu_work / width
    for _, view, trips in table:
        stride = dim_stride(view, dim) if width > 1 else 0
        cost += trips * (1 / width if stride in (0, 1) else GATHER_COST)
    return cost


def _alu_work(plan: KernelPlan, table) -> float:
    reduce = plan.reduce_node
    trips = max((t for _, _, t in table), default=1)
    inner = set(reduce.src[0].toposort()) if reduce is not None else set()
    work = 0.0
    for node in plan.ast.toposort():
        if node.op not in (Op.LOAD, Op.STORE, Op.CONST, Op.VALID, Op.SINK):
            work += trips if node in inner else 1
    return work


def _try(plan: KernelPlan, opt: Opt) -> KernelPlan:
    try:
        return plan.apply(opt)
    except OptError:
        return plan


def _itemsize(plan: KernelPlan) -> int:
    """Bytes of the widest element the kernel loads or stores (at least 4: narrower types are
    computed in 32-bit lanes), which sets how many lanes one vector holds."""
    sizes = [n.dtype.itemsize for n in plan.ast.toposort() if n.op in (Op.LOAD, Op.STORE)]
    return min(8, max([4] + sizes))


def _vector_choices(plan: KernelPlan, target: CPUTarget):
    """(axis index, axis, width, share of lanes doing useful work) for every allowed VECTORIZE.
    Past the end of an axis the lanes are masked off: allowed only on a whole, unsplit global
    axis at least half the width (masked reduce lanes measured slower)."""
    widths = vector_widths(target, _itemsize(plan))
    for i, axis in enumerate(plan.axes):
        if axis.kind not in (AxisKind.GLOBAL, AxisKind.REDUCE):
            continue
        for width in widths:
            if not axis.size % width:
                yield i, axis, width, 1.0
            elif axis.size >= width // 2 and axis.size == plan.shape[axis.origin] and \
                    axis.kind is not AxisKind.REDUCE:
                yield i, axis, width, axis.size / (-(-axis.size // width) * width)


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


def _largest_divisor(size: int, at_most: int) -> int:
    return next(a for a in range(min(size, at_most), 0, -1) if size % a == 0)


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
