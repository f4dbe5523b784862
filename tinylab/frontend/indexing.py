"""Indexing: `x[index]`, `x[index] = value`, gather, scatter, scatter_reduce, tril/triu.

Basic indices (ints, slices with steps, None, Ellipsis) become shrink/flip/pad/reshape views.
Tensor (and list) indices follow numpy/PyTorch advanced indexing and lower to a one-hot compare
plus a sum, as does gather; scatter and setitem build the new value with where/pad. Tensor
index values are not range-checked (they are lazy): an out-of-range index selects nothing.
The index is parsed into a plan by frontend/index_plan.py. Mixed into Tensor (frontend/tensor.py).
"""
from __future__ import annotations

from ..dtype import dtypes
from ..errors import ArgumentError, DTypeError, ShapeError, WriteError
from ..ir.node import prod
from ..ir.ops import Op
from .index_plan import BasicPlan, expand_index, is_tensor, plan_index
from .views import is_view, materialize, repoint_one, view_chain, write


# ---- basic indexing and its inverse -----------------------------------------------------------
def apply_basic(tensor, plan: BasicPlan):
    x = tensor.shrink(tuple(plan.bounds))
    flip_axes = tuple(i for i, f in enumerate(plan.flips) if f)
    if flip_axes:
        x = x.flip(flip_axes)
    for axis, step in enumerate(plan.steps):
        if step > 1:
            x = _take_every(x, axis, step)
    x = x.reshape(plan.final_shape)
    if plan.empty_axes:  # a `False` index adds a dim of size 0
        x = x.shrink(tuple((0, 0) if i in plan.empty_axes else None for i in range(x.ndim)))
    return x


def _take_every(x, axis: int, step: int):
    """Every step-th element along `axis`: pad to a multiple, split off the step, keep index 0."""
    size = x.shape[axis]
    count = -(-size // step)
    x = x.pad(tuple((0, count * step - size) if i == axis else None for i in range(x.ndim)))
    shape = x.shape[:axis] + (count, step) + x.shape[axis + 1:]
    x = x.reshape(shape).shrink(tuple((0, 1) if i == axis + 1 else None
                                      for i in range(len(shape))))
    return x.reshape(shape[:axis] + (count,) + shape[axis + 2:])


def place_basic(tensor, plan: BasicPlan, value):
    """The inverse of apply_basic: `value` (of the result's shape) put back where it was read,
    zeros elsewhere. Used with a mask of ones to know which elements were written."""
    shrunk = [b[1] - b[0] for b in plan.bounds]
    stepped = [-(-s // st) if st > 1 else s for s, st in zip(shrunk, plan.steps)]
    x = value.reshape(tuple(stepped))
    for axis, step in enumerate(plan.steps):
        if step > 1:
            x = _spread(x, axis, step, shrunk[axis])
    flip_axes = tuple(i for i, f in enumerate(plan.flips) if f)
    if flip_axes:
        x = x.flip(flip_axes)
    return x.pad(tuple((b, s - e) for (b, e), s in zip(plan.bounds, tensor.shape)))


def _spread(x, axis: int, step: int, size: int):
    """Put element i of `axis` at i*step (zeros between), `size` long."""
    count = x.shape[axis]
    x = x.unsqueeze(axis + 1).pad(tuple((0, step - 1) if i == axis + 1 else None
                                        for i in range(x.ndim + 1)))
    x = x.reshape(x.shape[:axis] + (count * step,) + x.shape[axis + 2:])
    return x.shrink(tuple((0, size) if i == axis else None for i in range(x.ndim)))


# ---- advanced indexing -----------------------------------------------------------------------
def _advanced_parts(y, plan: BasicPlan):
    """For the advanced axes of y: (rest axes, advanced axes, broadcast index shape, one-hot mask
    of shape index_shape + (product of the advanced sizes,)): the indices are combined into one
    flat position over the advanced axes (-1, matching nothing, where one is out of range)."""
    from .tensor import broadcast_shape
    axes = [a for a, _, _ in plan.advanced]
    rest = [a for a in range(y.ndim) if a not in axes]
    index_shape = broadcast_shape(*[t.shape for _, t, _ in plan.advanced], op="index")
    flat, inside, total = None, None, 1
    for axis, index, non_negative in reversed(plan.advanced):
        size = y.shape[axis]
        index = index._broadcast_to(index_shape, "index").cast(dtypes.int32)
        if not non_negative:  # negative indices count from the end
            index = (index < 0).where(index + size, index)
        if len(plan.advanced) > 1:  # one out-of-range index must not alias another position
            valid = (index >= 0) & (index < size)
            inside = valid if inside is None else inside & valid
        flat = index * total if flat is None else flat + index * total
        total *= size
    flat = flat if inside is None else inside.where(flat, -1)
    classes = type(y).arange(total, device=y.device)
    mask = flat.unsqueeze(-1) == classes.reshape((1,) * len(index_shape) + (total,))
    return rest, axes, index_shape, mask


def _sum_keep_dtype(x, axes: tuple):
    """Sum over axes keeping the dtype (at most one term is non-zero); bool ORs."""
    axes = tuple(a % x.ndim for a in axes)
    node = x.node.max(axes) if x.dtype.is_bool else x.node.sum(axes)
    return x._wrap(node).reshape(tuple(s for i, s in enumerate(x.shape) if i not in axes))


def apply_advanced(y, plan: BasicPlan):
    """Gather along the advanced axes: values and one-hot mask are laid out in the result's
    order with the (flattened) indexed axes last, so the summing reduce writes the result."""
    rest, axes, index_shape, mask = _advanced_parts(y, plan)
    where = sum(1 for a in rest if a < axes[0]) if plan.adjacent else 0
    before, after = rest[:where], rest[where:]
    total = mask.shape[-1]
    values = y.permute(before + after + axes).reshape(
        tuple(y.shape[a] for a in before) + (1,) * len(index_shape) +
        tuple(y.shape[a] for a in after) + (total,))
    mask = mask.reshape((1,) * len(before) + index_shape + (1,) * len(after) + (total,))
    picked = mask.where(values, values._const(0, shape=()))
    return _sum_keep_dtype(picked, (-1,))


def write_advanced(y, plan: BasicPlan, value):
    """y with the positions named by the advanced indices replaced by `value` (shaped like
    y[advanced]). Several writes to one position keep one of the written values."""
    rest, axes, index_shape, mask = _advanced_parts(y, plan)
    where = sum(1 for a in rest if a < axes[0]) if plan.adjacent else 0
    n_rest, n_index = len(rest), len(index_shape)
    order = list(range(where)) + list(range(where + n_index, n_rest + n_index)) + \
        list(range(where, where + n_index))
    value = value.permute(order).unsqueeze(-1)  # (rest..., index..., 1)
    mask = mask.reshape((1,) * n_rest + mask.shape)  # (1.., index..., total)
    index_axes = tuple(range(n_rest, n_rest + n_index))
    hit = mask.max(index_axes) if n_index else mask
    low = value._const(value.dtype.min_value(), shape=())
    chosen = mask.where(value, low).max(index_axes) if n_index else value
    if n_index:
        _refuse_conflicts(mask, value, chosen, index_axes)
    rest_shape = tuple(y.shape[a] for a in rest)
    old = y.permute(rest + axes).reshape(rest_shape + (mask.shape[-1],))
    new = hit.where(chosen, old).reshape(rest_shape + tuple(y.shape[a] for a in axes))
    inverse = sorted(range(y.ndim), key=lambda i: (rest + axes)[i])
    return new.permute(inverse)


def _refuse_conflicts(mask, value, chosen, index_axes: tuple) -> None:
    """Repeated indices that write different values to one element: a WriteError, as nothing
    says which one lands (PyTorch leaves it undefined). Equal values are fine. The check reads
    one number back, so a TinyJit capture (which cannot) skips it."""
    from ..engine.realize import capturer
    if capturer() is not None or prod(mask.shape[n] for n in index_axes) < 2:
        return
    as_number = value if not value.dtype.is_bool else value.cast(dtypes.int8)
    high = as_number._const(as_number.dtype.max_value(), shape=())
    lowest = mask.where(as_number, high).min(index_axes)
    chosen = chosen if not chosen.dtype.is_bool else chosen.cast(dtypes.int8)
    hits = mask.cast(dtypes.int32).sum(index_axes)
    if ((hits > 1) & (lowest != chosen)).any().item():
        index_shape = tuple(mask.shape[n] for n in index_axes)
        raise WriteError(f"setitem: unsupported operation: repeated indices write different "
                         f"values to one element (index shape {index_shape}); nothing was "
                         f"written")


# ---- the entry points ------------------------------------------------------------------------
def getitem(tensor, index):
    items = expand_index(tensor, index)
    plan = plan_index(tensor, items)
    y = apply_basic(tensor, plan)
    return apply_advanced(y, plan) if plan.advanced else y


def setitem(tensor, index, value):
    """x[index] = value: build the whole new value with where/pad, then assign it."""
    materialize(tensor)  # a view of a lazy tensor writes through its (now realized) base
    items = expand_index(tensor, index)
    plan = plan_index(tensor, items)
    basic = apply_basic(tensor, plan)
    target = apply_advanced(basic, plan) if plan.advanced else basic
    value = value if is_tensor(value) else type(tensor)(value, device=tensor.device,
                                                        dtype=tensor.dtype)
    if value.dtype != tensor.dtype:
        value = value.cast(tensor.dtype)
    try:
        value = value._broadcast_to(target.shape, "setitem")
    except ShapeError:
        raise ShapeError(f"setitem: value of shape {value.shape} cannot be broadcast to the "
                         f"indexed shape {target.shape} (tensor shape {tensor.shape})") from None
    if plan.advanced:
        value = write_advanced(basic, plan, value)
    if plan.empty_axes or value.numel() == 0:
        return tensor
    if tensor.node.op in (Op.BUFFER, Op.ASSIGN) or is_view(tensor):
        _write_view(tensor, basic, value)  # realized, or a view of a realized tensor
        return tensor
    ones = type(tensor).ones(*value.shape, dtype=dtypes.bool, device=tensor.device)
    written = place_basic(tensor, plan, ones)
    new = written.where(place_basic(tensor, plan, value), tensor)
    tensor.node = new.node  # a lazy value that is no view simply becomes the new value
    return tensor


def _write_view(tensor, basic, value) -> None:
    """`basic` (tensor's elements the index names, a view of it) takes `value`; the write lands
    in the storage, and `tensor` (when itself a view) reads it back."""
    if basic.node is tensor.node:
        tensor.assign(value)
        return
    if tensor.node.op in (Op.BUFFER, Op.ASSIGN):  # the tensor holds the storage itself
        write(basic, value.to(tensor.device), base=tensor)
        return
    basic.assign(value)
    if is_view(tensor):  # basic now reads the storage's newest value
        repoint_one(tensor, view_chain(basic.node)[0])


class IndexingMixin:
    __slots__ = ()

    def __getitem__(self, index):
        return getitem(self, index)

    def __setitem__(self, index, value):
        setitem(self, index, value)

    # ---- gather / scatter ----
    def _index_check(self, dim, index, op: str) -> int:
        axis = self._axis(dim, op)
        if not is_tensor(index) or not (index.dtype.is_int):
            raise DTypeError(f"{op}: index must be an integer tensor, got "
                             f"{getattr(index, 'dtype', type(index).__name__)}")
        if index.ndim != self.ndim:
            raise ShapeError(f"{op}: index has {index.ndim} dims but the tensor has {self.ndim} "
                             f"(index {index.shape}, tensor {self.shape})")
        return axis

    def _one_hot_along(self, axis: int, index, size: int):
        """index.shape + (size,) bool: [..., m] = (index == m), negatives counted from the end."""
        index = (index < 0).where(index + size, index)
        classes = type(self).arange(size, dtype=index.dtype, device=self.device)
        return index.unsqueeze(-1) == classes

    def gather(self, dim: int, index):
        """out[i][j] = self[index[i][j]][j] along `dim` (PyTorch's torch.gather)."""
        axis = self._index_check(dim, index, "gather")
        for d, (s, n) in enumerate(zip(index.shape, self.shape)):
            if d != axis and s > n:
                raise ShapeError(f"gather: index {index.shape} is larger than the tensor "
                                 f"{self.shape} in dim {d}")
        size = self.shape[axis]
        x = self.shrink(tuple(None if d == axis else (0, s) for d, s in enumerate(index.shape)))
        x = x.unsqueeze(-1).transpose(axis, -1)
        hot = self._one_hot_along(axis, index, size)
        return _sum_keep_dtype(hot.where(x, x._const(0, shape=())), (-1,))

    def _scatter_parts(self, axis: int, index, src):
        """(hit, values) over self's shape: values[..., m, ..., k] = src where index == m."""
        size = self.shape[axis]
        for d, (s, n) in enumerate(zip(index.shape, self.shape)):
            if d != axis and s > n:
                raise ShapeError(f"scatter: index {index.shape} is larger than the tensor "
                                 f"{self.shape} in dim {d}")
        if is_tensor(src):
            if src.ndim != index.ndim or any(s < n for s, n in zip(src.shape, index.shape)):
                raise ShapeError(f"scatter: src {src.shape} must have index's {index.ndim} dims "
                                 f"and be at least as large (index {index.shape})")
            src = src.shrink(tuple((0, n) for n in index.shape)).cast(self.dtype)
        else:
            src = self._const(src, shape=index.shape)
        hot = self._one_hot_along(axis, index, size).transpose(axis, -1)
        src = src.unsqueeze(-1).transpose(axis, -1)
        padding = tuple((0, 0) if d == axis else (0, n - s)
                        for d, (s, n) in enumerate(zip(index.shape, self.shape))) + ((0, 0),)
        return hot.pad(padding), src.expand(hot.shape).pad(padding)

    def scatter(self, dim: int, index, src, reduce: str | None = None):
        """A copy of self with src written at index along dim (torch.Tensor.scatter);
        reduce='add' or 'multiply' combines instead of replacing."""
        if reduce is not None:
            names = {"add": "sum", "multiply": "prod"}
            if reduce not in names:
                raise ValueError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r}")
            return self.scatter_reduce(dim, index, src, names[reduce])
        axis = self._index_check(dim, index, "scatter")
        hot, values = self._scatter_parts(axis, index, src)
        low = values._const(values.dtype.min_value(), shape=())
        chosen = hot.where(values, low)._max_or_lowest(-1)  # (an empty index: nothing hits)
        return hot.any(-1).where(chosen, self)

    def scatter_reduce(self, dim: int, index, src, reduce: str, include_self: bool = True):
        """Combine src into self at index along dim with 'sum', 'prod', 'mean', 'amax' or
        'amin' (torch.Tensor.scatter_reduce)."""
        if reduce not in ("sum", "prod", "mean", "amax", "amin"):
            raise ArgumentError(f"scatter_reduce: reduce must be one of sum, prod, mean, amax, amin; "
                             f"got {reduce!r}")
        axis = self._index_check(dim, index, "scatter_reduce")
        hot, values = self._scatter_parts(axis, index, src)
        hit = hot.any(-1)
        base = self if include_self else hit.where(self._const(0, shape=()), self)
        if reduce in ("sum", "mean"):
            total = hot.where(values, values._const(0, shape=())).sum(-1).cast(self.dtype)
            if reduce == "sum":
                return base + total
            count = hot.sum(-1) + (1 if include_self else 0)
            out = (base + total) / count.maximum(1).cast(total.dtype)
            return hit.where(out if self.dtype.is_float else out.floor().cast(self.dtype), self)
        if reduce == "prod":
            factor = hot.where(values, values._const(1, shape=())).prod(-1)
            return (base if include_self else hit.where(1, self).cast(self.dtype)) * factor
        sign = 1 if reduce == "amax" else -1
        flipped = values if sign == 1 else values._inverse()
        low = values._const(values.dtype.min_value(), shape=())
        best = hot.where(flipped, low)._max_or_lowest(-1)
        best = best if sign == 1 else best._inverse()
        if include_self:
            best = best.maximum(self) if sign == 1 else best.minimum(self)
        return hit.where(best, self)

    # ---- triangles ----
    def _triangle_mask(self, diagonal: int, upper: bool):
        if self.ndim < 2:
            raise ShapeError(f"{'triu' if upper else 'tril'}: needs at least 2 dims, got shape "
                             f"{self.shape}")
        rows, cols = self.shape[-2:]
        r = type(self).arange(rows, device=self.device).reshape(rows, 1)
        c = type(self).arange(cols, device=self.device).reshape(1, cols)
        return (c - r >= diagonal) if upper else (c - r <= diagonal)

    def triu(self, diagonal: int = 0):
        """Elements on and above the `diagonal`-th diagonal; zeros below."""
        return self._triangle_mask(diagonal, True).where(self, self._const(0, shape=()))

    def tril(self, diagonal: int = 0):
        """Elements on and below the `diagonal`-th diagonal; zeros above."""
        return self._triangle_mask(diagonal, False).where(self, self._const(0, shape=()))
