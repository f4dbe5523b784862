"""Graph helpers every stage of the scheduler shares: the walk in source order that stops at
realized nodes, leaves, kernel roots, consumers, aliases, and the view a buffer is read through
after a chain of movement ops. Pure functions of nodes; used by regions, cuts, lowering, packing.
"""
from __future__ import annotations

from ..ir.node import Node
from ..ir.ops import MOVEMENT, Op
from ..ir.view import ViewStack


def is_leaf(node: Node, realized) -> bool:
    return node.op in (Op.BUFFER, Op.CONST) or node in realized


def graph_order(outputs, realized) -> list[Node]:
    """Nodes under outputs, sources first, not descending below realized nodes."""
    order, seen = [], set()
    stack = [(n, False) for n in reversed(outputs)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        if node in realized:
            continue
        stack.extend((s, False) for s in reversed(node.src) if s not in seen)
    return order


def kernel_root(node: Node) -> Node:
    """The value a materialized node's kernel computes."""
    if node.op is Op.CONTIGUOUS:
        return node.src[0]
    if node.op is Op.ASSIGN:
        return node.src[1]
    return node


def reshape_like_permute(node: Node) -> bool:
    """A permute that only moves size-1 axes is a reshape in disguise."""
    big = [i for i in node.order if node.src[0].shape[i] != 1]
    return big == sorted(big)


def through_movement(node: Node) -> Node:
    while node.op in MOVEMENT:
        node = node.src[0]
    return node


def consumers_of(graph, realized) -> dict:
    out: dict[Node, list] = {}
    for node in graph:
        if node in realized:
            continue
        for s in node.src:
            out.setdefault(s, []).append(node)
    return out


def is_alias(node: Node, cut, realized) -> bool:
    """contiguous() of something already in a plain buffer needs no kernel."""
    return node.op is Op.CONTIGUOUS and (node.src[0] in cut or is_leaf(node.src[0], realized)) \
        and node.src[0].op is not Op.CONST


def view_through(shape: tuple, movs: tuple) -> ViewStack:
    """The view a buffer of `shape` is read through after movement ops `movs` (innermost
    first)."""
    view = ViewStack.contiguous(shape)
    for op, arg in movs:
        view = apply_movement(view, op, arg)
    return view


def apply_movement(view: ViewStack, op: Op, arg) -> ViewStack:
    if op is Op.RESHAPE:
        return view.reshape(arg)
    if op is Op.PERMUTE:
        return view.permute(arg)
    if op is Op.EXPAND:
        return view.expand(arg)
    if op is Op.PAD:
        return view.pad(arg)
    if op is Op.SHRINK:
        return view.shrink(arg)
    return view.flip(arg)
