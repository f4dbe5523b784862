"""Logical and bitwise ops (with PyTorch's dtype rules: integer or bool operands only), shifts,
the float predicates isnan/isinf/isfinite, and selection: where and masked_fill.
Mixed into Tensor through ElementwiseMixin (frontend/elementwise.py).
"""
from __future__ import annotations

import math

from ..dtype import dtypes
from ..errors import ArgumentError, DTypeError
from ..ir import node as ir
from ..ir.ops import Op


class LogicMixin:
    __slots__ = ()

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

    def lshift(self, bits, reverse: bool = False):
        return self._shift(Op.SHL, bits, "lshift", reverse)

    def rshift(self, bits, reverse: bool = False):
        return self._shift(Op.SHR, bits, "rshift", reverse)

    def _shift(self, op: Op, bits, name: str, reverse: bool):
        """self shifted by `bits` (`bits` shifted by self when reverse, tinygrad's argument). A
        negative Python int amount is an error, as Python's and tinygrad's tests ask (PyTorch
        gives 0); a tensor of amounts is not read."""
        self._integer_only(name)
        if isinstance(bits, int) and not isinstance(bits, bool) and bits < 0 and not reverse:
            raise ArgumentError(f"{name}: negative shift count {bits}")
        a, b = self._operands(bits, name, reverse)
        return a._wrap(ir.alu(op, a.node, b.node))

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
            raise DTypeError(f"masked_fill: mask must be a bool tensor, got "
                            f"{getattr(mask, 'dtype', type(mask).__name__)}")
        if isinstance(value, (bool, int, float)) and not self.dtype.is_float:
            value = bool(value) if self.dtype.is_bool else int(value)  # the tensor's dtype wins
        return mask.where(value, self)


def _value_dtype(value, other):
    """dtype for a Python scalar branch of where(), given the other branch."""
    if hasattr(other, "dtype"):
        from ..dtype import result_dtype
        return result_dtype(other.dtype, value)
    return dtypes.of_python(value) if not isinstance(other, float) else dtypes.default_float
