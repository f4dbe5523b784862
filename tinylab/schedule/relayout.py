"""Operand relayout, a graph rewrite that depends on the target, made before the cut: a big reduce
of a product whose output offers the vector lanes no contiguous axis gets one operand (one its
kernel reads from a buffer, placement.py) copied, first, into a layout where one of its output
axes is innermost. Called by schedule.schedule() after packing.py; each copy is explained by a
decision.

A convolution's weight gradient is the case it is for: dW[o, c, ky, kx] sums g[b, o, y, x] *
x[b, c, y+ky, x+kx] over b, y and x. Its only output axis that is contiguous in memory is kx (5
or 3 wide), so 16 lanes run mostly masked. Copied channel-last (x as (b, h, w, c)), the input
channels c are consecutive: a full vector of them, times a broadcast of g, per step of the reduce.
A convolution's input gradient is the other: dx[b, c, y, x] sums g[b, o, y-ky, x-kx] *
w[o, c, ky, kx] through a transposed window (pads and reshapes between the sum and its product,
which the operands' views go through). Its columns (10 of a 16-lane vector in conv3) leave lanes
masked; with the weights copied (ky, kx, o, c), a vector of input channels per step instead.
The copy reads and writes the operand once; the rewrite runs only where the product does many
multiply-adds per byte copied.
`relayout_operands(placement, caps)` returns the rewritten outputs and the copies' decisions;
`caps` is the engine's {device: DeviceCaps} table, whose relayout_lanes is the float32 vector lanes
a device declares (None: none).
"""
from __future__ import annotations

from ..caps import caps_for
from ..ir import node as ir
from ..ir.node import Node
from ..ir.ops import Op
from ..ir.view import ViewStack, dim_stride, strides_for
from .fusion import FusionDecision, Reason
from .packing import copy_decision, rewrite_graph
from .placement import Placement, operand_chain, view_of_chain

MIN_WORK = 1 << 25          # multiply-adds below which a copy kernel costs more than it saves
MIN_WORK_PER_BYTE = 32      # multiply-adds per byte of the copied operand (a copy moves each
                            # byte twice; below this the copy eats what the full lanes gain)
FILLED = 1.0                # an output axis that fills this share of its vectors needs no copy:
                            # every lane. Measured single-threaded, AMD Zen 4: conv2's weight
                            # gradient on 8 lanes (kx = 5 of 8) ran 2x faster relaid; its input
                            # gradient on 16 lanes (24 columns, 24 of 32 lanes) 187 -> 126 ms


def useful_lanes(size: int, lanes: int) -> float:
    """Elements one vector operation of `lanes` computes along an axis of `size` (the last
    vector of a row is masked)."""
    return size / -(-size // lanes)


def big_enough(reduce: Node) -> bool:
    """Whether `reduce` does the work a relayout needs: a sum over a static product of at least
    MIN_WORK multiply-adds (schedule() skips the rewrite where no reduce does)."""
    shape = reduce.src[0].shape
    return reduce.op is Op.REDUCE_SUM and all(isinstance(s, int) for s in shape) and \
        ir.prod(shape) >= MIN_WORK


def summed_product(reduce: Node) -> tuple[Node, list[Node]]:
    """(the MUL a reduce sums, the movement ops between them from the bottom up): none for a
    plain sum of a product; a convolution's input gradient sums its product through a
    transposed window (pads and reshapes, frontend/pooling.py)."""
    return operand_chain(reduce.src[0])


def _plan(reduce: Node, lanes: int) -> tuple[int, int, int] | None:
    """(operand index, operand base dimension to put last, product axis) for a reduce this
    rewrite helps, else None."""
    product, outer = summed_product(reduce)
    if not big_enough(reduce) or product.op is not Op.MUL or not product.dtype.is_float or \
            len(reduce.axes) < 2:
        return None
    shape = reduce.src[0].shape
    work = ir.prod(shape)
    chains = [operand_chain(src) for src in product.src]
    stacks = [view_of_chain(base, chain + outer) for base, chain in chains]
    outputs = [d for d in range(len(shape)) if d not in reduce.axes and shape[d] > 1]
    strides = {d: [dim_stride(stack, d) for stack in stacks] for d in outputs}
    contiguous = [useful_lanes(shape[d], lanes) for d in outputs
                  if all(s in (0, 1) for s in strides[d]) and 1 in strides[d]]
    if max(contiguous, default=0) >= lanes * FILLED:
        return None  # an output axis already fills most of a vector
    best = None
    for d in outputs:
        if shape[d] % lanes:
            continue
        for i, (base, _) in enumerate(chains):
            other, stride = strides[d][1 - i], strides[d][i]
            if other != 0 or not stride or stride == 1 or base.ndim < 3:
                continue
            layout = strides_for(base.shape)
            dims = [j for j, s in enumerate(layout) if s == stride and base.shape[j] == shape[d]]
            nbytes = base.dtype.itemsize * ir.prod(base.shape)
            if len(dims) != 1 or work < MIN_WORK_PER_BYTE * nbytes:
                continue
            rank = (not _windowed(stacks[i], shape), nbytes)
            if best is None or rank < best[0]:
                best = (rank, i, dims[0], d)
    return None if best is None else best[1:]


def _windowed(stack: ViewStack, shape) -> bool:
    """Two axes of the product move the operand's index alike: it is read through a sliding
    window (a convolution's input). Measured on the CNN's three weight gradients, copying the
    windowed operand beat copying the other one (1.3x-1.8x)."""
    strides = [dim_stride(stack, d) for d in range(len(shape)) if shape[d] > 1]
    moving = [s for s in strides if s]
    return len(set(moving)) < len(moving)


def relaid_reduce(reduce: Node, operand: int, dim: int) -> tuple[Node, Node]:
    """(the reduce reading operand `operand` from a copy with base dimension `dim` innermost,
    that copy)."""
    product, outer = summed_product(reduce)
    base, chain = operand_chain(product.src[operand])
    order = tuple(j for j in range(base.ndim) if j != dim) + (dim,)
    copy = ir.contiguous(base.permute(order))
    src = tuple(_moved(copy.permute(ir.inverse_permutation(order)), chain) if k == operand
                else s for k, s in enumerate(product.src))
    return reduce.replace(src=(_moved(product.replace(src=src), outer),)), copy


def _moved(node: Node, chain: list[Node]) -> Node:
    """`node` read through the movement ops `chain` (bottom up)."""
    for movement in chain:
        node = ir.movement(movement.op, node, movement.arg)
    return node


def find_relayouts(placement: Placement, caps: dict) -> dict:
    """{reduce: (operand index, dimension, product axis, lanes)} for each reduce, its product
    computed in its loop, that a copy of one operand (read from a buffer) lets fill its
    vectors."""
    found = {}
    for node in placement.reduces():
        product, outer = summed_product(node)
        if not placement.fused_into_reduce(node.src[0], node) or \
                (outer and not placement.fused_through(product, outer)):
            continue
        lanes = caps_for(caps, node.device).relayout_lanes
        plan = _plan(node, lanes) if lanes and lanes > 1 else None
        if plan is None:
            continue
        base, chain = operand_chain(product.src[plan[0]])
        if placement.has_buffer(base, chain, product):
            found[node] = (*plan, lanes)
    return found


def relayout_operands(placement: Placement, caps: dict) -> tuple:
    """(the outputs with each such reduce reading its relaid operand, {copy: the decision that
    explains it}); the outputs as they were and {} when there is none."""
    found = find_relayouts(placement, caps)
    if not found:
        return placement.outputs, {}
    decisions = {}

    def relay(reduce: Node, rewritten: Node) -> Node:
        operand, dim, _, lanes = found[reduce]
        relaid, copy = relaid_reduce(rewritten, operand, dim)
        decisions[copy] = _decision(rewritten, operand, copy, dim, lanes)
        return relaid
    return rewrite_graph(placement, {reduce: relay for reduce in found}), decisions


def _decision(reduce: Node, operand: int, copy: Node, dim: int, lanes: int) -> FusionDecision:
    base = operand_chain(summed_product(reduce)[0].src[operand])[0]
    detail = (f"a sum of a product {list(reduce.src[0].shape)} with no output axis contiguous "
              f"for {lanes} lanes: operand {list(base.shape)} is copied with axis {dim} "
              f"innermost {list(copy.shape)}, so each vector reads {lanes} consecutive values; "
              f"the {reduce.device} renderer declares relayout_lanes={lanes}")
    return copy_decision(base, reduce, Reason.RELAYOUT, detail, lanes=lanes)
