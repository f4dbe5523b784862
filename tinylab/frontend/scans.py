"""Running scans along an axis: cumsum, cumprod, cummax / cummin (values and indices), and
logcumsumexp, from sliding windows (blocked for long axes) and a Hillis-Steele product. Mixed
into Tensor (frontend/tensor.py); reduce.py holds the reduces they are built from.
"""
from __future__ import annotations

import math

from .. import config
from ..dtype import dtypes
from ..ir.node import reduce_identity
from ..ir.ops import Op
from .composite import _with_backward

CUMULATIVE_BLOCK = 256  # scans longer than this run in two levels to stay O(n * block)
SCAN_FUSED_LEVELS = 2  # cumprod: levels of its scan (and of their gradients) per kernel


class ScanMixin:
    __slots__ = ()

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
        SCAN_FUSED_LEVELS levels the value and its gradient each get a buffer: a level's
        gradient reads the next one's at two places, so without them one backward kernel read
        2**levels terms (1,024 elements: 3.6 MB of C, 25-43 s to compile) where now each reads
        at most 2**SCAN_FUSED_LEVELS. Work O(n log n), kernels O(log n), source O(1) each."""
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
                x = _with_backward(x.contiguous(), (x,), lambda grad, _, __: (grad.contiguous(),))
            back = x.pad(((0, 0),) * (x.ndim - 1) + ((shift, 0),), value=1)
            x = x * back.shrink(lead + ((0, n),))
            shift, level = shift * 2, level + 1
        return x.transpose(a, -1) if a != x.ndim - 1 else x

    def cummax(self, axis: int = 0, dim=None):
        """(running maximum, the index it was found at), as PyTorch and tinygrad return them;
        a 0-d tensor gives (itself, 0). The index is PyTorch's, the last position holding the
        running maximum (a NaN counts as it); tinygrad gives the first (TINYGRAD_VALUES=1)."""
        axis = dim if dim is not None else axis
        values = self._cumulative(axis, "max")
        return values, self._running_index(values, axis, "cummax")

    def cummin(self, axis: int = 0, dim=None):
        """(running minimum, its index), as cummax."""
        axis = dim if dim is not None else axis
        self._axis(axis, "cummin")
        values = self._inverse()._cumulative(axis, "max")._inverse()
        return values, self._running_index(values, axis, "cummin")

    def _running_index(self, values, axis: int, op: str):
        """int32 index j <= i where self[j] equals values[i]: the last such j (PyTorch's), or the
        first (tinygrad's). The last is the latest j where self[j] reached the running value
        (values only change where one does); the first, the latest j where the running value
        changed. Either is a running maximum of those positions: O(n) work, as the values."""
        a = self._axis(axis, op)
        if self.ndim == 0 or self.shape[a] == 0:
            return type(self).zeros(*self.shape, dtype=dtypes.int32, device=self.device)
        x, v, n = self.transpose(a, -1), values.detach().transpose(a, -1), self.shape[a]
        if config.TINYGRAD_VALUES.value:  # where the running value changed (or at the start)
            before = v.pad(((0, 0),) * (v.ndim - 1) + ((1, 0),))[..., :n]
            marked = v != before
            if self.dtype.is_float:
                marked = marked & ~(v.isnan() & before.isnan())
        else:
            marked = x == v
            if self.dtype.is_float:
                marked = marked | (x.isnan() & v.isnan())
        position = type(self).arange(n, dtype=dtypes.int32, device=self.device)
        if config.TINYGRAD_VALUES.value:
            marked = marked | (position == 0)
        index = marked.where(position, -1)._cumulative(-1, "max")
        return index.transpose(a, -1)

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
        running_max = self._cumulative(-1, "max").detach()
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
