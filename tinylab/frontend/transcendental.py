"""Math functions of one tensor: sqrt, exp and log (from EXP2 and LOG2), the trigonometric and
hyperbolic functions and their inverses, erf. Each is a composite of primitive ALU ops chosen
for accuracy near its hard points; float16 ones compute in float32 and round once.
Mixed into Tensor through ElementwiseMixin (frontend/elementwise.py).
"""
from __future__ import annotations

import functools
import math

from ..dtype import dtypes
from ..ir.ops import Op, primitive

LOG2_E = 1 / math.log(2)
LN_2 = math.log(2)


def _horner(x, coefficients):
    """c0 + c1*x + c2*x² + ... evaluated from the inside out."""
    out = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        out = out * x + c
    return out


def _half_in_float(method):
    """float16 (or bfloat16) in and out, computed in float32 and rounded once (as PyTorch's CPU
    kernels do): a polynomial or a ratio rounded to 16 bits after every op drifts far from it."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if self.dtype.is_narrow_float:
            return method(self.float(), *args, **kwargs).cast(self.dtype)
        return method(self, *args, **kwargs)
    return wrapper


class TranscendentalMixin:
    __slots__ = ()

    def reciprocal(self):
        return self._unary(primitive("reciprocal"))

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

    def atan2(self, other):
        """The angle of the point (other, self), in [-π, π] (torch.atan2(self, other)): the
        atan of the smaller over the larger magnitude (no overflow, both infinite: π/4), folded
        into the octant, the sign taken from self (atan2(±0, -0) = ±π). d/dy = x/(x²+y²),
        d/dx = -y/(x²+y²)."""
        from . import autograd
        y, x = self._float_operands(other, "atan2")
        if y.dtype == dtypes.float16:
            return y.float().atan2(x.float()).half()
        ay, ax = y.abs(), x.abs()
        steep = ay > ax
        low, high = steep.where(ax, ay), steep.where(ay, ax)
        both_inf = low.isinf()
        ratio = both_inf.where(1.0, (high == 0).where(0.0, low / both_inf.where(1.0, high)))
        t = ratio.atan()  # differentiable: jvp and vmap transform this chain (the rule is reverse)
        t = steep.where(math.pi / 2 - t, t)
        x_negative = (x < 0) | ((x == 0) & (x.detach().reciprocal() < 0))   # -0.0 too
        t = x_negative.where(math.pi - t, t)
        out = (y.isnan() | x.isnan()).where(math.nan, t.copysign(y.detach()))
        squared = x * x + y * y

        held, cls = (x.node, y.node, squared.node), type(self)

        def rule(grad, _):  # (d/dy, d/dx) = (x, -y) / (x² + y²); nodes held, no Tensor
            g, x_, y_, squared_ = map(cls, (grad, *held))
            return (g * x_ / squared_).node, (-g * y_ / squared_).node
        autograd.composite(out.node, (y.node, x.node), rule)
        return out

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
    def erfc(self):
        """1 - erf(x) without the cancellation: for x >= 1/2, Numerical Recipes' erfcc
        (t·exp(-x² + a Chebyshev fit in t = 1/(1 + x/2)), fractional error < 1.2e-7, so the
        tail keeps its relative accuracy: erfc(3.5) = 7.43e-7); 2 - erfc(-x) below -1/2; 1 - erf
        near 0. d/dx = -2/√π·exp(-x²) (the composite's own derivative)."""
        x = self._as_float()
        negative = x < 0
        a = negative.where(-x, x)
        near = a < 0.5
        z = near.where(1.0, a)
        t = 1.0 / (1.0 + 0.5 * z)
        fit = _horner(t, [-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
                          0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277])
        tail = t * (-z * z + fit).exp()
        far = negative.where(2.0 - tail, tail)
        return near.where(1.0 - x.erf(), far)

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
