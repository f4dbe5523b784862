"""Tensor-level composite backward: `_with_backward(out, sources, rule)` gives a Tensor built
from a chain of primitives one gradient rule, applied straight to its sources (the Tensor face
of frontend/autograd.py `composite`). Used by elementwise, reduce and activation methods.
"""
from __future__ import annotations

from . import autograd


def _with_backward(out, sources: tuple, rule):
    """`out` with `rule(grad)` (Tensors in, one Tensor or None per source out) as its backward,
    in place of the rules of the chain that computed it (frontend/autograd.py `composite`)."""
    def node_rule(grad_node):
        grads = rule(out._wrap(grad_node))
        return tuple(None if g is None else g.node for g in grads)
    autograd.composite(out.node, tuple(s.node for s in sources), node_rule)
    return out
