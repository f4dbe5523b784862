"""Parsing an index for frontend/indexing.py: `expand_index` spells out `...` and bool masks,
`plan_index` turns ints, slices (with steps, symbolic bounds), None and tensor/list indices into a
BasicPlan (shrink/flip/step per dim, the advanced indices and where their result dims go).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.symbolic import Variable


# ---- parsing an index ------------------------------------------------------------------------
@dataclass
class BasicPlan:
    """How basic indexing maps the source shape to the result (and back, for setitem)."""
    bounds: list = field(default_factory=list)   # shrink per source dim
    flips: list = field(default_factory=list)    # source dims that are flipped
    steps: list = field(default_factory=list)    # step per source dim
    final_shape: tuple = ()                      # after dropping ints and adding None dims
    advanced: list = field(default_factory=list)  # (result axis, index tensor, known >= 0)
    adjacent: bool = True                        # advanced indices next to each other
    empty_axes: list = field(default_factory=list)  # result axes from `False` (size 0)


@dataclass
class ListIndex:
    """An index given as a list / numpy array: its values are known, so they are range-checked
    when the indexed dim is known, then it becomes an index tensor."""
    values: np.ndarray


def is_tensor(value) -> bool:
    return hasattr(value, "node") or isinstance(value, ListIndex)


def _dims_used(item) -> int:
    if item is None or item is Ellipsis or isinstance(item, bool):
        return 0
    if hasattr(item, "node") and item.dtype.is_bool:
        return max(item.ndim, 1)
    return 1


def _as_index(tensor, item):
    """Lists, tuples inside the index and numpy arrays become index tensors, as numpy reads
    them (x[(0, 1), (1, 2)] picks two elements); everything else is checked and kept."""
    if isinstance(item, (list, tuple, np.ndarray)):
        try:
            array = np.asarray(item)
        except ValueError:
            raise IndexError(f"index list {item!r} is ragged") from None
        if array.dtype == object or not (array.dtype.kind in "iub" or array.size == 0):
            raise IndexError(f"index list {item!r} must hold ints or bools")
        if array.dtype.kind == "b":
            return type(tensor)(array, device=tensor.device)
        return ListIndex(array.astype(np.int64))
    if is_tensor(item):
        if item.dtype.is_float:
            raise IndexError(f"tensors used as indices must be integer or bool, got "
                             f"{item.dtype.name}")
        return item.to(tensor.device)  # like PyTorch, an index may live on another device
    if item is None or item is Ellipsis or isinstance(item, (bool, slice)):
        return item
    if isinstance(item, (int, np.integer)) or hasattr(item, "__index__"):
        return int(item.__index__())
    raise IndexError(f"unsupported index {item!r} of type {type(item).__name__}; use ints, "
                     f"slices, None, ..., lists or tensors")


def expand_index(tensor, index) -> list:
    """The index as a list with Ellipsis expanded, lists turned into tensors and bool masks
    into the int tensors of their true positions."""
    items = [_as_index(tensor, x) for x in (index if isinstance(index, tuple) else (index,))]
    if sum(1 for x in items if x is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis (...)")
    used = sum(_dims_used(x) for x in items)
    if used > tensor.ndim:
        raise IndexError(f"too many indices for a tensor of {tensor.ndim} dim(s): index uses "
                         f"{used} (shape {tensor.shape})")
    at = next((i for i, x in enumerate(items) if x is Ellipsis), len(items))
    items = items[:at] + [slice(None)] * (tensor.ndim - used) + items[at + 1:]
    out, axis = [], 0
    for item in items:
        if hasattr(item, "node") and item.dtype.is_bool:
            out.extend(_mask_positions(tensor, item, axis))
        else:
            out.append(item)
        axis += _dims_used(item)
    return out


def _mask_positions(tensor, mask, axis: int) -> list:
    """x[mask] has a data-dependent shape: the mask's positions come from `nonzero` (its kernels
    count the True elements, then compute each one's coordinates)."""
    dims = tensor.shape[axis:axis + max(mask.ndim, 1)]
    if mask.ndim == 0:
        raise IndexError("a 0-d bool tensor index is not supported; use where()")
    if tuple(mask.shape) != tuple(dims):
        raise IndexError(f"bool mask of shape {mask.shape} does not match the indexed dims "
                         f"{tuple(dims)} of shape {tensor.shape} (starting at dim {axis})")
    return list(mask.to(tensor.device).nonzero(as_tuple=True))


def _slice_bounds(item: slice, size: int):
    """(shrink bounds, flip?, step, count) of a slice on a dim of `size`."""
    if item.step == 0:
        raise ValueError("slice step cannot be zero")
    if any(isinstance(x, Variable) for x in (item.start, item.stop, size)):
        return _symbolic_slice_bounds(item, size)
    start, stop, step = item.indices(size)
    if step > 0:
        count = max(0, -(-(stop - start) // step))
        low = start
        high = start + (count - 1) * step + 1 if count else start
        return (low, high), False, step, count
    count = max(0, -(-(start - stop) // -step))
    high = start + 1
    low = high - ((count - 1) * -step + 1) if count else high
    return (low, high) if count else (0, 0), True, -step, count


def _symbolic_slice_bounds(item: slice, size):
    """A slice whose start, stop or dim size is symbolic: step 1, ends counted from the end when
    negative ints, not clamped (the shrink checks they fit for every value in range)."""
    if item.step not in (None, 1):
        raise IndexError(f"slice {item} with a symbolic bound or size {size!r}: only step 1 is "
                         f"supported")
    def end(x, default):
        if x is None:
            return default
        if not isinstance(x, Variable) and x < 0:
            return size + x
        return x
    start, stop = end(item.start, 0), end(item.stop, size)
    count = stop - start
    return (start, stop), False, 1, count


def plan_index(tensor, items: list) -> BasicPlan:
    """Ints select first (as in PyTorch, unlike numpy, an int never joins the tensor indices);
    tensor indices next to each other (ignoring ints) keep their place in the result."""
    plan = BasicPlan()
    final, positions, axis = [], [], 0
    for item in items:
        if item is None or isinstance(item, bool):
            if item is False:
                plan.empty_axes.append(len(final))
            final.append(1)
            continue
        size = tensor.shape[axis]
        if isinstance(item, int) and isinstance(size, Variable):
            raise IndexError(f"an int index on the symbolic dim {axis} (size {size!r}) of "
                             f"{tensor.shape} is not supported; slice it instead")
        if isinstance(item, int):
            if not -size <= item < size:
                raise IndexError(f"index {item} is out of bounds for dim {axis} with size {size} "
                                 f"(shape {tensor.shape})")
            plan.bounds.append((item % size, item % size + 1))
            plan.flips.append(False)
            plan.steps.append(1)
            axis += 1
            continue
        if is_tensor(item):
            plan.advanced.append((len(final),) + _index_tensor(tensor, item, axis))
            positions.append(len(final))
            item = slice(None)
        bounds, flipped, step, count = _slice_bounds(item, size)
        plan.bounds.append(bounds)
        plan.flips.append(flipped)
        plan.steps.append(step)
        final.append(count)
        axis += 1
    plan.final_shape = tuple(final)
    plan.adjacent = all(b - a == 1 for a, b in zip(positions, positions[1:]))
    return plan


def _index_tensor(tensor, item, axis: int) -> tuple:
    """(index tensor, known to be non-negative); list values are range-checked against the dim
    and their negative entries counted from the end here, as the list is a constant."""
    if not isinstance(item, ListIndex):
        return item, False
    size = tensor.shape[axis]
    bad = item.values[(item.values < -size) | (item.values >= size)]
    if bad.size:
        raise IndexError(f"index {int(bad[0])} is out of bounds for dim {axis} with size {size} "
                         f"(shape {tensor.shape})")
    return type(tensor)((item.values % max(size, 1)).astype(np.int32), device=tensor.device), True
