"""Autograd: one rule per primitive op, in one table, each with its math beside it.

A rule takes (grad, node) — the gradient of the loss with respect to `node`'s output and the node
itself — and returns one gradient per source (None where no gradient flows). `gradients(root,
targets)` walks the graph backwards applying the rules and summing gradients of shared nodes.
Rules build IR nodes directly (no Tensor), so the backward graph is as lazy as the forward one.

Realized tensors: realizing replaces a tensor's lazy node by a BUFFER node. `realized_from(buffer,
node)` records where the value came from, and the walk steps through the BUFFER into that graph
(an identity), so .numpy() / .item() / .realize() / tracing never change what autograd sees.

Composite rules: a Tensor method that builds a chain of primitives may register a better backward
for the chain's last node with `composite(node, sources, rule)`. The walk then applies that rule
once, straight to `sources`, instead of the chain's primitive rules. Sliding windows do this:
chained primitive rules give a window's gradient as a sum over the repeated copies with masks
(36 masked taps for a 5x5 window); the registered rule gives the transposed window (25 taps), the
shape of a convolution's input gradient in PyTorch. So do ops whose chain's rules meet 0 * inf
at special points where PyTorch's derivative is finite (pow at a zero base, sigmoid of -1e4) or
that follow PyTorch's convention at a kink (clip at its bounds).
"""
from __future__ import annotations

import math
import weakref
from typing import Callable

from ..dtype import dtypes
from ..ir import node as ir
from ..ir.node import Node
from ..ir.ops import Op
from ..memo import Role, register


def _reduce_max_grad(grad: Node, node: Node):
    # ties share the gradient equally: d max = [x == max] / count(x == max); a NaN is the
    # max of its row, so the NaNs share it (as PyTorch's max() does)
    src = node.src[0]
    result = node.expand(src.shape)
    is_max = ir.alu(Op.OR, src.eq(result), ir.alu(Op.AND, src.ne(src), result.ne(result)))
    is_max = is_max.cast(src.dtype)
    count = is_max.sum(node.axes).expand(src.shape)
    return (is_max * grad.expand(src.shape) / count,)


def _max_grad(grad: Node, node: Node):
    # d max(a, b): 1 to the larger, 1/2 each on a tie
    a, b = node.src
    a_wins = b.lt(a).cast(a.dtype) + a.eq(b).cast(a.dtype) * 0.5
    return (grad * a_wins, grad * (1.0 - a_wins))


def _expand_grad(grad: Node, node: Node):
    # d expand = sum over the axes that were broadcast
    src = node.src[0]
    axes = tuple(i for i, (s, n) in enumerate(zip(src.shape, node.shape)) if s != n)
    if grad.dtype.is_narrow_float:  # partial sums in float32, as a forward half sum (and
        return (ir.cast(ir.cast(grad, dtypes.float32).sum(axes), grad.dtype),)  # PyTorch)
    return (grad.sum(axes),)


def _permute_grad(grad: Node, node: Node):
    return (grad.permute(ir.inverse_permutation(node.order)),)


def _pad_grad(grad: Node, node: Node):
    return (grad.shrink(tuple((b, b + s) for (b, _), s in zip(node.padding, node.src[0].shape))),)


def _shrink_grad(grad: Node, node: Node):
    src = node.src[0]
    return (grad.pad(tuple((b, s - e) for (b, e), s in zip(node.bounds, src.shape))),)


def _cast_grad(grad: Node, node: Node):
    src = node.src[0]
    return (grad.cast(src.dtype) if src.dtype.is_float else None,)


def _where_grad(grad: Node, node: Node):
    cond = node.src[0]
    zero = grad.const_like(0)
    return (None, cond.where(grad, zero), cond.where(zero, grad))


LN2 = math.log(2)

RULES = {
    Op.NEG: lambda grad, node: (-grad,),                                      # d(-x) = -dx
    Op.RECIPROCAL: lambda grad, node: (-grad * node * node,),                 # d(1/x) = -1/x² dx
    Op.SQRT: lambda grad, node: (grad / (node * 2.0),),                       # d√x = dx / 2√x
    Op.EXP2: lambda grad, node: (grad * node * LN2,),                         # d2^x = 2^x ln2 dx
    Op.LOG2: lambda grad, node: (grad / (node.src[0] * LN2),),                # dlog2 x = dx / x ln2
    Op.SIN: lambda grad, node: (grad * _cosine(node.src[0]),),                # d sin = cos dx
    Op.TRUNC: lambda grad, node: (grad.const_like(0),),                       # piecewise constant
    Op.CAST: _cast_grad,                                                      # back to the source type
    Op.ADD: lambda grad, node: (grad, grad),                                  # d(a+b) = da + db
    Op.MUL: lambda grad, node: (grad * node.src[1], grad * node.src[0]),      # d(ab) = b da + a db
    Op.MAX: _max_grad,                                                        # to the larger
    Op.WHERE: _where_grad,                                                    # to the chosen branch
    Op.REDUCE_SUM: lambda grad, node: (grad.expand(node.src[0].shape),),      # broadcast back
    Op.REDUCE_MAX: _reduce_max_grad,                                          # to the maxima
    Op.RESHAPE: lambda grad, node: (grad.reshape(node.src[0].shape),),        # reshape back
    Op.PERMUTE: _permute_grad,                                                # inverse permutation
    Op.EXPAND: _expand_grad,                                                  # sum the broadcast
    Op.PAD: _pad_grad,                                                        # shrink the padding off
    Op.SHRINK: _shrink_grad,                                                  # pad back with zeros
    Op.FLIP: lambda grad, node: (grad.flip(node.axes),),                      # flip back
    Op.CONTIGUOUS: lambda grad, node: (grad,),                                # identity
    Op.COPY: lambda grad, node: (ir.copy_to(grad, node.src[0].device),),      # copy it back
    Op.ASSIGN: lambda grad, node: (None, grad),                               # flows to the value
}
# no gradient: comparisons, integer and bit ops, BITCAST, DETACH, BUFFER, CONST


# node -> (sources, rule): rule(grad) gives the gradient for each source, skipping the chain
COMPOSITE: weakref.WeakKeyDictionary[Node, tuple[tuple[Node, ...], Callable]] = \
    register("composite backward rules", weakref.WeakKeyDictionary(), Role.LIVE)


def composite(node: Node, sources, rule: Callable) -> None:
    """Register `rule` as the backward of the chain from `sources` to `node`. `sources` is one
    node (rule(grad) is its gradient) or a tuple of nodes (rule(grad) gives one gradient per
    source, None where none flows)."""
    if isinstance(sources, Node):
        COMPOSITE[node] = ((sources,), lambda grad: (rule(grad),))
    else:
        COMPOSITE[node] = (tuple(sources), rule)


# BUFFER node -> the lazy node whose value it holds (dies with the BUFFER node)
REALIZED_FROM: weakref.WeakKeyDictionary[Node, Node] = \
    register("realized from", weakref.WeakKeyDictionary(), Role.LIVE)


def realized_from(buffer: Node, node: Node) -> None:
    """Gradients reaching `buffer` continue into `node`, the graph its value was computed from."""
    assert buffer.op is Op.BUFFER, buffer
    REALIZED_FROM[buffer] = node


def alu_sin(x: Node) -> Node:
    return ir.alu(Op.SIN, x)


def _cosine(x: Node) -> Node:
    """cos x = 1 - 2 sin²(x/2): x/2 is exact, where x + pi/2 rounds a large x's digits away."""
    half_sine = alu_sin(x * 0.5)
    return half_sine * half_sine * -2.0 + 1.0


def _sources(node: Node) -> tuple[Node, ...]:
    """The nodes a gradient flows to from `node`: a composite's source, the lazy node a realized
    buffer came from, else node.src. (A composite's chain may not even pass through the source:
    reshape(reshape(x)) is one node.)"""
    if node in COMPOSITE:
        return COMPOSITE[node][0]
    if node.op is Op.BUFFER:
        source = REALIZED_FROM.get(node)
        return (source,) if source is not None else ()
    return node.src


def graph(root: Node) -> list[Node]:
    """Every node gradients from `root` can reach, sources first (through realized buffers)."""
    return ir.toposort([root], _sources)


def _needs_grad(order: list[Node], targets: set[Node]) -> set[Node]:
    """Nodes that have a target among their sources (gradients only flow along those)."""
    needed: set[Node] = set()
    for node in order:
        if node in targets or any(s in needed for s in _sources(node)):
            needed.add(node)
    return needed


def gradients(root: Node, root_grad: Node, targets: list[Node]) -> dict[Node, Node]:
    """d root / d target for every target reachable from root (others are absent)."""
    order = graph(root)
    needed = _needs_grad(order, set(targets))
    grads: dict[Node, Node] = {root: root_grad}
    for node in reversed(order):
        grad = grads.get(node)
        if grad is None or node not in needed:
            continue
        if node.op is Op.BUFFER:  # a realized value: its gradient is its graph's
            pairs = [(source, grad) for source in _sources(node)]
        elif node.op not in RULES or (not node.dtype.is_float and node.op is not Op.CAST):
            continue
        elif node in COMPOSITE:
            sources, rule = COMPOSITE[node]
            pairs = zip(sources, rule(grad))
        else:
            pairs = zip(node.src, RULES[node.op](grad, node))
        for src, src_grad in pairs:
            if src_grad is None or src not in needed or not src.dtype.is_float:
                continue
            grads[src] = grads[src] + src_grad if src in grads else src_grad
    return grads


def ones_like(node: Node) -> Node:
    return ir.const(1, node.dtype if node.dtype.is_float else dtypes.float32, node.shape,
                    node.device)
