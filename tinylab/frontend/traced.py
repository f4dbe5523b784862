"""Traced values: the stand-in leaves tinylab.func transforms call a function on. A placeholder is a
BUFFER node with no data; the transform rewrites the graph built on it (substitution, batching,
tangents) and never runs it. Asking a placeholder's graph for a value is refused, with the words
torch.func uses, naming the transform. `TRANSFORM_OF` tags the nodes a transform made (inspector).
"""
from __future__ import annotations

import itertools
import weakref
from types import MappingProxyType

from ..dtype import DType
from ..ir import node as ir
from ..ir.node import Node
from ..ir.ops import Op
from ..memo import Role, register


class Placeholder:
    """The buffer of a placeholder leaf: a label for printing, the transform that made it."""

    def __init__(self, transform: str, serial: int):
        self.transform, self.label, self.owner = transform, f"{transform}_in{serial}", None
        self.version = 0  # never written: the schedule cache reads a leaf's version like a Buffer's

    @property
    def handle(self):
        """What a kernel launch reads: a placeholder has no data, so realizing a value that
        depends on one is refused here, before any kernel runs on it."""
        raise RuntimeError(f"{self.transform}: " + MESSAGES["realize"].format(t=self.transform))


_SERIAL = itertools.count(1)   # placeholder serial numbers
LIVE = register("live placeholders", weakref.WeakSet(), Role.LIVE)  # placeholder nodes alive now
# node -> what made it: "jvp tangent", "vjp cotangent", "vmap batch axis"
TRANSFORM_OF: weakref.WeakKeyDictionary[Node, str] = \
    register("transform of", weakref.WeakKeyDictionary(), Role.LIVE)


def placeholder(shape: tuple, dtype: DType, device: str, transform: str) -> Node:
    node = ir.buffer(Placeholder(transform, next(_SERIAL)), tuple(shape), dtype, device)
    LIVE.add(node)
    return node


def is_placeholder(node: Node) -> bool:
    return node.op is Op.BUFFER and isinstance(node.buffer, Placeholder)


MESSAGES = MappingProxyType({
    ".item()": "It looks like you're calling .item() on a Tensor. We don't support {t} over "
               "calling .item() on a Tensor, please try to rewrite what you're doing with "
               "other operations.",
    "bool": "It looks like you're attempting to use a Tensor in some data-dependent control "
            "flow. We don't support that under {t}: write it with Tensor.where instead.",
    ".numpy()": "It looks like you're reading a traced Tensor's value with .numpy(). We don't "
                "support that under {t}: return the tensor from the function instead.",
    "realize": "It looks like you're realizing a Tensor whose value depends on the function's "
               "inputs (an op that reads its data, such as one_hot without num_classes). We "
               "don't support that under {t}: return the tensor from the function instead.",
})


def traced_leaf(node: Node) -> Node | None:
    """The placeholder `node`'s value depends on, if any (only walks while placeholders live)."""
    if not len(LIVE):
        return None
    return next((leaf for leaf in ir.toposort([node]) if is_placeholder(leaf)), None)


def is_traced(node: Node) -> bool:
    """Whether `node`'s value depends on a transform's placeholder (it has no data yet)."""
    return traced_leaf(node) is not None


def check_concrete(node: Node, what: str) -> None:
    """Raise if `node`'s value depends on a placeholder, with torch.func's words for `what`."""
    leaf = traced_leaf(node)
    if leaf is not None:
        transform = leaf.buffer.transform
        raise RuntimeError(f"{transform}: " + MESSAGES[what].format(t=transform))
