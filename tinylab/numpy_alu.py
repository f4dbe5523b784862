"""Layer 0: what each ALU op means, written with numpy, keyed by op name (each primitive's row in
ir/primitives/ declares its numpy function; registering the row defines it here).

This is the arithmetic of the reference: ir/evaluate.py (the oracle every compiled kernel is
checked against) and the PYTHON runtime (which interprets a kernel's linear program) both use it,
so the two can never disagree. Semantics follow C / the generated kernels: IDIV truncates toward
zero, MOD takes the dividend's sign, CAST float->int truncates, MAX propagates NaN.
"""
from __future__ import annotations

import numpy as np

from .memo import Role, register


# name -> numpy function, filled by each primitive's row (ir/ops.py Op.register)
ORACLES: dict = register("numpy oracles", {}, Role.ROWS)
# results cast back to the first operand's dtype (not comparisons)
KEEPS_DTYPE: set = register("oracles keeping the dtype", set(), Role.ROWS)


def define(op_name: str, function, keeps_dtype: bool = True) -> None:
    ORACLES[op_name] = function
    if keeps_dtype:
        KEEPS_DTYPE.add(op_name)


def forget(op_name: str) -> None:
    ORACLES.pop(op_name, None)
    KEEPS_DTYPE.discard(op_name)


def apply(op_name: str, *args):
    """Apply an ALU op (not CAST/BITCAST) to numpy arrays of matching dtypes."""
    with np.errstate(all="ignore"):
        out = ORACLES[op_name](*args)
        if op_name in KEEPS_DTYPE:
            return out.astype(args[0].dtype, copy=False)
        return out


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
