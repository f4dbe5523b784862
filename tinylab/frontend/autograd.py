"""Autograd: one reverse rule per primitive op, kept in the op's row (ir/primitives/) with its math
beside it; RULES below reads them.

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
that follow PyTorch's convention at a kink (clip at its bounds). Like a primitive's, a composite
rule takes (grad, node) and holds no Tensor: the registry holds nodes weakly and rules strongly,
so a rule that held its output (sigmoid's s (1 - s)), or an input whose .grad came to refer to
the output, would keep both, their graphs and buffers alive for ever.
"""
from __future__ import annotations

import weakref
from typing import Callable

from ..dtype import dtypes
from ..ir import node as ir
from ..ir.node import Node
from ..ir.ops import Op
from ..memo import Role, register


class ReverseRules:
    """The reverse rule of every primitive, read from (and written to) its row in ir/primitives/:
    `RULES[Op.MUL](grad, node)`; `op in RULES` where a gradient flows through op. Assigning a rule
    replaces the row's (notebook exercises swap one in and put it back)."""

    def __getitem__(self, op: Op) -> Callable:
        if op.reverse is None:
            raise KeyError(op)
        return op.reverse

    def __setitem__(self, op: Op, rule: Callable) -> None:
        op.reverse = rule

    def __contains__(self, op) -> bool:
        return isinstance(op, Op) and op.reverse is not None

    def __iter__(self):
        return (op for op in Op if op.reverse is not None)

    def items(self):
        return [(op, op.reverse) for op in self]


RULES = ReverseRules()
# no gradient: comparisons, integer and bit ops, BITCAST, DETACH, BUFFER, CONST (no reverse rule)


# node -> (sources, rule): rule(grad, node) gives the gradient for each source, skipping the chain
COMPOSITE: weakref.WeakKeyDictionary[Node, tuple[tuple[Node, ...], Callable]] = \
    register("composite backward rules", weakref.WeakKeyDictionary(), Role.LIVE)


def composite(node: Node, sources, rule: Callable) -> None:
    """Register `rule` as the backward of the chain from `sources` to `node`. `sources` is one
    node (rule(grad, node) is its gradient) or a tuple of nodes (rule(grad, node) gives one
    gradient per source, None where none flows). The rule may capture nodes (immutable: none
    can lead back to `node`) but no Tensor: COMPOSITE holds `node` weakly and the rule strongly,
    so a captured Tensor of `node`, or one whose `.grad` comes to refer to it, would keep both
    alive for ever. What the rule reads it gets as arguments, or builds from captured nodes."""
    if isinstance(sources, Node):
        COMPOSITE[node] = ((sources,), lambda grad, out: (rule(grad, out),))
    else:
        COMPOSITE[node] = (tuple(sources), rule)


# BUFFER node -> the lazy node whose value it holds (dies with the BUFFER node)
REALIZED_FROM: weakref.WeakKeyDictionary[Node, Node] = \
    register("realized from", weakref.WeakKeyDictionary(), Role.LIVE)


def realized_from(buffer: Node, node: Node) -> None:
    """Gradients reaching `buffer` continue into `node`, the graph its value was computed from."""
    assert buffer.op is Op.BUFFER, buffer
    REALIZED_FROM[buffer] = node


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
        elif node.op.reverse is None or (not node.dtype.is_float and node.op is not Op.CAST):
            continue
        elif node in COMPOSITE:
            sources, rule = COMPOSITE[node]
            pairs = zip(sources, rule(grad, node))
        else:
            pairs = zip(node.src, node.op.reverse(grad, node))
        for src, src_grad in pairs:
            if src_grad is None or src not in needed or not src.dtype.is_float:
                continue
            grads[src] = grads[src] + src_grad if src in grads else src_grad
    return grads


def ones_like(node: Node) -> Node:
    return ir.const(1, node.dtype if node.dtype.is_float else dtypes.float32, node.shape,
                    node.device)
