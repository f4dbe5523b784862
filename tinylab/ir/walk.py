"""The one rebuild-a-node walk: `rewrite(roots, fn)` visits every node reachable from `roots`
sources first, iteratively (a chain of thousands of ops must not recurse that deep), and gives
each node `fn(node, new_sources)`'s replacement, where new_sources are its sources' replacements.
Used by codegen/decompose.py; `Node.replace` (ir/node.py) builds the changed node.
"""
from __future__ import annotations

from typing import Callable

from .node import Node, toposort


def rewrite(roots, fn: Callable[[Node, list], Node], memo: dict | None = None) -> list[Node]:
    """The replacement of each root. `memo` (node -> replacement), when given, is read and
    filled: a node already in it is not visited again, nor are its sources."""
    memo = {} if memo is None else memo
    for node in toposort(roots, lambda n: () if n in memo else n.src):
        if node not in memo:
            memo[node] = fn(node, [memo[s] for s in node.src])
    return [memo[root] for root in roots]


def rebuilt(node: Node, sources: list) -> Node:
    """`node` over new sources (itself when they are the same): the plain rewrite step."""
    return node if tuple(sources) == node.src else node.replace(src=tuple(sources))
