"""Binary operands and the operator dunders: both operands broadcast to one shape and promoted to
one dtype (errors name the op and both shapes), comparisons that keep NaN False, and
`+ - * / // % ** @ & | ^ << >> < > <= >= == !=` and the in-place forms. Mixed into Tensor
(frontend/tensor.py); `broadcast_shape` is shared by the method families.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from typing import Sequence

import numpy as np

from ..dtype import promote, result_dtype
from ..errors import ShapeError
from ..ir import node as ir
from ..ir.ops import Op
from ..ir.symbolic import Variable

if TYPE_CHECKING:
    from .tensor import Tensor


def _tensor():
    from .tensor import Tensor  # the class these methods are mixed into (a cycle at import)
    return Tensor


def symbolic_value(size: Variable, device: str) -> Tensor:
    """A symbolic size used as a number (`Tensor(v)`, `v * t`, the count in a mean over a
    symbolic axis): a 0-d tensor whose kernel reads the variable, so the value follows the bound
    variable in every launch (and in TinyJit replays). It is element `size` of 0..max (int32, or
    int64 where the range leaves int32): a sum of padded constants the kernel's masks read at the
    variable's position, with no loop over the value (a count of 2**35 would take seconds)."""
    if size.min < 0:
        raise ValueError(f"cannot use the symbolic value {size!r} as a number: it may be "
                         f"negative")
    return _tensor()._index_range(size.max + 1, device).shrink(((size, size + 1),)).reshape(())


class OperatorMixin:
    __slots__ = ()

    def _operands(self, other, op: str, reverse: bool = False) -> tuple[Tensor, Tensor]:
        """Both operands of a binary op, broadcast to one shape and promoted to one dtype."""
        if isinstance(other, Variable):  # a symbolic size as a value: counted by a kernel
            other = symbolic_value(other, self.device)
        if isinstance(other, _tensor()):
            if other.device != self.device:
                from ..errors import DeviceError
                raise DeviceError(f"{op}: operands are on different devices ({self.device} and "
                                  f"{other.device}); move one with .to()")
            dtype = promote(self.dtype, other.dtype)
            b = other
        elif isinstance(other, (bool, int, float, np.generic)):
            if isinstance(other, np.generic):
                other = other.item()
            dtype = result_dtype(self.dtype, other)
            if dtype.is_int and isinstance(other, int) and not isinstance(other, bool):
                if not dtype.min_value() <= other <= dtype.max_value():
                    other = ir.normalize_const(other, dtype)
            b = _tensor()(ir.const(other, dtype, (), self.device))
        else:
            raise TypeError(f"{op}: unsupported operand type {type(other).__name__}")
        a = self if self.dtype == dtype else self.cast(dtype)
        b = b if b.dtype == dtype else b.cast(dtype)
        shape = _broadcast_shape(a.shape, b.shape, op)
        a, b = a._broadcast_to(shape, op), b._broadcast_to(shape, op)
        return (b, a) if reverse else (a, b)

    def _or_equal(self, other, name: str, reverse: bool) -> Tensor:
        """a <= b (or a >= b when reverse): for floats (a < b) | (a == b), so a NaN compares
        False as in PyTorch (not (a > b) would be True)."""
        a, b = self._operands(other, name)
        a, b = (b, a) if reverse else (a, b)
        if a.dtype.is_float:
            return (a < b) | (a == b)
        return (b < a).logical_not()

    def _binary(self, op: Op, other, name: str, reverse: bool = False) -> Tensor:
        a, b = self._operands(other, name, reverse)
        return _tensor()(ir.alu(op, a.node, b.node))

    # ---- operators ----
    def __add__(self, other): return self.add(other)
    def __radd__(self, other): return self.add(other, reverse=True)
    def __sub__(self, other): return self.sub(other)
    def __rsub__(self, other): return self.sub(other, reverse=True)
    def __mul__(self, other): return self.mul(other)
    def __rmul__(self, other): return self.mul(other, reverse=True)
    def __truediv__(self, other): return self.div(other)
    def __rtruediv__(self, other): return self.div(other, reverse=True)
    def __floordiv__(self, other): return self.floordiv(other)
    def __rfloordiv__(self, other): return self.floordiv(other, reverse=True)
    def __mod__(self, other): return self.mod(other)
    def __rmod__(self, other): return self.mod(other, reverse=True)
    def __pow__(self, other): return self.pow(other)
    def __rpow__(self, other): return self.pow(other, reverse=True)
    def __matmul__(self, other): return self.matmul(other)
    def __rmatmul__(self, other): return self.matmul(other, reverse=True)
    def __neg__(self): return self.neg()
    def __abs__(self): return self.abs()
    def __invert__(self): return self.bitwise_not()
    def __and__(self, other): return self.bitwise_and(other)
    def __rand__(self, other): return self.bitwise_and(other, reverse=True)
    def __or__(self, other): return self.bitwise_or(other)
    def __ror__(self, other): return self.bitwise_or(other, reverse=True)
    def __xor__(self, other): return self.bitwise_xor(other)
    def __rxor__(self, other): return self.bitwise_xor(other, reverse=True)
    def __lshift__(self, other): return self.lshift(other)
    def __rshift__(self, other): return self.rshift(other)
    def __rlshift__(self, other): return self.lshift(other, reverse=True)
    def __rrshift__(self, other): return self.rshift(other, reverse=True)
    def __lt__(self, other): return self._binary(Op.CMPLT, other, "lt")
    def __gt__(self, other): return self._binary(Op.CMPLT, other, "gt", reverse=True)
    def __le__(self, other): return self._or_equal(other, "le", reverse=False)
    def __ge__(self, other): return self._or_equal(other, "ge", reverse=True)
    def __ne__(self, other): return self._binary(Op.CMPNE, other, "ne")  # type: ignore[override]
    def __eq__(self, other): return self.__ne__(other).logical_not()  # type: ignore[override]
    def __iadd__(self, other): return self.assign(self + other)
    def __isub__(self, other): return self.assign(self - other)
    def __imul__(self, other): return self.assign(self * other)
    def __itruediv__(self, other): return self.assign(self / other)


def _broadcast_shape(a: Sequence[int], b: Sequence[int], op: str) -> tuple[int, ...]:
    ndim = max(len(a), len(b))
    pa = (1,) * (ndim - len(a)) + tuple(a)
    pb = (1,) * (ndim - len(b)) + tuple(b)
    out = []
    for x, y in zip(pa, pb):
        if x != y and x != 1 and y != 1:
            raise ShapeError(f"{op}: shapes {tuple(a)} and {tuple(b)} cannot be broadcast "
                             f"together")
        out.append(y if x == 1 else x)
    return tuple(out)


def broadcast_shape(*shapes, op: str = "broadcast") -> tuple[int, ...]:
    out: tuple = ()
    for s in shapes:
        out = _broadcast_shape(out, s, op)
    return out
