"""Piecewise elementwise ops: abs, sign, truncation and rounding, clip/clamp with PyTorch's
gradient at the bounds, maximum/minimum, and the two-operand helpers lerp, isclose, copysign and
logaddexp. Mixed into Tensor through ElementwiseMixin (frontend/elementwise.py).
"""
from __future__ import annotations

import math
from types import MappingProxyType

from ..dtype import dtypes
from ..errors import ArgumentError, DTypeError
from ..ir import node as ir
from ..ir.ops import Op
from .composite import _with_backward

_SIGNED = MappingProxyType({
    2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64
})  # same-size int, for sign bits


def _clip_grads(grad, x, lo, hi):
    """PyTorch's clamp backward: x gets the gradient where lo <= x <= hi (bounds included),
    a bound where x is beyond it (neither, for a NaN x); when lo > hi the value is hi, which
    gets all of it. One gradient per bound that is not None."""
    inside = None
    for bound_holds in ([] if lo is None else [x >= lo]) + ([] if hi is None else [x <= hi]):
        inside = bound_holds if inside is None else inside & bound_holds
    crossed = (hi < lo) if lo is not None and hi is not None else None
    grads = [inside.where(grad, 0.0)]
    if lo is not None:
        to_lo = x < lo if crossed is None else (x < lo) & crossed.logical_not()
        grads.append(to_lo.where(grad, 0.0))
    if hi is not None:
        to_hi = hi < x if crossed is None else (hi < x) | crossed
        grads.append(to_hi.where(grad, 0.0))
    return tuple(grads)


class PiecewiseMixin:
    __slots__ = ()

    def abs(self):
        if self.dtype.is_bool:
            raise DTypeError("abs: not supported for bool tensors (as in PyTorch)")
        if self.dtype.is_float:
            return self.relu() + (-self).relu()
        if self.dtype.is_unsigned:
            return self
        return (self < 0).where(-self, self)

    def sign(self):
        if self.dtype.is_bool:
            return self
        # sign(NaN) is 0 as in PyTorch (tinygrad and numpy give NaN)
        positive = (self > 0).cast(self.dtype)
        negative = (self < 0).cast(self.dtype)
        return positive - negative

    def trunc(self):
        return self._unary(Op.TRUNC) if self.dtype.is_float else self

    def floor(self):
        if not self.dtype.is_float:
            return self
        t = self.trunc()
        return (self < t).where(t - 1, t)

    def ceil(self):
        if not self.dtype.is_float:
            return self
        t = self.trunc()
        return (self > t).where(t + 1, t)

    def round(self, decimals: int = 0):
        """Round half to even, like PyTorch."""
        if not self.dtype.is_float:
            return self
        if decimals:
            scale = 10.0 ** decimals
            return (self * scale).round() / scale
        below = self.floor()
        frac = self - below
        even = (below * 0.5).floor() * 2 == below
        up = (frac > 0.5) | ((frac == 0.5) & ~even)
        return up.where(below + 1, below)

    def frac(self):
        return self - self.trunc()

    def clip(self, min_=None, max_=None, min=None, max=None):  # noqa: A002 - PyTorch's names
        """Limit to [min_, max_] (either may be None); PyTorch's min=/max= work too."""
        min_ = min if min_ is None else min_
        max_ = max if max_ is None else max_
        if min_ is None and max_ is None:
            raise ArgumentError("clip: give at least one of min_ and max_")
        x = self
        for bound in (min_, max_):  # promote and broadcast x with both bounds
            x = x if bound is None else x._operands(bound, "clip")[0]
        lo = None if min_ is None else x._operands(min_, "clip")[1]
        hi = None if max_ is None else x._operands(max_, "clip")[1]
        out = x
        if lo is not None:  # min(max(x, lo), hi), NaN anywhere giving NaN
            out = ((out < lo) | lo.isnan()).where(lo, out)
        if hi is not None:
            out = ((hi < out) | hi.isnan()).where(hi, out)
        if not out.dtype.is_float:
            return out
        sources = tuple(t for t in (x, lo, hi) if t is not None)
        has_lo, has_hi = lo is not None, hi is not None

        def rule(grad, _, x, *bounds):
            given = iter(bounds)
            return _clip_grads(grad, x, next(given) if has_lo else None,
                               next(given) if has_hi else None)
        return _with_backward(out, sources, rule)

    clamp = clip

    def maximum(self, other):
        a, b = self._operands(other, "maximum")
        return a._wrap(ir.alu(Op.MAX, a.node, b.node))

    def minimum(self, other):
        a, b = self._operands(other, "minimum")
        if a.dtype.is_float:
            return -((-a).maximum(-b))
        return (a < b).where(a, b)

    def lerp(self, end, weight):
        from .tensor import broadcast_shape
        broadcast_shape(self.shape, *(t.shape for t in (end, weight) if hasattr(t, "shape")),
                        op="lerp")
        # from the nearer end, as PyTorch: lerp(a, b, 1) is exactly b
        if not hasattr(weight, "shape"):
            return self + (end - self) * weight if weight < 0.5 else \
                end - (end - self) * (1 - weight)
        return (weight < 0.5).where(self + (end - self) * weight, end - (end - self) * (1 - weight))

    def isclose(self, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
        """|self - other| <= atol + |rtol * other|, elementwise (torch.isclose): equal values
        (infinities too) are close, NaN is close to NaN only with equal_nan."""
        if hasattr(other, "dtype") and other.dtype != self.dtype:
            raise DTypeError(f"isclose: dtypes must match, got {self.dtype.name} and "
                             f"{other.dtype.name}")
        if rtol < 0 or atol < 0:
            raise ValueError(f"isclose: rtol and atol must be >= 0, got rtol={rtol}, "
                             f"atol={atol}")
        a, b = self._operands(other, "isclose")
        close = a == b
        if a.dtype.is_bool:
            return close
        if equal_nan and a.dtype.is_float:
            close = close | (a.isnan() & b.isnan())
        error = (a - b).abs()
        return close | (error.isfinite() & (error <= atol + (rtol * b).abs()))

    def copysign(self, other):
        """|self| with the sign of other (its sign bit: -0.0 and -NaN count as negative), a
        float tensor (torch.copysign). The gradient is ±1 times self's sign, 0 at self = 0."""
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            a = self._as_float()
            negative = a._const(math.copysign(1.0, other) < 0, dtypes.bool, ())
        else:
            a, b = self._float_operands(other, "copysign")
            if b.dtype.is_narrow_float:  # the GPU renderers cannot bitcast halves; a cast to
                b = b.cast(dtypes.float32)  # float32 keeps the sign bit (of -0.0 and NaN too)
            negative = b.bitcast(_SIGNED[b.dtype.itemsize]) < 0
        magnitude = a.abs()
        return negative.where(-magnitude, magnitude)

    def logaddexp(self, other):
        """log(exp(self) + exp(other)) without overflow: hi + log1p(exp(lo - hi)) with hi the
        larger (torch.logaddexp); equal infinities give themselves."""
        a, b = self._float_operands(other, "logaddexp")
        first = a >= b
        high, low = first.where(a, b), first.where(b, a)
        same_infinity = (a == b) & a.isinf()
        gap = same_infinity.where(0.0, low - high)  # inf - inf would be NaN (and its gradient)
        return same_infinity.where(a, high + gap.exp().log1p())
