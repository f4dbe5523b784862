"""Layer 0: what each ALU op means, written with numpy, keyed by op name.

This is the arithmetic of the reference: ir/evaluate.py (the oracle every compiled kernel is
checked against) and the PYTHON runtime (which interprets a kernel's linear program) both use it,
so the two can never disagree. Semantics follow C / the generated kernels: IDIV truncates toward
zero, MOD takes the dividend's sign, CAST float->int truncates, MAX propagates NaN.
"""
from __future__ import annotations

import numpy as np


def _idiv(a, b):
    b_safe = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(b_safe)
    return np.where(b == 0, 0, np.where((a < 0) != (b_safe < 0), -q, q)).astype(a.dtype)


def _mod(a, b):
    b_safe = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, np.fmod(a, b_safe)).astype(a.dtype)


def _neg(a):
    return np.logical_not(a) if a.dtype == np.bool_ else np.negative(a)


def _recip(a):
    with np.errstate(divide="ignore"):
        return np.reciprocal(a)


def _shift_left(a, b):
    return np.left_shift(a, b.astype(a.dtype)).astype(a.dtype)


def _shift_right(a, b):
    return np.right_shift(a, b.astype(a.dtype)).astype(a.dtype)


def _max(a, b):
    if a.dtype == np.bool_:
        return np.logical_or(a, b)
    return np.maximum(a, b)


UNARY = {
    "EXP2": np.exp2, "LOG2": np.log2, "SIN": np.sin, "SQRT": np.sqrt, "RECIPROCAL": _recip,
    "NEG": _neg, "TRUNC": np.trunc,
}
BINARY = {
    "ADD": np.add, "MUL": np.multiply, "MAX": _max, "IDIV": _idiv, "MOD": _mod,
    "CMPLT": np.less, "CMPNE": np.not_equal, "AND": np.bitwise_and, "OR": np.bitwise_or,
    "XOR": np.bitwise_xor, "SHL": _shift_left, "SHR": _shift_right,
}


def apply(op_name: str, *args):
    """Apply an ALU op (not CAST/BITCAST) to numpy arrays of matching dtypes."""
    with np.errstate(all="ignore"):
        if op_name == "WHERE":
            return np.where(args[0], args[1], args[2])
        if op_name in UNARY:
            out = UNARY[op_name](args[0])
            return out.astype(args[0].dtype, copy=False)
        out = BINARY[op_name](args[0], args[1])
        if op_name in ("CMPLT", "CMPNE"):
            return out
        return out.astype(args[0].dtype, copy=False)


def cast(array, numpy_dtype, bitcast: bool = False):
    array = np.asarray(array)
    if bitcast:  # (ascontiguousarray makes a 0-d array 1-d: the shape is put back)
        return np.ascontiguousarray(array).view(numpy_dtype).reshape(array.shape)
    numpy_dtype = np.dtype(numpy_dtype)
    with np.errstate(all="ignore"):
        if numpy_dtype.kind in "iu" and array.dtype.kind == "f":
            info = np.iinfo(numpy_dtype)
            wide = np.nan_to_num(np.trunc(array), nan=0, posinf=info.max, neginf=info.min)
            return np.clip(wide, info.min, info.max).astype(numpy_dtype)
        return array.astype(numpy_dtype)


def reduce(op_name: str, array, axes: tuple[int, ...]):
    with np.errstate(all="ignore"):
        if op_name == "REDUCE_SUM":
            if array.dtype == np.bool_:
                return np.any(array, axis=axes, keepdims=True)
            return np.sum(array, axis=axes, keepdims=True, dtype=array.dtype)
        if array.size == 0:
            return np.full([1 if i in axes else s for i, s in enumerate(array.shape)],
                           _lowest(array.dtype), dtype=array.dtype)
        return np.max(array, axis=axes, keepdims=True)


def _lowest(dtype):
    if dtype.kind == "f":
        return -np.inf
    if dtype.kind == "b":
        return False
    return np.iinfo(dtype).min
