"""Elementwise arithmetic with PyTorch's promotion and broadcasting (add ... pow, division with
its rounding modes) and casts. ElementwiseMixin also gathers the other elementwise families:
math functions (transcendental.py), sign/rounding/clamping (piecewise.py) and logical, bitwise
and selection ops (logic.py). Each lowers to a few primitive ALU ops, so the scheduler can fuse
them. Mixed into Tensor (frontend/tensor.py).
"""
from __future__ import annotations

import math

from ..dtype import dtypes
from ..errors import ArgumentError, DTypeError
from ..ir import node as ir
from ..ir.ops import Op
from .composite import _with_backward
from .logic import LogicMixin
from .piecewise import PiecewiseMixin
from .transcendental import TranscendentalMixin

__all__ = ["ElementwiseMixin", "_with_backward"]  # _with_backward: its older home, still imported


def _pow_grads(grad, base, exp, out):
    """PyTorch's pow_backward and pow_backward_exponent."""
    d_base = (exp == 0).where(0.0, grad * exp * base._pow_value(exp - 1))
    d_exp = ((base == 0) & (exp >= 0)).where(0.0, grad * out * base.log())
    return d_base, d_exp


class ElementwiseMixin(TranscendentalMixin, PiecewiseMixin, LogicMixin):
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
            raise ArgumentError(f"div: rounding_mode must be None, 'trunc' or 'floor', got "
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
        return a._wrap(a.node / b.node)   # a * reciprocal(b) (ir/node.py)

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
        if isinstance(exponent, float) and not self.dtype.is_float:
            return self._as_float().pow(exponent)  # int ** 2.0 is a float, as in PyTorch
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
        return _with_backward(out, (base, exp), lambda grad, power, b, e: _pow_grads(grad, b, e, power))

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
            return _with_backward(self.rsqrt(), (self,), lambda grad, _, x: (
                grad * -0.5 * x._pow_value(x._const(-1.5)),))
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
                    return _with_backward(result.reciprocal(), (self,), lambda grad, _, x: (
                        grad * n * x ** (n - 1),)) if self.dtype.is_float else None
                return result
        return None

    # ---- casts ----
    def cast(self, dtype):
        dtype = dtypes.from_any(dtype)
        return self._wrap(ir.cast(self.node, dtype))

    def bitcast(self, dtype):
        dtype = dtypes.from_any(dtype)
        if dtype.itemsize != self.dtype.itemsize:
            raise DTypeError(f"bitcast: {self.dtype.name} and {dtype.name} differ in size")
        return self._view(ir.cast(self.node, dtype, bitcast=True))  # a view, as torch's view(dtype)

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
    r = _residual(dividend, q, divisor)
    q = q + (r >= divisor).cast(q.dtype) - (r < 0).cast(q.dtype)
    return ((a < 0) != (b < 0)).where(-q, q)


def _fmod(a, b, quotient):
    """a - trunc(a / b) * b (C's fmod): a itself for a finite a over an infinite b. The
    gradient is the formula's: 1 for a, -trunc(a / b) for b."""
    remainder = _with_backward(_residual(a, quotient, b), (a, b),
                               lambda grad, _, __, ___, q: (grad, -grad * q), saved=(quotient,))
    return (b.isinf() & a.isfinite()).where(a, remainder)


# float32's 24-bit significand splits by a mask into two halves of 12 bits, whose products are
# exact floats (float64's 53 bits do not split so: the plain formula serves it, and float16)
_HIGH_HALF = -(1 << 12)


def _residual(a, q, b):
    """a - q * b for an integral q, exact for float32 wherever the result is a float (the
    remainder a division leaves always is): the product split into halves whose partial
    products are exact (Dekker), so it holds without a fused multiply-add. Where the compiler
    contracts a - q*b into one, the plain formula is exact too, but SSE4 has none: there
    4e6 % 1.7 was off by up to 1.4. The product goes through a select, so that no
    contraction reorders the sums that use it."""
    if a.dtype != dtypes.float32:
        return a - q * b

    def halves(x):
        high = (x.bitcast(dtypes.int32) & _HIGH_HALF).bitcast(dtypes.float32)
        return high, x - high

    product = q * b
    product = (product != product).where(0.0, product)  # a select: not contracted into a sum
    (qh, ql), (bh, bl) = halves(q), halves(b)
    error = (((qh * bh - product) + qh * bl) + ql * bh) + ql * bl
    return (a - product) - error


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
