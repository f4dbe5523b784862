"""vmap: f of one example -> f of a batch, as one batched graph (never a loop). f is called once on
placeholders of the example's shape; transform_rewrites.batch rebuilds its graph with the batch axis
in front through each primitive's batching rule, on the real arguments with their mapped axis moved first.
"""
from __future__ import annotations

from functools import wraps

from ..errors import ShapeError
from ..frontend import traced
from ..frontend.tensor import Tensor
from ..ir.node import Node
from . import transform_rewrites
from .pytree import broadcast_prefix, flatten, unflatten


def _axis_to_front(node: Node, axis: int) -> Node:
    order = (axis,) + tuple(i for i in range(node.ndim) if i != axis)
    return node.permute(order)


def _axis_from_front(node: Node, axis: int) -> Node:
    order = list(range(1, node.ndim))
    order.insert(axis, 0)
    return node.permute(tuple(order))


def _mapped(args: tuple, in_dims) -> list[tuple[int, object, int | None]]:
    """(argument index, leaf, its mapped axis or None) for every leaf of every argument."""
    if isinstance(in_dims, (tuple, list)):
        if len(in_dims) != len(args):
            raise ValueError(f"vmap(f, in_dims={in_dims!r}): in_dims has {len(in_dims)} entries "
                             f"but f was called with {len(args)} positional arguments")
    else:
        in_dims = (in_dims,) * len(args)
    out = []
    for index, (arg, dims) in enumerate(zip(args, in_dims)):
        leaves = flatten(arg)[0]
        axes = broadcast_prefix(dims, arg, f"vmap: in_dims[{index}] (for argument {index})")
        for leaf, axis in zip(leaves, axes):
            out.append((index, leaf, _check_axis(index, leaf, axis)))
    return out


def _check_axis(index: int, leaf, axis):
    if axis is None:
        return None
    if not isinstance(axis, int):
        raise TypeError(f"vmap: in_dim for argument {index} must be an int or None, got {axis!r}")
    if not isinstance(leaf, Tensor):
        raise ValueError(f"vmap: got in_dim={axis} for argument {index}, which is a "
                         f"{type(leaf).__name__}; we cannot vmap over non-Tensor arguments, "
                         f"use None as its in_dim")
    if not -leaf.ndim <= axis < max(leaf.ndim, 1) or leaf.ndim == 0:
        raise ShapeError(f"vmap: in_dim={axis} is out of bounds for argument {index} of shape "
                         f"{leaf.shape} ({leaf.ndim} dims)")
    return axis % leaf.ndim


def _batch_size(mapped) -> int:
    sizes = [(index, leaf.shape[axis], axis) for index, leaf, axis in mapped if axis is not None]
    if not sizes:
        raise ValueError("vmap: at least one argument must be mapped over (every in_dim is None)")
    for index, size, axis in sizes[1:]:
        if size != sizes[0][1]:
            first = sizes[0]
            raise ShapeError(f"vmap: all mapped dimensions must have the same size: argument "
                             f"{first[0]} has size {first[1]} at in_dim {first[2]}, argument "
                             f"{index} has size {size} at in_dim {axis}")
    return sizes[0][1]


def vmap(f, in_dims=0, out_dims=0, *, in_axes=None, out_axes=None, randomness: str = "error",
         chunk_size=None):
    """f mapped over axis in_dims of its arguments, results stacked at out_dims (torch.func.vmap;
    in_axes / out_axes are JAX's names for the same)."""
    in_dims = in_dims if in_axes is None else in_axes
    out_dims = out_dims if out_axes is None else out_axes

    @wraps(f)
    def wrapper(*args):
        mapped = _mapped(args, in_dims)
        size = _batch_size(mapped)
        leaves, mapping = [], {}
        for _index, leaf, axis in mapped:
            if axis is None:
                leaves.append(leaf)
                continue
            shape = leaf.shape[:axis] + leaf.shape[axis + 1:]
            stand = Tensor(traced.placeholder(shape, leaf.dtype, leaf.device, "vmap"))
            mapping[stand.node] = _axis_to_front(leaf.node, axis)
            leaves.append(stand)
        new_args, start = [], 0
        for arg in args:
            count = len(flatten(arg)[0])
            new_args.append(unflatten(flatten(arg)[1], leaves[start:start + count]))
            start += count
        out = f(*new_args)
        outputs, spec = flatten(out)
        for o in outputs:
            if not isinstance(o, Tensor):
                raise TypeError(f"vmap: f must return Tensors (or tuples, lists, dicts of "
                                f"them), got {type(o).__name__}")
        nodes = transform_rewrites.batch([o.node for o in outputs], mapping, size)
        dims = broadcast_prefix(out_dims, out, "vmap: out_dims")
        placed = []
        for node, dim in zip(nodes, dims):
            if not -node.ndim <= dim < node.ndim:
                raise ShapeError(f"vmap: out_dim={dim} is out of bounds for an output of "
                                 f"{node.ndim - 1} dims")
            placed.append(Tensor(_axis_from_front(node, dim % node.ndim)))
        return unflatten(spec, placed)
    return wrapper
