"""Sorting and selecting: sort, argsort, topk, nonzero, masked_select. Mixed into Tensor
(frontend/tensor.py).

Sorting is by rank, in kernels: element i's rank along the axis is the number of elements that
come before it (a broadcast compare of every pair and one sum), and output slot r picks the
element whose rank is r (a one-hot compare, a where and one sum). That is O(n²) work per row in
a few fused kernels, with no data-dependent control flow; values keep their gradient through the
where. nonzero and masked_select have data-dependent shapes: they realize the count first.
"""
from __future__ import annotations

from ..dtype import dtypes
from ..errors import DTypeError, ShapeError


def _before(a, b, descending: bool):
    """a comes strictly before b in the order: smaller (larger) first, NaN last (first), as
    PyTorch orders NaN above every number."""
    if not a.dtype.is_float:
        return b < a if descending else a < b
    if descending:
        return (b < a) | (a.isnan() & ~b.isnan())
    return (a < b) | (b.isnan() & ~a.isnan())


def _pick(chosen, values):
    """Sum over the last axis of values where chosen (one True per row): the chosen value, exact
    for inf and NaN too (the others add zeros, never 0 * value); -0.0 comes out as 0.0."""
    if values.dtype.is_bool:
        return (chosen & values).any(-1)
    return chosen.where(values, values._const(0, shape=())).sum(-1, dtype=values.dtype)


class SortingMixin:
    __slots__ = ()

    def _ranks(self, descending: bool):
        """Rank of each element along the last axis: how many come before it; equal elements
        keep their order (a stable sort)."""
        n = self.shape[-1]
        mine, theirs = self.unsqueeze(-1), self.unsqueeze(-2)  # (..., i, 1), (..., 1, j)
        position = type(self).arange(n, device=self.device)
        earlier = position.reshape(1, n) < position.reshape(n, 1)  # [i, j]: j < i
        first = _before(theirs, mine, descending)  # [i, j]: x_j comes before x_i
        tie = ~first & ~_before(mine, theirs, descending)
        ahead = first | (tie & earlier)
        return ahead.sum(-1, dtype=dtypes.int32)

    def _sorted_slots(self, slots: int, dim: int, descending: bool, op: str):
        """(values, indices) of the first `slots` elements in sorted order along dim."""
        axis = self._axis(dim, op)
        if self.ndim == 0:
            return self, self._const(0, dtypes.int32)
        x = self.transpose(axis, -1)
        n = x.shape[-1]
        ranks = x._ranks(descending).unsqueeze(-2)  # (..., 1, n)
        slot = type(self).arange(slots, device=self.device).reshape(slots, 1)
        chosen = ranks == slot  # (..., slots, n): element j goes to slot r
        values = _pick(chosen, x.unsqueeze(-2))
        position = type(self).arange(n, device=self.device)
        indices = _pick(chosen, position)
        return values.transpose(axis, -1), indices.transpose(axis, -1)

    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False):
        """(values, indices) sorted along `dim`, as torch.sort. NaN sorts above every number.
        Equal elements always keep their order (stable=False gives the stable order too, one
        of the orders PyTorch allows). Indices are int32 (tinylab's default int; PyTorch's are
        int64). Cost: O(n²) per row (a rank by comparing every pair), in a few kernels."""
        _check_flag(stable, "stable", "sort")
        _check_flag(descending, "descending", "sort")
        n = self.shape[self._axis(dim, "sort")] if self.ndim else 1
        return self._sorted_slots(n, dim, descending, "sort")

    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False):
        """The indices that sort `dim` (torch.argsort); see sort."""
        return self.sort(dim, descending, stable)[1]

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True,  # noqa: A002
             sorted_: bool | None = None):
        """(values, indices) of the k largest (or smallest) elements along dim, in sorted order
        (torch.topk). Among equal elements the lower index comes first; PyTorch leaves that
        order unspecified. `sorted_` is tinygrad's name for `sorted`; False (any order allowed,
        PyTorch's; tinygrad raises) returns them sorted too."""
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"topk: k must be an int, got {k!r}")
        n = self.shape[self._axis(dim, "topk")] if self.ndim else 1
        if not 0 <= k <= n:
            raise ShapeError(f"topk: k={k} is out of range for dim {dim} of size {n} (shape "
                             f"{self.shape})")
        return self._sorted_slots(k, dim, largest, "topk")

    def nonzero(self, as_tuple: bool = False, size: int | None = None, fill_value: int = -1):
        """Indices of the non-zero elements, (count, ndim) int32 in row-major order
        (torch.nonzero). The output's shape depends on the data, so the count is realized first
        (one reduce kernel, then one number read back, as tinygrad does): nonzero cannot run
        inside TinyJit. Element i is the k-th non-zero when its inclusive running count is k + 1;
        its flat position is the number of running counts <= k (one compare and one sum, so
        O(numel x count) work: gathers in tinylab are one-hot compares)."""
        flat = self.reshape(-1) != 0 if not self.dtype.is_bool else self.reshape(-1)
        if size is not None:  # static: the first `size`, rows past the count hold fill_value
            return _static_nonzero(self, flat, _static_size(size, "nonzero"), fill_value,
                                   as_tuple)
        positions = _true_positions(flat)
        if as_tuple:
            return tuple(_unravel(positions, self.shape)) if self.ndim else (positions,)
        if self.ndim == 0:
            return type(self).zeros(positions.shape[0], 0, dtype=dtypes.int32,
                                    device=self.device)
        return type(self).stack(*_unravel(positions, self.shape), dim=1)

    def masked_select(self, mask, size: int | None = None, fill_value=0):
        """The elements where the bool `mask` (broadcast with self) is True, as a 1-D tensor in
        row-major order (torch.masked_select). The count is realized first (see nonzero);
        gradients flow back to the selected elements."""
        if not hasattr(mask, "node") or not mask.dtype.is_bool:
            raise DTypeError(f"masked_select: mask must be a bool tensor, got "
                             f"{getattr(mask, 'dtype', type(mask).__name__)}")
        from .tensor import broadcast_shape
        shape = broadcast_shape(self.shape, mask.shape, op="masked_select")
        values = self._broadcast_to(shape, "masked_select").reshape(-1)
        flat = mask._broadcast_to(shape, "masked_select").reshape(-1)
        if size is not None:  # static: the first `size`; slots past the count hold fill_value
            count = _static_size(size, "masked_select")
            running = flat.cast(dtypes.int32).cumsum(0)
        else:
            running, count = _running_count(flat)
        slot = type(self).arange(1, count + 1, device=self.device).reshape(count, 1)
        chosen = flat.reshape(1, -1) & (running.reshape(1, -1) == slot)  # (count, n)
        picked = _pick(chosen, values.reshape(1, -1))
        if size is None:
            return picked
        return chosen.any(-1).where(picked, values._const(fill_value, shape=()))


def _check_flag(value, name: str, op: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be a bool, got {value!r}")


def _static_size(size, op: str) -> int:
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise TypeError(f"{op}: size must be an int >= 0, got {size!r}")
    return size


def _static_nonzero(x, flat, size: int, fill_value, as_tuple: bool):
    """nonzero(size=): the first `size` non-zero indices, then fill_value (torch.nonzero_static);
    no count is read back, so it runs inside TinyJit."""
    running = flat.cast(dtypes.int32).cumsum(0)
    kth = type(flat).arange(size, device=flat.device).reshape(size, 1)
    positions = (running.reshape(1, -1) <= kth).sum(-1, dtype=dtypes.int32)
    found = kth.reshape(size) < (running[-1] if flat.shape[0] else 0)
    columns = [found.where(c, fill_value) for c in _unravel(positions, x.shape)] if x.ndim \
        else [positions]
    if as_tuple:
        return tuple(columns)
    if x.ndim == 0:
        return type(x).zeros(size, 0, dtype=dtypes.int32, device=x.device)
    return type(x).stack(*columns, dim=1)


def _running_count(flat):
    """(inclusive running count of True in a 1-D bool tensor, the total as a Python int)."""
    running = flat.cast(dtypes.int32).cumsum(0).realize()  # read once, used twice
    count = int(running[-1].item()) if flat.shape[0] else 0
    return running, count


def _true_positions(flat):
    """The positions of the True elements of a 1-D bool tensor, (count,) int32."""
    running, count = _running_count(flat)
    kth = type(flat).arange(count, device=flat.device).reshape(count, 1)
    return (running.reshape(1, -1) <= kth).sum(-1, dtype=dtypes.int32)


def _unravel(flat_positions, shape: tuple) -> list:
    """One index tensor per dim from row-major flat positions."""
    out, stride = [], 1
    for size in reversed(shape):
        out.append((flat_positions // stride) % size if size else flat_positions)
        stride *= size
    return out[::-1]
