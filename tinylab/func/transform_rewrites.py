"""The three graph rewrites the transforms are made of, each a walk over a traced graph:
`substitute` swaps placeholder leaves for values (same shapes), `tangents` pushes tangents forward
through the jvp rules, `batch` rebuilds a graph over a leading batch axis through the batching
rules. Each tags the nodes it makes (frontend/traced.TRANSFORM_OF) for the inspector.
"""
from __future__ import annotations

from ..frontend.traced import TRANSFORM_OF
from ..ir import node as ir
from ..ir.node import Node
from .rules import lift, rule


def _rebuilt(node: Node, sources: tuple) -> Node:
    return node if sources == node.src else Node(node.op, node.dtype, sources, node.arg,
                                                 node.shape, node.device)


def substitute(roots: list[Node], mapping: dict[Node, Node]) -> list[Node]:
    """`roots` with every node of `mapping` replaced by its value (same shape and dtype)."""
    new: dict[Node, Node] = {}
    for node in ir.toposort(roots):
        new[node] = mapping[node] if node in mapping else \
            _rebuilt(node, tuple(new[s] for s in node.src))
    return [new[r] for r in roots]


def tangents(roots: list[Node], seeds: dict[Node, Node]) -> list[Node | None]:
    """The tangent of each root given the tangents of some leaves (None: zero), by the jvp rules."""
    found: dict[Node, Node | None] = dict(seeds)
    for node in ir.toposort(roots):
        if node in found or not node.src:
            continue
        incoming = [found.get(s) for s in node.src]
        if all(t is None for t in incoming) or not node.dtype.is_float:
            found[node] = None
            continue
        tangent = rule(node.op, "jvp")(node, incoming)
        if tangent is not None:
            TRANSFORM_OF.setdefault(tangent, "jvp tangent")
        found[node] = tangent
    return [found.get(r) for r in roots]


def batch(roots: list[Node], mapping: dict[Node, Node], size: int) -> list[Node]:
    """`roots` over a leading batch axis of `size`: `mapping` sends placeholders to batched values
    (batch axis first); nodes that depend on none of them stay as they are."""
    new: dict[Node, Node] = dict(mapping)
    batched = {node: True for node in mapping}  # keyed by the traced node
    for node in ir.toposort(roots):
        if node in mapping:
            continue
        sources = tuple(new[s] for s in node.src)
        flags = [batched.get(s, False) for s in node.src]
        if not any(flags):
            new[node] = _rebuilt(node, sources)
            continue
        new[node] = out = rule(node.op, "batch")(node, sources, flags, size)
        TRANSFORM_OF.setdefault(out, "vmap batch axis")
        batched[node] = True
    return [new[r] if batched.get(r, False) else lift(new[r], size) for r in roots]
