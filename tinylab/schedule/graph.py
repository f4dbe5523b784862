"""Graph helpers every stage of the scheduler shares: the walk in source order that stops at
realized nodes, leaves, kernel roots, consumers, aliases, and interned chains of movement ops
with the view a buffer is read through after one. Used by regions, cuts, lowering, packing.
"""
from __future__ import annotations

from ..ir.movement_ops import MOVEMENTS
from ..ir.node import Node, toposort
from ..ir.ops import MOVEMENT, Op
from ..ir.view import ViewStack


def is_leaf(node: Node, realized) -> bool:
    return node.op in (Op.BUFFER, Op.CONST) or node in realized


def graph_order(outputs, realized) -> list[Node]:
    """Nodes under outputs, sources first, not descending below realized nodes."""
    return toposort(outputs, lambda node: () if node in realized else node.src)


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


# the detail of a contiguous() cut that must copy, though its source is in a buffer already
SNAPSHOT = "a copy: an assign in the same realize overwrites the buffer it reads"


def is_alias(node: Node, cut, realized) -> bool:
    """contiguous() of something already in a plain buffer needs no kernel (unless it is a
    requested value whose buffer an assign of the same schedule overwrites: SNAPSHOT)."""
    return node.op is Op.CONTIGUOUS and (node.src[0] in cut or is_leaf(node.src[0], realized)) \
        and node.src[0].op is not Op.CONST and cut.get(node, (None, None))[1] != SNAPSHOT


def buffer_leaf(node: Node, realized, cut=None) -> Node:
    """The node a leaf reads: its BUFFER node when it is realized or a contiguous() alias of a
    realized buffer (whose old value an assign in the same schedule may overwrite); a
    SNAPSHOT contiguous() in `cut` is a copy with a buffer of its own."""
    leaf = realized.get(node, node)
    while leaf.op is Op.CONTIGUOUS and (cut is None or cut.get(leaf, (None, None))[1] != SNAPSHOT):
        leaf = realized.get(leaf.src[0], leaf.src[0])
    return leaf


class Movements:
    """A chain of movement ops above a node, innermost first, as a linked list whose cells a
    `MovementTable` interns: equal chains are one object, so a chain hashes, compares and grows
    by one op in O(1) whatever its length. The empty chain is None."""
    __slots__ = ("op", "arg", "rest")

    def __init__(self, op: Op, arg, rest: Movements | None):
        self.op, self.arg, self.rest = op, arg, rest


class MovementTable:
    """Interns the `Movements` chains of one walk and the views they give. `view(shape, chain)`
    remembers (view so far, ops left) -> final view, so the chains of a long run of movement
    ops, which share their outer ops, apply each op once where their views meet again (a pad
    that a shrink undoes) instead of once per chain."""

    def __init__(self):
        self.chains: dict = {}
        self.finals: dict = {}

    def push(self, op: Op, arg, rest: Movements | None) -> Movements:
        """The chain `rest` with (op, arg) put innermost."""
        key = (op, arg, rest)
        chain = self.chains.get(key)
        if chain is None:
            chain = self.chains[key] = Movements(op, arg, rest)
        return chain

    def view(self, shape: tuple, chain: Movements | None) -> ViewStack:
        """The view a buffer of `shape` is read through after the ops of `chain`, each (view so
        far, ops left) state computed once."""
        view, walked = ViewStack.contiguous(shape), []
        while chain is not None:
            final = self.finals.get((view, chain))
            if final is not None:
                view = final
                break
            walked.append((view, chain))
            view = apply_movement(view, chain.op, chain.arg)
            chain = chain.rest
        for state in walked:
            self.finals[state] = view
        return view


def apply_movement(view: ViewStack, op: Op, arg) -> ViewStack:
    return MOVEMENTS[op].view(view, arg)
