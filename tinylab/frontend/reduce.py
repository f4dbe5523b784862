"""Reduce methods: sum, max and everything built from them (min, mean, var, std, prod, argmax,
any/all, logsumexp, cumulative ops, softmax). Only REDUCE_SUM and REDUCE_MAX are primitives;
`keepdim=False` is a reshape after the reduce. Mixed into Tensor (frontend/tensor.py).
"""
from __future__ import annotations

import math

from ..dtype import dtypes
from ..errors import DTypeError, EmptyDimError, ShapeError
from ..ir.node import reduce_identity
from ..ir.ops import Op
from .composite import _with_backward

CUMULATIVE_BLOCK = 256  # scans longer than this run in two levels to stay O(n * block)
PRODUCT_FUSED_LEVELS = 3  # prod / cumprod: levels of multiplies fused into one kernel
SCAN_FUSED_LEVELS = 2     # cumprod: levels of its scan (and of their gradients) per kernel


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
        if x.dtype == dtypes.float16:
            return x.float()._reduce(Op.REDUCE_SUM, axis, keepdim, "sum").half()
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
        return _with_backward(out, (variance,), lambda grad: (
            (out == 0).where(0.0, grad / (2 * out)),))

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
        if self.dtype.is_bool:
            raise DTypeError(f"{op}: bool tensors are not supported (as in PyTorch); cast first")
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

    # ---- cumulative ----
    def _cumulative(self, axis: int, op: str):
        """Running sum / max along an axis from sliding windows; blocked for long axes."""
        a = self._axis(axis, f"cum{op}")
        if self.ndim == 0:
            return self
        x = self.transpose(a, -1) if a != self.ndim - 1 else self
        n = x.shape[-1]
        if n > CUMULATIVE_BLOCK:
            out = x._cumulative_blocked(op)
        else:
            out = x._cumulative_small(op)
        return out.transpose(a, -1) if a != self.ndim - 1 else out

    def _cumulative_small(self, op: str):
        n = self.shape[-1]
        if n == 0:
            return self
        fill = reduce_identity(Op.REDUCE_SUM if op == "sum" else Op.REDUCE_MAX, self.dtype)
        padded = self.pad(((0, 0),) * (self.ndim - 1) + ((n - 1, 0),), value=fill)
        windows = padded._pool((n,))
        if op == "sum":
            return windows.sum(-1)
        best = windows.max(-1)
        if not self.dtype.is_float:
            return best
        # PyTorch's gradient goes to the last maximum (or NaN) of each prefix, not shared among
        # ties: read the window back at that one position
        hit = (windows == best.unsqueeze(-1)) | windows.isnan()
        position = type(self).arange(n, device=self.device)
        last = hit.where(position, -1).max(-1, keepdim=True)
        return (position == last).where(windows, 0.0).sum(-1)

    def _cumulative_blocked(self, op: str):
        n, block = self.shape[-1], CUMULATIVE_BLOCK
        blocks = math.ceil(n / block)
        fill = reduce_identity(Op.REDUCE_SUM if op == "sum" else Op.REDUCE_MAX, self.dtype)
        x = self.pad(((0, 0),) * (self.ndim - 1) + ((0, blocks * block - n),), value=fill)
        x = x.reshape(self.shape[:-1] + (blocks, block))
        inside = x._cumulative_small(op)
        totals = inside.shrink(tuple((0, s) for s in inside.shape[:-1]) + ((block - 1, block),))
        before = totals.reshape(self.shape[:-1] + (blocks,))._cumulative(-1, op)
        before = before.pad(((0, 0),) * (self.ndim - 1) + ((1, 0),), value=fill).shrink(
            tuple((0, s) for s in self.shape[:-1]) + ((0, blocks),)).unsqueeze(-1)
        if op == "sum":
            out = inside + before
        else:  # ties go to the later element (inside), as in PyTorch; NaN stays
            later = (inside >= before) | (inside != inside) if self.dtype.is_float else \
                inside >= before
            out = later.where(inside, before)
        return out.reshape(self.shape[:-1] + (blocks * block,)).shrink(
            tuple((0, s) for s in self.shape[:-1]) + ((0, n),))

    def cumsum(self, axis: int = 0, dim=None):
        axis = dim if dim is not None else axis
        x = self._accumulate_dtype()
        if self.ndim == 0:  # a 0-d tensor takes dim 0 and -1
            self._axis(axis, "cumsum")
            return x.reshape(1)._cumulative(0, "sum").reshape(())
        return x._cumulative(axis, "sum")

    def cumprod(self, axis: int = 0, dtype=None, dim=None):
        """Running product (Hillis-Steele scan: multiply by the value 2**k places back, k = 0,
        1, ...), exact for integers and with PyTorch's gradient at zeros. Every
        PRODUCT_FUSED_LEVELS levels the value and its gradient each get a buffer: a level's
        gradient reads the next one's at two places, so without them one backward kernel read
        2**levels terms (1,024 elements: 3.6 MB of C, 25-43 s to compile) where now each reads
        at most 2**PRODUCT_FUSED_LEVELS. Work O(n log n), kernels O(log n), source O(1) each."""
        axis = dim if dim is not None else axis
        x = self._accumulate_dtype(dtype)
        a = self._axis(axis, "cumprod")
        if x.ndim == 0:
            return x
        x = x.transpose(a, -1) if a != x.ndim - 1 else x
        n, shift, level = x.shape[-1], 1, 0
        lead = tuple((0, s) for s in x.shape[:-1])
        while shift < n:
            if level and level % SCAN_FUSED_LEVELS == 0:
                x = _with_backward(x.contiguous(), (x,), lambda grad: (grad.contiguous(),))
            back = x.pad(((0, 0),) * (x.ndim - 1) + ((shift, 0),), value=1)
            x = x * back.shrink(lead + ((0, n),))
            shift, level = shift * 2, level + 1
        return x.transpose(a, -1) if a != x.ndim - 1 else x

    def cummax(self, axis: int = 0, dim=None):
        """Running maximum (the values; PyTorch also returns indices)."""
        axis = dim if dim is not None else axis
        return self._cumulative(axis, "max")

    def cummin(self, axis: int = 0, dim=None):
        axis = dim if dim is not None else axis
        self._axis(axis, "cummin")
        return self._inverse()._cumulative(axis, "max")._inverse()

    def logcumsumexp(self, axis: int = 0, dim=None):
        """log(cumsum(exp(x))) along an axis without overflow or underflow (torch.logcumsumexp;
        tinygrad's name and default axis). Each prefix is shifted by its own running maximum,
        so every log sees a sum of at least 1; long axes run in blocks of CUMULATIVE_BLOCK
        joined with logaddexp."""
        a = self._axis(dim if dim is not None else axis, "logcumsumexp")
        x = self if self.dtype.is_float else self.cast(dtypes.default_float)
        if x.ndim == 0 or x.shape[a] == 0:
            return x
        x = x.transpose(a, -1)
        out = x._logcumsumexp_blocked() if x.shape[-1] > CUMULATIVE_BLOCK \
            else x._logcumsumexp_small()
        return out.transpose(a, -1)

    def _logcumsumexp_small(self):
        """Prefix i sums exp(x_j - m_i) over j <= i, m_i the running max (a constant for the
        gradient: the exact result does not depend on it)."""
        n = self.shape[-1]
        running_max = self.cummax(-1).detach()
        shift = running_max.isinf().where(0.0, running_max)  # all -inf (or an inf) so far
        position = type(self).arange(n, device=self.device)
        included = position.reshape(1, n) <= position.reshape(n, 1)  # [i, j]: j <= i
        terms = included.where(self.unsqueeze(-2) - shift.unsqueeze(-1), -math.inf)
        return terms.exp().sum(-1).log() + shift

    def _logcumsumexp_blocked(self):
        n, block = self.shape[-1], CUMULATIVE_BLOCK
        blocks = math.ceil(n / block)
        lead = ((0, 0),) * (self.ndim - 1)
        x = self.pad(lead + ((0, blocks * block - n),), value=-math.inf)
        inside = x.reshape(self.shape[:-1] + (blocks, block))._logcumsumexp_small()
        totals = inside[..., -1]  # each block's log-sum-exp
        before = totals._logcumsumexp_small() if blocks <= CUMULATIVE_BLOCK \
            else totals._logcumsumexp_blocked()
        before = before.pad(lead + ((1, 0),), value=-math.inf)[..., :blocks].unsqueeze(-1)
        out = inside.logaddexp(before).reshape(self.shape[:-1] + (blocks * block,))
        return out[..., :n]
