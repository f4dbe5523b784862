"""Reduce methods: sum, max and everything built from them (min, mean, var, std, prod, argmax,
any/all, logsumexp, softmax; the running scans are scans.py). Only REDUCE_SUM and REDUCE_MAX are
primitives; `keepdim=False` is a reshape after the reduce. Mixed into Tensor (frontend/tensor.py).
"""
from __future__ import annotations

import math

from ..dtype import dtypes
from ..errors import EmptyDimError, ShapeError
from ..ir.ops import Op
from .composite import _with_backward

PRODUCT_FUSED_LEVELS = 3  # prod / cumprod: levels of multiplies fused into one kernel


class ReduceMixin:
    __slots__ = ()

    def _reduce_axes(self, axis, op: str) -> tuple[int, ...]:
        if axis is None:
            return tuple(range(self.ndim))
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        axes = tuple(self._axis(a, op) for a in axes)
        if len(set(axes)) != len(axes):
            raise ShapeError(f"{op}: repeated axis in {axis}")
        return axes if self.ndim else ()

    def _reduce(self, op: Op, axis, keepdim: bool, name: str):
        axes = self._reduce_axes(axis, name)
        node = self.node.sum(axes) if op is Op.REDUCE_SUM else self.node.max(axes)
        out = self._wrap(node)
        if keepdim:
            return out
        return out.reshape(tuple(s for i, s in enumerate(self.shape) if i not in axes))

    def sum(self, axis=None, keepdim: bool = False, dtype=None, dim=None):
        axis = dim if dim is not None else axis
        x = self._accumulate_dtype(dtype)
        if x.dtype.is_narrow_float:  # accumulated in float32, rounded once (PyTorch's)
            return x.float()._reduce(Op.REDUCE_SUM, axis, keepdim, "sum").cast(x.dtype)
        return x._reduce(Op.REDUCE_SUM, axis, keepdim, "sum")

    def max(self, axis=None, keepdim: bool = False, dim=None):
        return self._checked_max(dim if dim is not None else axis, keepdim, "max")

    def _checked_max(self, axis, keepdim: bool, op: str):
        empty = [a for a in self._reduce_axes(axis, op) if self.shape[a] == 0]
        if empty:
            raise EmptyDimError(f"{op}: cannot reduce over axis {empty[0]} of size 0 (shape "
                                f"{self.shape}): there is no value to take")
        return self._reduce(Op.REDUCE_MAX, axis, keepdim, op)

    def _max_or_lowest(self, axis=None, keepdim: bool = False):
        """max, giving the dtype's lowest value over empty axes (for any/logsumexp/softmax)."""
        return self._reduce(Op.REDUCE_MAX, axis, keepdim, "max")

    def _inverse(self):
        """An order-reversing map used to turn max into min (its own inverse)."""
        if self.dtype.is_float:
            return -self
        if self.dtype.is_bool:
            return self.logical_not()
        return self.bitwise_not()

    def min(self, axis=None, keepdim: bool = False, dim=None):
        axis = dim if dim is not None else axis
        return self._inverse()._checked_max(axis, keepdim, "min")._inverse()

    def amax(self, axis=None, keepdim: bool = False, dim=None):
        return self._checked_max(dim if dim is not None else axis, keepdim, "amax")

    def amin(self, axis=None, keepdim: bool = False, dim=None):
        axis = dim if dim is not None else axis
        return self._inverse()._checked_max(axis, keepdim, "amin")._inverse()

    def mean(self, axis=None, keepdim: bool = False, dim=None):
        axis = dim if dim is not None else axis
        x = self if self.dtype.is_float else self.cast(dtypes.default_float)
        axes = self._reduce_axes(axis, "mean")
        count = self._count(axes)
        total = x.sum(axis, keepdim)
        return total * math.nan if isinstance(count, int) and count == 0 else total / count

    def _count(self, axes):
        """How many elements a reduce over `axes` adds: an int, a symbolic size (one variable
        axis), or, where two variable axes multiply (not linear), a 0-d int tensor of the
        bound values' product, which kernels read as arguments (one kernel serves every value)."""
        static = math.prod(self.shape[a] for a in axes if isinstance(self.shape[a], int))
        symbolic = [self.shape[a] for a in axes if not isinstance(self.shape[a], int)]
        if len(symbolic) <= 1 or static == 0:
            return static * symbolic[0] if symbolic and static else static
        count = type(self)(symbolic[0], device=self.device)
        for size in symbolic[1:]:
            count = count * type(self)(size, device=self.device)
        return count * static

    def var(self, axis=None, keepdim: bool = False, correction: int = 1, dim=None):
        axis = dim if dim is not None else axis
        axes = self._reduce_axes(axis, "var")
        count = self._count(axes)
        deviation = self - self.mean(axis, keepdim=True)
        if isinstance(count, int):
            count = max(0, count - correction)
        else:  # symbolic: a tensor value, clamped as the int is
            count = (count - correction).maximum(0) if hasattr(count, "node") else \
                type(self)(count, device=self.device).sub(correction).maximum(0)
        return (deviation * deviation).sum(axis, keepdim) / count

    def std(self, axis=None, keepdim: bool = False, correction: int = 1, dim=None):
        """sqrt(var), with PyTorch's gradient 0 where std is 0 (sqrt's rule gives inf * 0 = NaN
        for a constant input)."""
        self._reduce_axes(dim if dim is not None else axis, "std")
        variance = self.var(axis, keepdim, correction, dim)
        out = variance.sqrt()
        return _with_backward(out, (variance,), lambda grad, std, _: (
            (std == 0).where(0.0, grad / (2 * std)),))

    def var_mean(self, axis=None, keepdim: bool = False, correction: int = 1, dim=None):
        axis = dim if dim is not None else axis
        return self.var(axis, keepdim, correction), self.mean(axis, keepdim)

    def std_mean(self, axis=None, keepdim: bool = False, correction: int = 1, dim=None):
        axis = dim if dim is not None else axis
        return self.std(axis, keepdim, correction), self.mean(axis, keepdim)

    def prod(self, axis=None, keepdim: bool = False, dtype=None, dim=None):
        """Product over axes as a tree of multiplies (exact for integers; the gradient at a zero
        factor is the product of the others, as in PyTorch). Integer and bool inputs give
        default_int, as sum does."""
        axis = dim if dim is not None else axis
        x = self._accumulate_dtype(dtype)
        axes = self._reduce_axes(axis, "prod")
        rest = [i for i in range(self.ndim) if i not in axes]
        kept = tuple(self.shape[i] for i in rest)
        if not axes:
            return x
        count = math.prod(self.shape[a] for a in axes)
        flat = x.permute(tuple(rest) + axes).reshape(kept + (count,))
        out = flat._product_tree()
        if keepdim:
            return out.reshape(tuple(1 if i in axes else s for i, s in enumerate(self.shape)))
        return out.reshape(kept)

    def _accumulate_dtype(self, dtype=None):
        """Self cast for sum-like accumulation: to `dtype`, else bool and small ints to
        default_int (PyTorch gives int64)."""
        if dtype is not None:
            return self.cast(dtypes.from_any(dtype))
        if self.dtype.is_bool or (self.dtype.is_int and self.dtype.itemsize < 4):
            return self.cast(dtypes.default_int)
        return self

    def _product_tree(self):
        """Product over the last axis: multiply its two halves (the odd one out padded with 1)
        until one element is left; a buffer every PRODUCT_FUSED_LEVELS levels, so a kernel
        reads at most 2**PRODUCT_FUSED_LEVELS elements per output."""
        n = self.shape[-1]
        x, level = self, 0
        if n == 0:
            return type(self).ones(*self.shape[:-1], 1, dtype=self.dtype, device=self.device)
        while n > 1:
            if level and level % PRODUCT_FUSED_LEVELS == 0:
                x = x.contiguous()
            half = (n + 1) // 2
            x = x.pad(((0, 0),) * (x.ndim - 1) + ((0, 2 * half - n),), value=1)
            lead = tuple((0, s) for s in x.shape[:-1])
            x = x.shrink(lead + ((0, half),)) * x.shrink(lead + ((half, 2 * half),))
            n, level = half, level + 1
        return x

    def any(self, axis=None, keepdim: bool = False, dim=None):
        self._reduce_axes(dim if dim is not None else axis, "any")
        return self.bool()._max_or_lowest(dim if dim is not None else axis, keepdim)

    def all(self, axis=None, keepdim: bool = False, dim=None):
        self._reduce_axes(dim if dim is not None else axis, "all")
        return self.bool().logical_not().any(axis, keepdim, dim).logical_not()

    def argmax(self, axis=None, keepdim: bool = False, dim=None):
        """Index of the first maximum (int32); a NaN counts as the maximum, as in PyTorch."""
        return self._argmax(dim if dim is not None else axis, keepdim, "argmax")

    def _argmax(self, axis, keepdim: bool, op: str):
        """A bool tensor's is its first True (tinygrad's; PyTorch raises)."""
        if axis is None:
            return self.flatten()._argmax(0, False, op)
        a = self._axis(axis, op)
        if self.ndim == 0:  # the one element is at index 0
            return self._const(0, dtypes.int32, ())
        n = self.shape[a]
        if n == 0:
            raise EmptyDimError(f"{op}: cannot reduce over axis {a} of size 0 (shape {self.shape})")
        is_max = self == self.max(a, keepdim=True)
        if self.dtype.is_float:  # the max of a row with a NaN is NaN, equal to nothing
            is_max = is_max | (self != self)
        countdown = type(self).arange(n, 0, -1, device=self.device).reshape(
            (n,) + (1,) * (self.ndim - a - 1))
        found = (is_max.cast(dtypes.int32) * countdown).max(a, keepdim)
        return n - found

    def argmin(self, axis=None, keepdim: bool = False, dim=None):
        return self._inverse()._argmax(dim if dim is not None else axis, keepdim, "argmin")

    def logsumexp(self, axis=None, keepdim: bool = False, dim=None):
        axis = dim if dim is not None else axis
        self._reduce_axes(axis, "logsumexp")
        m = self._max_or_lowest(axis, keepdim=True)
        m = (m.isinf()).where(0, m) if m.dtype.is_float else m
        out = (self - m).exp().sum(axis, keepdim=True).log() + m
        return out if keepdim else out.reshape(
            tuple(s for i, s in enumerate(self.shape) if i not in self._reduce_axes(axis, "logsumexp")))

    def softmax(self, axis=-1, dtype=None, dim=None):
        axis = self._axis(dim if dim is not None else axis, "softmax")
        x = self if dtype is None else self.cast(dtypes.from_any(dtype))
        x = x if x.dtype.is_float else x.float()
        e = (x - x._max_or_lowest(axis, keepdim=True)).exp()
        return e / e.sum(axis, keepdim=True)

    def log_softmax(self, axis=-1, dtype=None, dim=None):
        axis = self._axis(dim if dim is not None else axis, "log_softmax")
        x = self if dtype is None else self.cast(dtypes.from_any(dtype))
        x = x if x.dtype.is_float else x.float()
        shifted = x - x._max_or_lowest(axis, keepdim=True)
        return shifted - shifted.exp().sum(axis, keepdim=True).log()

    def softmin(self, axis=-1, dtype=None, dim=None):
        """softmax(-x): F.softmin."""
        return (-self).softmax(axis, dtype, dim)

    def normalize(self, p: float = 2.0, dim: int = 1, eps: float = 1e-12):
        """x / max(||x||_p over dim, eps): F.normalize (0-d and 1-d inputs normalize dim 0)."""
        if isinstance(p, bool) or not isinstance(p, (int, float)):
            raise TypeError(f"normalize: p must be a number, got {p!r}")
        x = self if self.dtype.is_float else self.float()
        axis = x._axis(dim, "normalize") if x.ndim else None
        magnitude = x.abs()
        if p == math.inf:
            norm = magnitude.max(axis, keepdim=True)
        elif p == 1:
            norm = magnitude.sum(axis, keepdim=True)
        elif p == 2:
            norm = (x * x).sum(axis, keepdim=True).sqrt()
        else:
            norm = (magnitude ** p).sum(axis, keepdim=True) ** (1.0 / p)
        return x / norm.maximum(eps)
