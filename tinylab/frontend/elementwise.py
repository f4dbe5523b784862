"""Elementwise methods: arithmetic with PyTorch's promotion and broadcasting, math functions,
activations, comparisons, logical and bitwise ops, casts. Each lowers to a few primitive ALU
ops (exp is EXP2 of a scaled input, tanh comes from sigmoid...), so the scheduler can fuse them.
Mixed into Tensor (frontend/tensor.py).
"""
from __future__ import annotations

import functools
import math

from ..dtype import dtypes
from ..errors import DTypeError
from ..ir import node as ir
from ..ir.ops import Op
from . import autograd

LOG2_E = 1 / math.log(2)
LN_2 = math.log(2)


def _horner(x, coefficients):
    """c0 + c1*x + c2*x² + ... evaluated from the inside out."""
    out = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        out = out * x + c
    return out


def _half_in_float(method):
    """float16 in, float16 out, computed in float32 and rounded once (as PyTorch's CPU kernels
    do): a polynomial or a ratio rounded to float16 after every op drifts far from it."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if self.dtype == dtypes.float16:
            return method(self.float(), *args, **kwargs).half()
        return method(self, *args, **kwargs)
    return wrapper
def _with_backward(out, sources: tuple, rule):
    """`out` with `rule(grad)` (Tensors in, one Tensor or None per source out) as its backward,
    in place of the rules of the chain that computed it (frontend/autograd.py `composite`)."""
    def node_rule(grad_node):
        grads = rule(out._wrap(grad_node))
        return tuple(None if g is None else g.node for g in grads)
    autograd.composite(out.node, tuple(s.node for s in sources), node_rule)
    return out


def _pow_grads(grad, base, exp, out):
    """PyTorch's pow_backward and pow_backward_exponent."""
    d_base = (exp == 0).where(0.0, grad * exp * base._pow_value(exp - 1))
    d_exp = ((base == 0) & (exp >= 0)).where(0.0, grad * out * base.log())
    return d_base, d_exp


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


class ElementwiseMixin:
    __slots__ = ()

    # ---- helpers ----
    def _as_float(self):
        return self if self.dtype.is_float else self.cast(dtypes.default_float)

    def _unary(self, op: Op):
        x = self if self.dtype.is_float else self.cast(dtypes.default_float)
        return x._wrap(ir.alu(op, x.node))

    def _float_operands(self, other, name: str, reverse: bool = False):
        a, b = self._operands(other, name, reverse)
        if not a.dtype.is_float:
            a, b = a.cast(dtypes.default_float), b.cast(dtypes.default_float)
        return a, b

    def _integer_only(self, name: str):
        if self.dtype.is_float:
            raise DTypeError(f"{name}: needs integer or bool tensors, got {self.dtype.name}")

    # ---- arithmetic ----
    def add(self, other, reverse: bool = False):
        return self._binary(Op.ADD, other, "add", reverse)

    def sub(self, other, reverse: bool = False):
        if self.dtype.is_bool or isinstance(other, bool) or getattr(other, "dtype", None) is \
                dtypes.bool:
            raise DTypeError("sub: subtraction with a bool tensor or a bool is not supported (as "
                             "in PyTorch); use ^ or logical_xor")
        a, b = self._operands(other, "sub", reverse)
        return a._wrap(ir.alu(Op.ADD, a.node, ir.alu(Op.NEG, b.node)))

    def mul(self, other, reverse: bool = False):
        return self._binary(Op.MUL, other, "mul", reverse)

    def div(self, other, reverse: bool = False, rounding_mode: str | None = None):
        """self / other: true division (a float result) with rounding_mode=None, as a * (1/b),
        within an ulp of the correctly rounded quotient PyTorch gives; else rounded toward zero
        ("trunc", of the correctly rounded quotient) or down ("floor" is floordiv) in the
        operands' dtype (torch.div)."""
        if rounding_mode not in (None, "trunc", "floor"):
            raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got "
                             f"{rounding_mode!r}")
        if rounding_mode is not None:
            a, b = self._operands(other, "div", reverse)
            _check_integer_division(a, other, reverse, "div")
        if rounding_mode == "floor":
            return self.floordiv(other, reverse)
        if rounding_mode == "trunc":
            if a.dtype.is_float:
                return _rounded_quotient(a, b).trunc()
            return a._wrap(ir.alu(Op.IDIV, a.node, b.node))
        a, b = self._float_operands(other, "div", reverse)
        return a._wrap(ir.alu(Op.MUL, a.node, ir.alu(Op.RECIPROCAL, b.node)))

    def floordiv(self, other, reverse: bool = False):
        """Floor division (Python / PyTorch semantics): for floats, the truncated quotient less
        one where the remainder and the divisor differ in sign; ±inf and NaN as PyTorch."""
        a, b = self._operands(other, "floordiv", reverse)
        _check_integer_division(a, other, reverse, "floordiv")
        if a.dtype.is_float:
            quotient = _trunc_quotient(a, b)
            remainder = _fmod(a, b, quotient)
            floor = quotient - ((remainder != 0) & ((remainder < 0) != (b < 0))).cast(a.dtype)
            floor = (remainder.isnan() & (b != 0)).where(math.nan, floor)
            return (b == 0).where(a / b, floor)
        q = a._wrap(ir.alu(Op.IDIV, a.node, b.node))
        if a.dtype.is_unsigned or a.dtype.is_bool:
            return q
        r = a._wrap(ir.alu(Op.MOD, a.node, b.node))
        adjust = (r != 0) & ((r < 0) != (b < 0))
        return q - adjust.cast(q.dtype)

    def mod(self, other, reverse: bool = False):
        """Remainder with the divisor's sign (Python % and torch.remainder)."""
        a, b = self._operands(other, "mod", reverse)
        if a.dtype.is_float:
            r = _fmod(a, b, _trunc_quotient(a, b))
            return ((r != 0) & ((r < 0) != (b < 0))).where(r + b, r)
        r = a._wrap(ir.alu(Op.MOD, a.node, b.node))
        if a.dtype.is_unsigned or a.dtype.is_bool:
            return r
        fix = (r != 0) & ((r < 0) != (b < 0))
        return fix.where(r + b, r)

    def fmod(self, other):
        a, b = self._operands(other, "fmod")
        if a.dtype.is_float:
            return _fmod(a, b, _trunc_quotient(a, b))
        return a._wrap(ir.alu(Op.MOD, a.node, b.node))

    def neg(self):
        if self.dtype.is_bool:
            raise DTypeError("neg: negation of a bool tensor is not supported; use logical_not")
        return self._wrap(ir.alu(Op.NEG, self.node))

    def pow(self, exponent, reverse: bool = False):
        """self ** exponent with C's pow at the special points (0, ±inf, NaN, negative bases,
        signed zeros) and PyTorch's gradients: exponent * base^(exponent-1) (0 where the
        exponent is 0) and pow * ln(base) (0 where the base is 0 and the exponent >= 0)."""
        if reverse:
            a, b = self._operands(exponent, "pow", True)
            return a.pow(b)
        if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
            special = self._pow_scalar(exponent)
            if special is not None:
                return special
        if self.dtype.is_int and not isinstance(exponent, float) and \
                not (hasattr(exponent, "dtype") and exponent.dtype.is_float):
            base, exp = self._operands(exponent, "pow")
            return base._int_pow(exp, exponent if isinstance(exponent, int) else None)
        base, exp = self._float_operands(exponent, "pow")
        out = base._pow_value(exp)
        return _with_backward(out, (base, exp), lambda grad: _pow_grads(grad, base, exp, out))

    def _int_pow(self, exp, known: int | None):
        """Exact integer power by squaring, wrapping like C; a negative exponent gives 0
        unless |base| is 1 (PyTorch's integer pow). `known`: the exponent as a Python int."""
        if known is not None and known < 0:
            raise ValueError(f"pow: integers to negative integer powers are not allowed "
                             f"(exponent {known}), as in PyTorch; use a float tensor")
        bits = known.bit_length() if known is not None else exp.dtype.bits - 1
        result, power = self.ones_like(dtype=self.dtype), self
        for k in range(bits):
            result = ((exp & (1 << k)) != 0).where(result * power, result)
            if k + 1 < bits:
                power = power * power
        if known is not None:
            return result
        odd = (exp & 1) != 0
        unit = (self == 1).where(1, (self == -1).where(odd.where(-1, 1), 0)).cast(self.dtype)
        return (exp < 0).where(unit, result)

    def _pow_value(self, exp):
        """self ** exp for float tensors of one shape, from exp2(exp * log2|self|)."""
        magnitude = (exp * self.abs().log2()).exp2()
        is_int_exp = exp == exp.trunc()
        odd = is_int_exp & ((exp.abs() % 2) == 1)
        sign_bit = (self < 0) | (self.reciprocal() < 0)  # negative, or -0.0
        out = sign_bit.where(odd.where(-magnitude, magnitude), magnitude)
        out = ((self < 0) & self.isinf().logical_not() & is_int_exp.logical_not()).where(
            math.nan, out)  # a negative base to a fractional power (-inf's are ±inf or 0)
        unit = (exp == 0) | (self == 1) | ((self.abs() == 1) & exp.isinf())
        return unit.where(1.0, out)

    def _pow_scalar(self, exponent):
        if exponent == 0:
            return self.ones_like() if self.dtype.is_float else self.ones_like(dtype=self.dtype)
        if exponent == 1:
            return self + 0 if not self.dtype.is_bool else self
        if exponent == 0.5 and self.dtype.is_float:
            return self.sqrt()
        if exponent == -0.5 and self.dtype.is_float:  # as PyTorch: rsqrt, so -0.0 gives -inf
            return _with_backward(self.rsqrt(), (self,), lambda grad: (
                grad * -0.5 * self._pow_value(self._const(-1.5)),))
        if isinstance(exponent, int) or float(exponent).is_integer():
            n = int(exponent)
            if abs(n) <= 16:
                result, base, k = None, self, abs(n)
                while k:
                    if k & 1:
                        result = base if result is None else result * base
                    k >>= 1
                    if k:
                        base = base * base
                if n < 0:  # (the chain's rules give 0 * inf at 0: PyTorch's n x^(n-1))
                    return _with_backward(result.reciprocal(), (self,), lambda grad: (
                        grad * n * self ** (n - 1),)) if self.dtype.is_float else None
                return result
        return None

    def reciprocal(self):
        return self._unary(Op.RECIPROCAL)

    def sqrt(self):
        return self._unary(Op.SQRT)

    def rsqrt(self):
        return self.sqrt().reciprocal()

    def exp(self):
        x = self if self.dtype.is_float else self.cast(dtypes.default_float)
        return (x * LOG2_E)._unary(Op.EXP2)

    def exp2(self):
        return self._unary(Op.EXP2)

    def log(self):
        return self._unary(Op.LOG2) * LN_2

    def log2(self):
        return self._unary(Op.LOG2)

    def log10(self):
        return self.log2() * (LN_2 / math.log(10))

    @_half_in_float
    def log1p(self):
        """log(1 + x); a Taylor series for |x| < 1/4, where 1 + x would round away x's digits."""
        x = self._as_float()
        small = x.abs() < 0.25
        s = small.where(x, 0.0)  # each branch reads only its own range (finite gradients)
        series = s * _horner(-s, [1 / k for k in range(1, 11)])
        return small.where(series, small.where(1.0, x + 1).log())

    @_half_in_float
    def expm1(self):
        """exp(x) - 1; a Taylor series for |x| < 1/2, where the subtraction would cancel."""
        x = self._as_float()
        small = x.abs() < 0.5
        s = small.where(x, 0.0)
        series = s * _horner(s, [1 / math.factorial(k) for k in range(1, 10)])
        return small.where(series, x.exp() - 1)

    def sin(self):
        return self._unary(Op.SIN)

    @_half_in_float
    def cos(self):
        """sin(pi/2 - |x|) for |x| <= pi (relative accuracy at the zero pi/2); beyond,
        1 - 2 sin²(x/2), whose x/2 is exact where pi/2 - x would round x's digits away."""
        x = self._as_float()
        near = x.abs() <= math.pi
        inside, outside = near.where(x, 0.0), near.where(0.0, x)
        half_sine = (outside * 0.5).sin()
        return near.where((math.pi / 2 - inside.abs()).sin(), 1 - 2 * half_sine * half_sine)

    @_half_in_float
    def tan(self):
        return self.sin() / self.cos()

    @_half_in_float
    def asin(self):
        # asin x = 2 atan(x / (1 + sqrt((1 - x)(1 + x)))): no division by 0 at ±1, where the
        # gradient is then inf as in PyTorch
        x = self._as_float()
        return 2 * (x / (1 + (1 - x).sqrt() * (1 + x).sqrt())).atan()

    def square(self):
        x = self.cast(dtypes.default_int) if self.dtype.is_bool else self  # bool² is int
        return x * x

    @_half_in_float
    def acos(self):
        # pi/2 - asin x for x <= 0; 2 atan(sqrt((1 - x) / (1 + x))) for x > 0, which keeps its
        # digits near 1 (each branch reads only its own range)
        x = self._as_float()
        positive = x > 0
        left, right = positive.where(0.0, x), positive.where(x, 0.5)
        return positive.where(2 * ((1 - right).sqrt() / (1 + right).sqrt()).atan(),
                              math.pi / 2 - left.asin())

    @_half_in_float
    def atan(self):
        """Cephes atanf: reduce |x| to [0, tan(pi/8)] with atan x = ±pi/4 + atan((x∓1)/(x±1)) or
        ±pi/2 - atan(1/x), then an odd degree-9 polynomial (float32-accurate; smooth at 0)."""
        x = self if self.dtype.is_float else self.cast(dtypes.default_float)
        a, negative = x.abs(), x < 0
        big, middle = a > 2.414213562373095, a > 0.4142135623730950
        # each branch reads only its own range, so unused branches give no inf * 0 gradients
        only_middle = middle & ~big
        low, high = (only_middle & negative).where(x, 0.0), (only_middle & ~negative).where(x, 0.0)
        shifted = negative.where((low + 1) / (1 - low), (high - 1) / (high + 1))
        t = big.where(-big.where(x, 1.0).reciprocal(), middle.where(shifted, x))
        offset = big.where(math.pi / 2, middle.where(math.pi / 4, 0.0))
        offset = negative.where(-offset, offset)
        z = t * t
        poly = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z
                - 3.33329491539e-1) * z * t + t
        return offset + poly

    @_half_in_float
    def sinh(self):
        # (e + e/(e + 1)) / 2 with e = expm1(x) keeps the digits near 0; beyond, for t = |x|,
        # b - 1/(4b) with b = e^(t - ln 2), which stays finite up to sinh's own overflow
        x = self._as_float()
        small, negative = x.abs() < 1, x < 0
        e = small.where(x, 0.0).expm1()
        t = small.where(1.0, negative.where(-x, x))
        b = (t - LN_2).exp()
        large = b - 0.25 / b
        return small.where((e + e / (e + 1)) / 2, negative.where(-large, large))

    @_half_in_float
    def cosh(self):
        # 1 + 2 sinh²(x/2) near 0 (its gradient sinh(x) then keeps its digits there too);
        # beyond, b + 1/(4b) with b = e^(|x| - ln 2), finite up to cosh's own overflow
        x = self._as_float()
        small = x.abs() < 1
        half_sinh = (small.where(x, 0.0) / 2).sinh()
        b = (small.where(1.0, x).abs() - LN_2).exp()
        return small.where(1 + 2 * half_sinh * half_sinh, b + 0.25 / b)

    @_half_in_float
    def tanh(self):
        # e / (e + 2) with e = expm1(2x): no cancellation near 0; |x| > 9 is ±1 in float32
        x = self._as_float()
        saturated = x.abs() > 9
        e = (2 * saturated.where(0.0, x)).expm1()
        return saturated.where(x.sign(), e / (e + 2))

    @_half_in_float
    def asinh(self):
        # odd: for t = |x|, log1p(t + t²/(1 + sqrt(1 + t²))), or log(2t) once t² would overflow
        x = self._as_float()
        negative = x < 0
        t = negative.where(-x, x)  # |x| with derivative ±1 at 0 (abs has 0 there)
        huge = t > 1e4
        u = huge.where(0.0, t)
        near = (u + u * u / (1 + (u * u + 1).sqrt())).log1p()
        out = huge.where(huge.where(t, 1.0).log() + LN_2, near)
        return negative.where(-out, out)

    @_half_in_float
    def acosh(self):
        # log1p((x - 1) + sqrt((x - 1)(x + 1))) keeps the digits near 1; log(2x) for huge x;
        # NaN below 1
        x = self._as_float()
        huge, below = x > 1e4, x < 1
        u = (huge | below).where(2.0, x)  # unread there: any point with a finite slope
        near = ((u - 1) + (u - 1).sqrt() * (u + 1).sqrt()).log1p()
        # below 1 the value is NaN; the gradient is PyTorch's 1/sqrt(x² - 1): finite for x < -1,
        # NaN only on (-1, 1). A zero-valued term (x - x.detach()) carries it.
        slope = below.where(x * x - 1, 1.0).rsqrt().detach()
        outside = (x - x.detach()) * slope + math.nan
        return below.where(outside, huge.where(huge.where(x, 1.0).log() + LN_2, near))

    @_half_in_float
    def atanh(self):
        # (log1p(x) - log1p(-x)) / 2: no cancellation near 0, ±inf with an infinite gradient at
        # ±1 as in PyTorch
        x = self._as_float()
        return (x.log1p() - (-x).log1p()) * 0.5

    @_half_in_float
    def erf(self):
        """Its Maclaurin series for |x| < 1/2 (relative accuracy near 0); beyond, Abramowitz-
        Stegun 7.1.26 (|error| < 1.5e-7)."""
        x = self._as_float()
        negative = x < 0
        a = negative.where(-x, x)
        a = (a > 9).where(9.0, a)  # erf is ±1 in float32 there; exp(-a²) keeps a finite gradient
        small = a < 0.5
        s = small.where(x, 0.0)
        series = s * _horner(-s * s, [1 / (math.factorial(k) * (2 * k + 1)) for k in range(7)])
        t = 1.0 / (1.0 + 0.3275911 * a)
        y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
                   + 0.254829592) * t * (-a * a).exp()
        return small.where(series * (2 / math.sqrt(math.pi)), negative.where(-y, y))

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
            raise ValueError("clip: give at least one of min_ and max_")
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
        return _with_backward(out, sources, lambda grad: _clip_grads(grad, x, lo, hi))

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
            if b.dtype == dtypes.float16:  # the GPU renderers cannot bitcast halves; a cast to
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

    # ---- logic ----
    def logical_not(self):
        if self.dtype.is_bool:
            return self._wrap(ir.alu(Op.NEG, self.node))
        return self == 0

    def logical_and(self, other):
        return self.bool().bitwise_and(other.bool() if hasattr(other, "bool") else bool(other))

    def logical_or(self, other):
        return self.bool().bitwise_or(other.bool() if hasattr(other, "bool") else bool(other))

    def logical_xor(self, other):
        return self.bool().bitwise_xor(other.bool() if hasattr(other, "bool") else bool(other))

    def bitwise_and(self, other, reverse: bool = False):
        self._integer_only("bitwise_and")
        return self._bitwise(Op.AND, other, "bitwise_and", reverse)

    def bitwise_or(self, other, reverse: bool = False):
        self._integer_only("bitwise_or")
        return self._bitwise(Op.OR, other, "bitwise_or", reverse)

    def bitwise_xor(self, other, reverse: bool = False):
        self._integer_only("bitwise_xor")
        return self._bitwise(Op.XOR, other, "bitwise_xor", reverse)

    def _bitwise(self, op: Op, other, name: str, reverse: bool):
        if hasattr(other, "dtype") and other.dtype.is_float:
            raise DTypeError(f"{name}: needs integer or bool tensors, got {other.dtype.name}")
        if isinstance(other, float):
            raise DTypeError(f"{name}: needs integer or bool operands, got float {other}")
        return self._binary(op, other, name, reverse)

    def bitwise_not(self):
        self._integer_only("bitwise_not")
        if self.dtype.is_bool:
            return self.logical_not()
        return self._wrap(ir.alu(Op.XOR, self.node, self.node.const_like(-1)))

    def lshift(self, bits):
        self._integer_only("lshift")
        a, b = self._operands(bits, "lshift")
        return a._wrap(ir.alu(Op.SHL, a.node, b.node))

    def rshift(self, bits):
        self._integer_only("rshift")
        a, b = self._operands(bits, "rshift")
        return a._wrap(ir.alu(Op.SHR, a.node, b.node))

    def isnan(self):
        return self != self if self.dtype.is_float else self.full_like(False, dtype=dtypes.bool)

    def isinf(self, detect_positive: bool = True, detect_negative: bool = True):
        """True at +inf (if detect_positive) and -inf (if detect_negative), as tinygrad."""
        if not self.dtype.is_float or not (detect_positive or detect_negative):
            return self.full_like(False, dtype=dtypes.bool)
        if detect_positive and detect_negative:
            return self.abs() == math.inf
        return self == (math.inf if detect_positive else -math.inf)

    def isfinite(self):
        return (self.isnan() | self.isinf()).logical_not()

    def where(self, x, y):
        for name, value in (("x", x), ("y", y)):
            if not hasattr(value, "node") and not isinstance(value, (bool, int, float)):
                raise TypeError(f"where: {name} must be a tensor or a number, got "
                                f"{type(value).__name__} {value!r}")
        cond = self if self.dtype.is_bool else self != 0
        if not hasattr(x, "node"):
            x = cond._const(x, _value_dtype(x, y), ())
        if not hasattr(y, "node"):
            y = cond._const(y, _value_dtype(y, x), ())
        x, y = x._operands(y, "where")
        from .tensor import broadcast_shape
        shape = broadcast_shape(cond.shape, x.shape, op="where")
        cond, x, y = (cond._broadcast_to(shape, "where"), x._broadcast_to(shape, "where"),
                      y._broadcast_to(shape, "where"))
        return x._wrap(ir.alu(Op.WHERE, cond.node, x.node, y.node))

    def masked_fill(self, mask, value):
        """self with `value` where the bool `mask` (broadcast) is True."""
        if not hasattr(mask, "node") or not mask.dtype.is_bool:
            raise TypeError(f"masked_fill: mask must be a bool tensor, got "
                            f"{getattr(mask, 'dtype', type(mask).__name__)}")
        if isinstance(value, (bool, int, float)) and not self.dtype.is_float:
            value = bool(value) if self.dtype.is_bool else int(value)  # the tensor's dtype wins
        return mask.where(value, self)

    # ---- casts ----
    def cast(self, dtype):
        dtype = dtypes.from_any(dtype)
        return self._wrap(ir.cast(self.node, dtype))

    def bitcast(self, dtype):
        dtype = dtypes.from_any(dtype)
        if dtype.itemsize != self.dtype.itemsize:
            raise DTypeError(f"bitcast: {self.dtype.name} and {dtype.name} differ in size")
        return self._wrap(ir.cast(self.node, dtype, bitcast=True))

    def float(self):
        return self.cast(dtypes.float32)

    def half(self):
        return self.cast(dtypes.float16)

    def double(self):
        return self.cast(dtypes.float64)

    def int(self):
        return self.cast(dtypes.int32)

    def long(self):
        return self.cast(dtypes.int64)

    def bool(self):
        return self.cast(dtypes.bool)


def _trunc_quotient(a, b):
    """trunc(a / b) exactly while |a / b| < 2**24, for floats. a * (1/b) can round across an
    integer (41 * (1/41) is 0.99999994), so the remainder |a| - q|b| moves q by one where it
    leaves [0, |b|). Piecewise constant: no gradient flows through it."""
    dividend, divisor = a.abs(), b.abs()
    q = (dividend / divisor).floor()
    r = dividend - q * divisor
    q = q + (r >= divisor).cast(q.dtype) - (r < 0).cast(q.dtype)
    return ((a < 0) != (b < 0)).where(-q, q)


def _fmod(a, b, quotient):
    """a - trunc(a / b) * b (C's fmod): a itself for a finite a over an infinite b."""
    return (b.isinf() & a.isfinite()).where(a, a - quotient * b)


def _rounded_quotient(a, b):
    """a / b correctly rounded in nearly every case: one Newton step on a * (1/b), whose
    residual a - q*b is exact where the compiler contracts it to a fused multiply-add."""
    reciprocal = b.reciprocal()
    q = a * reciprocal
    correction = (a - q * b) * reciprocal
    return (q.isfinite() & correction.isfinite()).where(q + correction, q)


def _check_integer_division(a, other, reverse: bool, op: str) -> None:
    """Rounded division of bools is undefined, of integers by a literal 0 too (PyTorch raises
    ZeroDivisionError); a zero inside a tensor divisor is not checked (it is lazy)."""
    if a.dtype.is_bool:
        raise DTypeError(f"{op}: rounded division of bool tensors is not supported")
    if not a.dtype.is_float and not reverse and isinstance(other, int) and other == 0:
        raise ZeroDivisionError(f"{op}: integer division of a {a.dtype.name} tensor by zero")


_SIGNED = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}  # same-size int, for sign bits


def _value_dtype(value, other):
    """dtype for a Python scalar branch of where(), given the other branch."""
    if hasattr(other, "dtype"):
        from ..dtype import result_dtype
        return result_dtype(other.dtype, value)
    return dtypes.of_python(value) if not isinstance(other, float) else dtypes.default_float
