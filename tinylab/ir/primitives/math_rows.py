"""Rows of the unary primitives: float math (EXP2, LOG2, SIN, SQRT, RECIPROCAL, TRUNC), NEG and the
two dtype changes (CAST, BITCAST). Each row holds its numpy oracle, its reverse, jvp and batching
rules with their math beside them, how each renderer family spells it, and its decomposition.
"""
from __future__ import annotations

import numpy as np

from ...dtype import dtypes
from .. import node as ir
from ..ops import Op
from .row_parts import LN2, cosine, elementwise_batch, math_call, no_tangent

UNARY = "unary"


def _reciprocal(a):
    with np.errstate(divide="ignore"):
        return np.reciprocal(a)


def _negate(a):
    return np.logical_not(a) if a.dtype == np.bool_ else np.negative(a)


def _negate_by_rule(x):
    """-x = x * -1;  not b = b != true."""
    if x.dtype.is_bool:
        return ir.alu(Op.CMPNE, x, x.const_like(True))
    return ir.alu(Op.MUL, x, x.const_like(-1))


def _trunc_by_rule(x):
    """trunc(x) = where(|x| < 2**mantissa, float(int(x)), x): round toward zero through an
    integer cast, where the float has a fractional part at all."""
    bits = {dtypes.float64: 52, dtypes.float32: 23}.get(x.dtype, 10)
    integer = dtypes.int64 if x.dtype == dtypes.float64 else dtypes.int32
    limit = float(2 ** bits)
    small = ir.alu(Op.AND, ir.alu(Op.CMPLT, x, x.const_like(limit)),
                   ir.alu(Op.CMPLT, x.const_like(-limit), x))
    return ir.alu(Op.WHERE, small, ir.cast(ir.cast(x, integer), x.dtype), x)


def _cast_reverse(grad, node):
    # back to the source type (no gradient into an integer)
    src = node.src[0]
    return (grad.cast(src.dtype) if src.dtype.is_float else None,)


def _cast_jvp(node, tangents):
    # d cast(x) = cast(dx) between float types; no tangent into or out of integers
    if not (node.dtype.is_float and node.src[0].dtype.is_float):
        return None
    return tangents[0].cast(node.dtype)


def _negate_in_wgsl(r, a, dtype, src):
    if dtype.is_bool:
        return f"(!{a[0]})"
    text = f"(0u - {a[0]})" if r.type_name(dtype) == "u32" else f"(-({a[0]}))"
    return r.wrap_int(text, dtype)


def _python_cast(bitcast: bool):
    return lambda r, a, dtype, src: f"cast({a[0]}, np.{dtype.numpy_name}, {bitcast})"


def _cast_spellings(bitcast: bool) -> dict:
    # C family: ((float)(x)) / a memcpy; WGSL: f32(x) with numpy's saturation / bitcast<u32>(x)
    spell = (lambda r, a, dtype, src: r.bitcast(a[0], src, dtype)) if bitcast else \
        (lambda r, a, dtype, src: r.cast(a[0], src, dtype))
    return {"c": spell, "wgsl": spell, "python": _python_cast(bitcast)}


Op.register(
    "EXP2", UNARY, oracle=np.exp2, properties=("transcendental", "not_zero_at_zero"),
    reverse=lambda grad, node: (grad * node * LN2,),              # d2^x = 2^x ln2 dx
    jvp=lambda n, t: t[0] * n * LN2,
    batch=elementwise_batch, spellings=math_call("exp2"))
Op.register(
    "LOG2", UNARY, oracle=np.log2, properties=("transcendental", "not_zero_at_zero"),
    reverse=lambda grad, node: (grad / (node.src[0] * LN2),),   # dlog2 x = dx / (x ln2)
    jvp=lambda n, t: t[0] / (n.src[0] * LN2),
    batch=elementwise_batch, spellings=math_call("log2"))
Op.register(
    "SIN", UNARY, oracle=np.sin, properties=("transcendental",),
    reverse=lambda grad, node: (grad * cosine(node.src[0]),),   # d sin x = cos x dx
    jvp=lambda n, t: t[0] * cosine(n.src[0]),
    batch=elementwise_batch, spellings=math_call("sin"))
Op.register(
    "SQRT", UNARY, oracle=np.sqrt, properties=("transcendental",),
    reverse=lambda grad, node: (grad / (node * 2.0),),          # d√x = dx / 2√x
    jvp=lambda n, t: t[0] / (n * 2.0),
    batch=elementwise_batch, spellings=math_call("sqrt"))
Op.register(
    "RECIPROCAL", UNARY, oracle=_reciprocal,
    properties=("transcendental", "not_zero_at_zero"),
    reverse=lambda grad, node: (-grad * node * node,),          # d(1/x) = -dx / x²
    jvp=lambda n, t: -t[0] * n * n,
    batch=elementwise_batch,
    spellings={"c": lambda r, a, dtype, src: f"({r.literal(1.0, dtype)}/{a[0]})",
               "c_vector": lambda w, a, t, mask: f"(1.0f/{a[0]})",
               "wgsl": lambda r, a, dtype, src: f"(1.0f / {a[0]})"})
Op.register(
    "NEG", UNARY, oracle=_negate,
    reverse=lambda grad, node: (-grad,),                        # d(-x) = -dx
    jvp=lambda n, t: -t[0],
    batch=elementwise_batch, decomposition=_negate_by_rule,
    spellings={"c": lambda r, a, dtype, src: r.negate(a[0], dtype),
               "c_vector": lambda w, a, t, mask: f"(-{a[0]})", "wgsl": _negate_in_wgsl})
Op.register(
    "TRUNC", UNARY, oracle=np.trunc,
    reverse=lambda grad, node: (grad.const_like(0),),           # piecewise constant: 0
    jvp=no_tangent, batch=elementwise_batch, spellings=math_call("trunc"),
    decomposition=_trunc_by_rule)
Op.register(
    "CAST", UNARY, reverse=_cast_reverse, jvp=_cast_jvp,        # d cast x = cast dx (floats)
    batch=elementwise_batch, spellings=_cast_spellings(bitcast=False))
Op.register(
    "BITCAST", UNARY, jvp=no_tangent,                           # bits: no derivative
    batch=elementwise_batch, spellings=_cast_spellings(bitcast=True))
