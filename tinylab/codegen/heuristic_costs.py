"""The CPU heuristic's cost model (heuristic.py): sizes read from the CPUTarget (vector widths,
accumulator registers, cache and block sizes, thread threshold), the kernel's accesses and work,
and the estimated cost per element of a vector choice. Pure functions of a plan and a target.
"""
from __future__ import annotations

from ..ir.ops import Op
from ..ir.view import dim_stride
from ..target.cpu_target import CPUTarget
from .plan import AxisKind, KernelPlan, Opt, OptError

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


def _largest_divisor(size: int, at_most: int) -> int:
    return next(a for a in range(min(size, at_most), 0, -1) if size % a == 0)
