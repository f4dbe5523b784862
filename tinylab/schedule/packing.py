"""Matmul packing, a rewrite that depends on the target: after the device-free schedule, a kernel
whose reduce is a big 2-D float matmul gets its operands copied into panels first, when the
device's renderer declares a panel width. Called by schedule.schedule(); recorded as decisions.

A matmul as Tensor.matmul builds it is  SUM_k( x.reshape(m, 1, k) * w.T.reshape(1, n, k) ).
Packed, x becomes (m/p, k, p) (p rows side by side per k) and w becomes (n/p, k, p) (p columns
per k), as BLAS libraries do: the kernel's register tile then reads p consecutive floats of each
per step of the reduce, where row-major operands put its rows a whole row apart (a power-of-two
stride that maps them onto the same cache sets). Two copy kernels; the product is still MUL + SUM.
`pack_matmuls(schedule, panel_of, reschedule)` returns the packed schedule (or the same one);
`panel_of(device)` is the panel width the device's renderer declares (None: no packing).
"""
from __future__ import annotations

from typing import Callable

from ..ir import node as ir
from ..ir.node import Node
from ..ir.ops import MOVEMENT, Op
from .fusion import FusionDecision, Reason
from .graph import graph_order

PACK_MIN_SIDE = 128      # pack when every side of the matmul is at least this
PACK_MIN_WORK = 1 << 25  # and M*N*K is at least this (512 x 256 x 256)


def matmul_operands(reduce: Node) -> tuple[Node, Node] | None:
    """(x (m, k), w (k, n)) when `reduce` sums the last axis of a (m, n, k) float product of
    x.reshape(m, 1, k) and w.T.reshape(1, n, k), both broadcast; else None."""
    if reduce.op is not Op.REDUCE_SUM or reduce.axes != (2,):
        return None
    product = reduce.src[0]
    if product.op is not Op.MUL or product.ndim != 3 or not product.dtype.is_float:
        return None
    m, n, k = product.shape
    rows, columns = (_broadcast_source(s, shape) for s, shape in zip(product.src,
                                                                      ((m, 1, k), (1, n, k))))
    if rows is None or columns is None:
        return None
    return rows.reshape((m, k)), columns.reshape((n, k)).permute((1, 0))


def _broadcast_source(node: Node, shape: tuple) -> Node | None:
    """The node under EXPAND(RESHAPE(node) to `shape`), if `node` is read that way."""
    if node.op is not Op.EXPAND or node.src[0].op is not Op.RESHAPE or \
            node.src[0].shape != shape:
        return None
    return node.src[0].src[0]


def panel_width(reduce: Node, panel: int | None) -> int | None:
    """`panel` if this matmul is big enough, and its sides divide evenly, to pack."""
    m, n, k = reduce.src[0].shape
    if any(not isinstance(side, int) for side in (m, n, k)):  # symbolic: panels need sizes
        return None
    if not panel or m % panel or n % panel or min(m, n, k) < PACK_MIN_SIDE or \
            m * n * k < PACK_MIN_WORK:
        return None
    return panel


def packed_product(x: Node, w: Node, panel: int, shape: tuple) -> tuple[Node, Node, Node]:
    """(x @ w summed over panels in `shape` (the matmul reduce's), the rows' panel copy, the
    columns' panel copy)."""
    (m, k), n = x.shape, w.shape[1]
    rows = ir.contiguous(x.reshape((m // panel, panel, k)).permute((0, 2, 1)))
    columns = ir.contiguous(w.reshape((k, n // panel, panel)).permute((1, 0, 2)))
    full = (m // panel, n // panel, k, panel, panel)
    product = ir.alu(Op.MUL, rows.reshape((m // panel, 1, k, panel, 1)).expand(full),
                     columns.reshape((1, n // panel, k, 1, panel)).expand(full))
    summed = product.sum((2,)).reshape((m // panel, n // panel, panel, panel))
    return summed.permute((0, 2, 1, 3)).reshape(shape), rows, columns


def find_packable(schedule, panel_of: Callable[[str], int | None]) -> dict:
    """{matmul reduce: (x, w, panel)} for each kernel whose reduce is a matmul fused with its
    product that the panel width of its device packs."""
    found = {}
    for item in schedule.kernels:
        fused = set(item.fused)
        for node in item.fused:
            operands = matmul_operands(node) if node.op is Op.REDUCE_SUM else None
            if operands is None or node.src[0] not in fused:
                continue
            panel = panel_width(node, panel_of(node.device))
            if panel:
                found[node] = (*operands, panel)
    return found


def pack_matmuls(schedule, panel_of: Callable[[str], int | None],
                 reschedule: Callable[[list], object]):
    """The schedule with every packable matmul kernel packed (the graph rewritten, then
    scheduled again by `reschedule(outputs)`); each panel copy explained by a decision."""
    found = find_packable(schedule, panel_of)
    if not found:
        return schedule
    packed = {reduce: packed_product(x, w, panel, reduce.shape)
              for reduce, (x, w, panel) in found.items()}
    decisions = {}  # panel copy -> its decision
    for reduce, (x, w, panel) in found.items():
        _, rows, columns = packed[reduce]
        decisions[rows] = _decision(reduce, x, rows, "rows", panel)
        decisions[columns] = _decision(reduce, w, columns, "columns", panel)
    return rescheduled(schedule, {r: p[0] for r, p in packed.items()}, decisions, reschedule)


def rescheduled(schedule, replaced: dict, decisions: dict, reschedule: Callable[[list], object]):
    """`schedule`'s graph with each replaced node swapped for its replacement, scheduled again by
    `reschedule(outputs)`; `decisions` (copy node -> its decision) explain the copies a rewrite
    added, first in their kernels and in the schedule."""
    result = reschedule(rewrite_graph(schedule.graph_outputs, replaced, schedule.leaves))
    for item in result.kernels:
        if item.output in decisions:
            item.decisions.insert(0, decisions[item.output])
    result.decisions[:0] = list(decisions.values())
    return result


def copy_decision(operand: Node, reduce: Node, reason: Reason, detail: str,
                  **evidence) -> FusionDecision:
    """Why a rewrite copies `operand` before the kernel of `reduce`."""
    return FusionDecision(operand, reduce, False, reason, {
        "producer_op": operand.op.name, "producer_shape": operand.shape,
        "consumer_op": reduce.op.name, "consumer_shape": reduce.shape,
        "rule": reason.value, "detail": detail, **evidence})


def _decision(reduce: Node, operand: Node, copy: Node, side: str, panel: int) -> FusionDecision:
    m, n, k = reduce.src[0].shape
    detail = (f"{m}x{k} @ {k}x{n}: the {side} operand is copied into {panel}-wide panels "
              f"{list(copy.shape)}; the {reduce.device} renderer declares matmul_panel={panel}")
    return copy_decision(operand, reduce, Reason.PACKED_MATMUL, detail, panel=panel)


def rewrite_graph(outputs: list[Node], replaced: dict, leaves) -> list[Node]:
    """`outputs` with each replaced node swapped for its replacement (movements rebuilt so that
    reshapes of reshapes fold, as the frontend's do)."""
    memo: dict[Node, Node] = {}
    for node in graph_order(outputs, leaves):
        if node in replaced:
            memo[node] = replaced[node]
        elif node in leaves or not node.src:
            memo[node] = node
        else:
            src = tuple(memo[s] for s in node.src)
            if src == node.src:
                memo[node] = node
            elif node.op in MOVEMENT:
                memo[node] = ir.movement(node.op, src[0], node.arg)
            else:
                memo[node] = Node(node.op, node.dtype, src, node.arg, node.shape, node.device)
    return [memo[o] for o in outputs]
