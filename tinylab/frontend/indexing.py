"""Basic indexing: ints, slices (with steps), None and Ellipsis, as shrink/flip/reshape views.
Advanced (tensor) indexing lives here too once it lands. Called by Tensor.__getitem__.
"""
from __future__ import annotations

from ..errors import ShapeError


def _expand_index(tensor, index) -> list:
    index = list(index) if isinstance(index, tuple) else [index]
    ellipses = [i for i, x in enumerate(index) if x is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis (...)")
    used = sum(1 for x in index if x is not None and x is not Ellipsis)
    if used > tensor.ndim:
        raise IndexError(f"too many indices ({used}) for a tensor of {tensor.ndim} dims "
                         f"(shape {tensor.shape})")
    if ellipses:
        at = ellipses[0]
        index = index[:at] + [slice(None)] * (tensor.ndim - used) + index[at + 1:]
    else:
        index = index + [slice(None)] * (tensor.ndim - used)
    return index


def getitem(tensor, index):
    if hasattr(index, "node") or isinstance(index, list):
        raise NotImplementedError("tensor (advanced) indexing is not available yet")
    index = _expand_index(tensor, index)
    x = tensor
    axis = 0
    out_shape = []
    bounds, flips, steps = [], [], []
    for item in index:
        if item is None:
            out_shape.append(("new", None))
            continue
        size = tensor.shape[axis]
        if isinstance(item, bool) or not isinstance(item, (int, slice)) and not hasattr(
                item, "__index__"):
            raise IndexError(f"unsupported index {item!r}")
        if isinstance(item, slice):
            start, stop, step = item.indices(size)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if step > 0:
                count = max(0, -(-(stop - start) // step))
                lo, hi = start, start + max(count - 1, 0) * step + (1 if count else 0)
                bounds.append((lo, hi if count else lo))
                flips.append(False)
            else:
                count = max(0, -(-(start - stop) // -step))
                hi = start + 1
                lo = hi - (max(count - 1, 0) * -step + (1 if count else 0))
                bounds.append((lo, hi if count else lo))
                flips.append(True)
            steps.append(abs(step))
            out_shape.append(("keep", count))
        else:
            i = int(item)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {axis} with size "
                                 f"{size}")
            i %= size
            bounds.append((i, i + 1))
            flips.append(False)
            steps.append(1)
            out_shape.append(("drop", None))
        axis += 1
    x = x.shrink(tuple(bounds))
    flip_axes = tuple(i for i, f in enumerate(flips) if f)
    if flip_axes:
        x = x.flip(flip_axes)
    if any(s > 1 for s in steps):
        x = _apply_steps(x, steps)
    shape, k = [], 0
    for kind, _ in out_shape:
        if kind == "new":
            shape.append(1)
        elif kind == "keep":
            shape.append(x.shape[k])
            k += 1
        else:
            k += 1
    return x.reshape(tuple(shape))


def _apply_steps(x, steps):
    """Take every step-th element along each axis: pad to a multiple, reshape, keep index 0."""
    for axis, step in enumerate(steps):
        if step == 1:
            continue
        size = x.shape[axis]
        count = -(-size // step)
        pads = [(0, 0)] * x.ndim
        pads[axis] = (0, count * step - size)
        x = x.pad(tuple(pads))
        shape = x.shape[:axis] + (count, step) + x.shape[axis + 1:]
        x = x.reshape(shape)
        bounds = [(0, n) for n in shape]
        bounds[axis + 1] = (0, 1)
        x = x.shrink(tuple(bounds)).reshape(shape[:axis] + (count,) + shape[axis + 2:])
    return x


def setitem(tensor, index, value):
    raise ShapeError("assignment through an index is not available yet; use .assign()")
