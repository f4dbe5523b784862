"""Movement-op builders: reshape, permute, expand, pad, shrink, flip (and `movement` by op), each
checking its argument against the node's shape and folding what needs no node (an identity, a
movement of a constant). Views, not data, change (ir/view.py). Re-exported by ir/node.py.

`MOVEMENTS` is the one table of what each movement op does, in the three places one is applied:
building its node (here), moving a ViewStack (schedule/graph.py) and moving a numpy array (the
oracle, ir/evaluate.py; frontend/views.py's writable-view check).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable
from types import MappingProxyType

import numpy as np

from ..errors import ShapeError
from .node import Node, const, prod
from .ops import MOVEMENT, Op


def reshape(node: Node, shape: tuple[int, ...]) -> Node:
    if shape == node.shape:
        return node
    if prod(shape) != node.numel or any(s < 0 for s in shape):
        raise ShapeError(f"RESHAPE: cannot reshape {node.shape} ({node.numel} elements) "
                         f"to {shape} ({prod(shape)} elements)")
    _check_symbolic_reshape(node.shape, shape)
    if node.op is Op.CONST:
        return const(node.value, node.dtype, shape, node.device)
    if node.op is Op.RESHAPE:
        return reshape(node.src[0], shape)
    return Node(Op.RESHAPE, node.dtype, (node,), shape, shape, node.device)


def _check_symbolic_reshape(old: tuple, new: tuple) -> None:
    """A symbolic size must stay one whole axis through a reshape (its layout is laid out at the
    variable's maximum, so it cannot merge with or split into other axes)."""
    from . import symbolic as sym
    from .reshape_groups import symbolic_groups
    if not (sym.any_symbolic(old) or sym.any_symbolic(new)):
        return
    if symbolic_groups([s for s in old if s != 1], [s for s in new if s != 1]) is None:
        raise ShapeError(f"RESHAPE: cannot reshape symbolic shape {old} to {new}: a symbolic "
                         f"size must stay one axis (reshape the static axes around it)")


def inverse_permutation(order) -> tuple[int, ...]:
    """The order that undoes `order`: permute(permute(x, order), inverse) is x."""
    return tuple(sorted(range(len(order)), key=lambda i: order[i]))


def permute(node: Node, order: tuple[int, ...]) -> Node:
    if sorted(order) != list(range(node.ndim)):
        raise ShapeError(f"PERMUTE: order {order} is not a permutation of the {node.ndim} "
                         f"axes of shape {node.shape}")
    if order == tuple(range(node.ndim)):
        return node
    shape = tuple(node.shape[i] for i in order)
    if node.op is Op.CONST:
        return const(node.value, node.dtype, shape, node.device)
    if node.op is Op.PERMUTE:
        return permute(node.src[0], tuple(node.order[i] for i in order))
    return Node(Op.PERMUTE, node.dtype, (node,), order, shape, node.device)


def expand(node: Node, shape: tuple[int, ...]) -> Node:
    if shape == node.shape:
        return node
    if len(shape) != node.ndim or any(s != n and n != 1 for s, n in zip(shape, node.shape)):
        raise ShapeError(f"EXPAND: cannot expand {node.shape} to {shape} "
                         f"(only size-1 axes can grow)")
    if node.op is Op.CONST:
        return const(node.value, node.dtype, shape, node.device)
    if node.op is Op.EXPAND:
        return expand(node.src[0], shape)
    return Node(Op.EXPAND, node.dtype, (node,), shape, shape, node.device)


def pad(node: Node, padding: tuple[tuple[int, int], ...]) -> Node:
    if len(padding) != node.ndim or any(b < 0 or a < 0 for b, a in padding):
        raise ShapeError(f"PAD: padding {padding} does not fit shape {node.shape} "
                         f"(one non-negative (before, after) pair per axis)")
    if all(b == 0 and a == 0 for b, a in padding):
        return node
    shape = tuple(s + b + a for s, (b, a) in zip(node.shape, padding))
    return Node(Op.PAD, node.dtype, (node,), padding, shape, node.device)


def _fits(bounds, shape) -> bool:
    from .symbolic import fits_bounds
    return fits_bounds(bounds, shape)


def shrink(node: Node, bounds: tuple[tuple[int, int], ...]) -> Node:
    if len(bounds) != node.ndim or not _fits(bounds, node.shape):
        raise ShapeError(f"SHRINK: bounds {bounds} do not fit shape {node.shape} (for every "
                         f"value a symbolic bound's range allows, or its bound value)")
    if all(b == 0 and e == s for (b, e), s in zip(bounds, node.shape)):
        return node
    shape = tuple(e - b for b, e in bounds)
    if node.op is Op.CONST:
        return const(node.value, node.dtype, shape, node.device)
    return Node(Op.SHRINK, node.dtype, (node,), bounds, shape, node.device)


def flip(node: Node, axes: tuple[int, ...]) -> Node:
    if any(not 0 <= a < node.ndim for a in axes):
        raise ShapeError(f"FLIP: axes {axes} out of range for shape {node.shape}")
    axes = tuple(sorted(set(a for a in axes if not isinstance(node.shape[a], int)
                            or node.shape[a] > 1)))
    if any(not 0 <= a < node.ndim for a in axes):
        raise ShapeError(f"FLIP: axes {axes} out of range for shape {node.shape}")
    if not axes:
        return node
    if node.op is Op.CONST:
        return node
    return Node(Op.FLIP, node.dtype, (node,), axes, node.shape, node.device)


@dataclass(frozen=True)
class Movement:
    """One movement op with its argument `arg` (the node's `arg`), applied to each kind of value."""
    node: Callable    # (Node, arg) -> Node: the builder above
    view: Callable    # (ViewStack, arg) -> ViewStack: the same movement of an index map
    array: Callable   # (np.ndarray, arg) -> np.ndarray: the same movement of values (zero padding)


def _shrink_array(x: np.ndarray, bounds) -> np.ndarray:
    return x[tuple(slice(b, e) for b, e in bounds)]


MOVEMENTS: dict[Op, Movement] = MappingProxyType({
    Op.RESHAPE: Movement(reshape, lambda v, a: v.reshape(a), lambda x, a: x.reshape(a)),
    Op.PERMUTE: Movement(permute, lambda v, a: v.permute(a), lambda x, a: x.transpose(a)),
    Op.EXPAND: Movement(expand, lambda v, a: v.expand(a), lambda x, a: np.broadcast_to(x, a)),
    Op.PAD: Movement(pad, lambda v, a: v.pad(a), lambda x, a: np.pad(x, a)),
    Op.SHRINK: Movement(shrink, lambda v, a: v.shrink(a), _shrink_array),
    Op.FLIP: Movement(flip, lambda v, a: v.flip(a), lambda x, a: np.flip(x, a)),
})
assert set(MOVEMENTS) == MOVEMENT, "every movement op has one row"


def movement(op: Op, node: Node, arg) -> Node:
    """Apply a movement op by name (used when replaying recorded movements)."""
    return MOVEMENTS[op].node(node, arg)
