"""Matmul packing, a graph rewrite that depends on the target, made before the cut: a big 2-D
float matmul whose product its kernel will compute inside the reduce loop (placement.py) gets its
operands copied into panels first, when the device's capabilities (caps.py) declare a panel
width. Called by schedule.schedule(); each copy is explained by a decision.

A matmul is a sum over the last axis of a (m, n, k) product of two broadcasts that share k, as
Tensor.matmul builds it:  SUM_k( x.reshape(m, 1, k) * w.T.reshape(1, n, k) ), or any other
spelling of the same algebra (operands swapped, broadcast through other reshapes and permutes).
Packed, x becomes (m/p, k, p) (p rows side by side per k) and w becomes (n/p, k, p) (p columns
per k), as BLAS libraries do: the kernel's register tile then reads p consecutive floats of each
per step of the reduce, where row-major operands put its rows a whole row apart (a power-of-two
stride that maps them onto the same cache sets). Two copy kernels; the product is still MUL + SUM.
A device whose tile reads few rows (DeviceCaps.pack_rows False: codegen/panels.packs_rows)
copies only the columns when x is a buffer read row-major in rows of at most a page: the kernel
reads x's rows in place, through the same (m/p, k, p) view. `pack_matmuls(placement, caps)`
returns the packed outputs and the copies' decisions; `caps` is the engine's {device:
DeviceCaps} table, whose panel_width says how wide (None: no packing). `rewrite_graph` and
`copy_decision` serve relayout.py too.
"""
from __future__ import annotations

from ..caps import caps_for
from ..ir import node as ir
from ..ir.node import Node
from ..ir.ops import MOVEMENT, Op
from ..ir.view import dim_stride
from ..ir.walk import rebuilt, rewrite
from .fusion import FusionDecision, Reason
from .placement import Placement, operand_chain, view_of_chain

PACK_MIN_SIDE = 128      # pack when every side of the matmul is at least this
PACK_MIN_WORK = 1 << 25  # and M*N*K is at least this (512 x 256 x 256)
# rows read in place are at most a (4 KiB) page long. Rows farther apart lost to the copy under
# CPU_TARGET=avx2 on AMD Zen 4 (TinyJit, in place / copied: 2048^3 1.085, k 2048 1.055, k 4096
# 1.033, k 8192 1.074); a page or shorter gained (1024^3 0.92-1.0, 2048x512 @ 512x1024 0.967)
IN_PLACE_ROW_BYTES = 4096


def matmul_operands(reduce: Node) -> tuple[Node, Node] | None:
    """(x (m, k), w (k, n)) when `reduce` is a matmul: a sum over the last axis of a (m, n, k)
    float product of two operands that share the summed axis k, one broadcast along n (x's
    rows), the other along m (w's columns), in either order; else None."""
    if reduce.op is not Op.REDUCE_SUM or reduce.axes != (2,):
        return None
    product = reduce.src[0]
    if product.op is not Op.MUL or product.ndim != 3 or not product.dtype.is_float:
        return None
    for first, second in (product.src, product.src[::-1]):
        rows, columns = _broadcast_2d(first, 1), _broadcast_2d(second, 0)
        if rows is not None and columns is not None:
            return rows, columns.permute((1, 0))
    return None


def _broadcast_2d(node: Node, axis: int) -> Node | None:
    """The 2-D value (the two other axes, in order) that the 3-D `node` broadcasts along
    `axis`, if it reads one: node[:, 0, :] for axis 1, node[0] for axis 0."""
    m, n, k = node.shape
    shape, flat = ((m, 1, k), (m, k)) if axis == 1 else ((1, n, k), (n, k))
    spelled = _broadcast_source(node, shape)  # the frontend's x.reshape(m, 1, k).expand
    if spelled is not None:
        return spelled.reshape(flat)
    base, chain = operand_chain(node)
    if not chain or any(m.op not in (Op.RESHAPE, Op.PERMUTE, Op.EXPAND) for m in chain):
        return None  # a pad or shrink may mask the broadcast axis: not a plain broadcast
    stack = view_of_chain(base, chain)
    if dim_stride(stack, axis) != 0 or not dim_stride(stack, 2):
        return None
    bounds = tuple((0, 1) if d == axis else (0, size) for d, size in enumerate(node.shape))
    return node.shrink(bounds).reshape(flat)


def _broadcast_source(node: Node, shape: tuple) -> Node | None:
    """The node under EXPAND(RESHAPE(node) to `shape`), if `node` is read that way."""
    if node.op is not Op.EXPAND or node.src[0].op is not Op.RESHAPE or \
            node.src[0].shape != shape:
        return None
    return node.src[0].src[0]


def big_enough(reduce: Node) -> bool:
    """Whether `reduce` does the work packing needs: a sum over a static product of at least
    PACK_MIN_WORK multiply-adds (schedule() skips the rewrite where no reduce does)."""
    shape = reduce.src[0].shape
    return reduce.op is Op.REDUCE_SUM and all(isinstance(s, int) for s in shape) and \
        ir.prod(shape) >= PACK_MIN_WORK


def panel_width(reduce: Node, panel: int | None) -> int | None:
    """`panel` if this matmul is big enough, and its sides divide evenly, to pack."""
    if not panel or not big_enough(reduce):  # symbolic sizes too: panels need sizes
        return None
    m, n, k = reduce.src[0].shape
    if m % panel or n % panel or min(m, n, k) < PACK_MIN_SIDE:
        return None
    return panel


def packed_product(x: Node, w: Node, panel: int, shape: tuple,
                   copy_rows: bool = True) -> tuple[Node, Node, Node]:
    """(x @ w summed over panels in `shape` (the matmul reduce's), the rows' panel copy (x's
    (m/p, k, p) view where not `copy_rows`), the columns' panel copy)."""
    (m, k), n = x.shape, w.shape[1]
    rows = x.reshape((m // panel, panel, k)).permute((0, 2, 1))
    if copy_rows:
        rows = ir.contiguous(rows)
    columns = ir.contiguous(w.reshape((k, n // panel, panel)).permute((1, 0, 2)))
    full = (m // panel, n // panel, k, panel, panel)
    product = ir.alu(Op.MUL, rows.reshape((m // panel, 1, k, panel, 1)).expand(full),
                     columns.reshape((1, n // panel, k, 1, panel)).expand(full))
    summed = product.sum((2,)).reshape((m // panel, n // panel, panel, panel))
    return summed.permute((0, 2, 1, 3)).reshape(shape), rows, columns


def find_packable(placement: Placement, caps: dict) -> dict:
    """{matmul reduce: (x, w, panel, pack_rows)} for each matmul whose product its kernel
    computes inside the reduce loop and that the panel width of its device packs; pack_rows:
    whether the device copies the rows operand whatever it is."""
    found = {}
    for node in placement.reduces():
        operands = matmul_operands(node)
        if operands is None or not placement.fused_into_reduce(node.src[0], node):
            continue
        declared = caps_for(caps, node.device)
        panel = panel_width(node, declared.panel_width)
        if panel:
            found[node] = (*operands, panel, declared.pack_rows)
    return found


def _row_major_buffer(x: Node, placement: Placement) -> bool:
    """`x` (m, k) reads a buffer (a realized value, or one cut for itself) exactly as it is laid
    out, in rows of at most IN_PLACE_ROW_BYTES: read in place, its rows are whole rows apart
    and each row's k values consecutive. A transposed or padded operand, one computed inside
    the kernel (recomputed for every column panel), or one of longer rows is copied."""
    if x.shape[1] * x.dtype.itemsize > IN_PLACE_ROW_BYTES:
        return False
    base, chain = operand_chain(x)
    return placement.has_buffer(base, chain, x) and view_of_chain(base, chain).is_contiguous


def pack_matmuls(placement: Placement, caps: dict) -> tuple:
    """(the outputs with every packable matmul packed, {panel copy: the decision that explains
    it}); the outputs as they were and {} when there is none. A graph rewrite before the cut."""
    found = find_packable(placement, caps)
    if not found:
        return placement.outputs, {}
    decisions = {}  # panel copy -> its decision

    def pack(reduce: Node, rewritten: Node) -> Node:
        x, w = matmul_operands(rewritten)  # a matmul of a matmul packs the inner one's result
        panel, pack_rows = found[reduce][2:]
        copy_rows = pack_rows or not _row_major_buffer(x, placement)
        summed, rows, columns = packed_product(x, w, panel, rewritten.shape, copy_rows)
        if copy_rows:
            decisions[rows] = _decision(rewritten, x, rows, "rows", panel)
        decisions[columns] = _decision(rewritten, w, columns, "columns", panel, copy_rows)
        return summed
    return rewrite_graph(placement, {reduce: pack for reduce in found}), decisions


def copy_decision(operand: Node, reduce: Node, reason: Reason, detail: str,
                  **evidence) -> FusionDecision:
    """Why a rewrite copies `operand` before the kernel of `reduce`."""
    return FusionDecision(operand, reduce, False, reason, {
        "producer_op": operand.op.name, "producer_shape": operand.shape,
        "consumer_op": reduce.op.name, "consumer_shape": reduce.shape,
        "rule": reason.value, "detail": detail, **evidence})


def _decision(reduce: Node, operand: Node, copy: Node, side: str, panel: int,
              rows_copied: bool = True) -> FusionDecision:
    m, n, k = reduce.src[0].shape
    detail = (f"{m}x{k} @ {k}x{n}: the {side} operand is copied into {panel}-wide panels "
              f"{list(copy.shape)}; the {reduce.device} renderer declares matmul_panel={panel}")
    if not rows_copied:
        detail += ("; the rows operand is read in place (its register tile reads few rows: "
                   "matmul_pack_rows=False)")
    return copy_decision(operand, reduce, Reason.PACKED_MATMUL, detail, panel=panel)


def rewrite_graph(placement: Placement, replace: dict) -> list[Node]:
    """The placement's outputs with each node of `replace` swapped for what its function,
    `fn(node, node over its rewritten sources)`, builds: the replacement of a node inside
    another's operands is then the one the other reads (a packed matmul of a packed matmul, a
    relaid weight gradient of a relaid input gradient). A movement that read a replaced node is
    rebuilt onto the replacement's own movements, so reshapes of reshapes fold, as the
    frontend's do; everything else keeps its structure, so the nodes its readers share stay
    shared; realized nodes stay."""
    memo = {n: n for n in placement.graph if n in placement.realized}

    def swap(node: Node, sources: list) -> Node:
        if node in replace:
            return replace[node](node, rebuilt(node, sources))
        if node.op in MOVEMENT and node.src[0] in replace:
            return ir.movement(node.op, sources[0], node.arg)
        return rebuilt(node, sources)
    return rewrite(placement.outputs, swap, memo)
