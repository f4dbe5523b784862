"""ATen's writes by index, as values (a graph's index_put and index_add return a new tensor):
every indexed position is a one-hot compare of the flat index against the positions of the
indexed dims, contracted with the values (accumulate) or picked from the last write (assign).
"""
from __future__ import annotations

import math

from ..dtype import dtypes
from ..frontend.tensor import Tensor, broadcast_shape
from .aten_shape import _dim


def index_add(x: Tensor, dim: int, index: Tensor, source: Tensor, alpha=1) -> Tensor:
    """x with source's slices along `dim` added at `index` (repeated indices add up)."""
    dim = _dim(x, dim)
    indices = [None] * dim + [index]
    return index_put(x, indices, source if alpha == 1 else source * alpha, True)


def index_put(x: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """x[indices] = values (or += with accumulate), numpy's advanced indexing: the index tensors
    broadcast together; their dims stand where the indexed dims were if those are adjacent,
    else first. Of two writes to one place, the later one stays (PyTorch leaves it undefined)."""
    indexed = [d for d, i in enumerate(indices) if i is not None]
    rest = [d for d in range(x.ndim) if d not in indexed]
    adjacent = indexed == list(range(indexed[0], indexed[-1] + 1))
    front = indexed[0] if adjacent else 0
    tensors = [_as_index(indices[d], x.shape[d]) for d in indexed]
    index_shape = broadcast_shape(*(t.shape for t in tensors), op="index_put")
    # flat position inside the block of indexed dims, one per broadcast index
    strides = [math.prod(x.shape[d] for d in indexed[k + 1:]) for k in range(len(indexed))]
    flat = sum(t.expand(index_shape) * s for t, s in zip(tensors, strides)).reshape(-1)
    block, count = math.prod(x.shape[d] for d in indexed), flat.shape[0]
    # x as (before, block, after) with the indexed dims moved together to `front`
    order = rest[:front] + indexed + rest[front:]
    moved = x.permute(order)
    before, after = moved.shape[:front], moved.shape[front + len(indexed):]
    target = moved.reshape(before + (block,) + after)
    shaped = values.expand(before + tuple(index_shape) + after).reshape(before + (count,) + after)
    hit = flat.reshape(count, 1) == Tensor.arange(block, dtype=flat.dtype).reshape(1, block)
    placed = _contract(hit, shaped, front, accumulate)
    if accumulate:
        result = target + placed.cast(x.dtype)
    else:
        written = _broadcast_block(hit.any(0), front, len(after))
        result = written.where(placed.cast(x.dtype), target)
    inverse = [order.index(d) for d in range(x.ndim)]
    return result.reshape(moved.shape).permute(inverse)


def _as_index(index: Tensor, size: int) -> Tensor:
    """An index tensor with negative positions wrapped (a bool mask: its True positions)."""
    if index.dtype is dtypes.bool:
        raise NotImplementedError("index_put with a boolean mask")
    index = index.cast(dtypes.int64)
    return (index < 0).where(index + size, index)


def _broadcast_block(mask: Tensor, front: int, after: int) -> Tensor:
    return mask.reshape((1,) * front + mask.shape + (1,) * after)


def _contract(hit: Tensor, shaped: Tensor, front: int, accumulate: bool) -> Tensor:
    """(before, block, after): Σ over writes of hit·value, or the last write's value."""
    count, block = hit.shape
    after = shaped.ndim - front - 1
    values = shaped.unsqueeze(front + 1)                        # (before, count, 1, after)
    mask = hit.reshape((1,) * front + (count, block) + (1,) * after)
    if not accumulate:   # keep only the last write to each position
        order = Tensor.arange(count).reshape(count, 1)
        last = hit.where(order, -1).max(0, keepdim=True)
        mask = (hit & (order == last)).reshape(mask.shape)
    return mask.where(values, 0).sum(front)
