"""Rows of the binary and ternary primitives: ADD, MUL, MAX, integer division (IDIV, MOD), the
comparisons (CMPLT, CMPNE), bit ops (AND, OR, XOR, SHL, SHR) and WHERE: oracle, reverse, jvp and
batching rules with their math beside them, spellings per renderer family, decompositions.
Semantics follow C: IDIV truncates toward zero, MOD takes the dividend's sign, MAX keeps NaN.
"""
from __future__ import annotations

import numpy as np

from ...dtype import dtypes
from .. import node as ir
from ..ops import Op
from .row_parts import add_tangents, elementwise_batch, infix, no_tangent, scaled

BINARY = "binary"


# ---- numpy oracles -----------------------------------------------------------------------------
def _idiv(a, b):
    b_safe = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(b_safe)
    return np.where(b == 0, 0, np.where((a < 0) != (b_safe < 0), -q, q)).astype(a.dtype)


def _mod(a, b):
    b_safe = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, np.fmod(a, b_safe)).astype(a.dtype)


def _shift_left(a, b):
    return np.left_shift(a, b.astype(a.dtype)).astype(a.dtype)


def _shift_right(a, b):
    return np.right_shift(a, b.astype(a.dtype)).astype(a.dtype)


def _max(a, b):
    return np.logical_or(a, b) if a.dtype == np.bool_ else np.maximum(a, b)


# ---- transforms --------------------------------------------------------------------------------
def _a_wins(node):
    # max(a, b) goes to the larger; a tie shares it equally
    a, b = node.src
    return b.lt(a).cast(a.dtype) + a.eq(b).cast(a.dtype) * 0.5


def _max_reverse(grad, node):
    a_wins = _a_wins(node)
    return (grad * a_wins, grad * (1.0 - a_wins))


def _max_jvp(node, tangents):
    a_wins = _a_wins(node)
    return add_tangents(scaled(tangents[0], a_wins), scaled(tangents[1], 1.0 - a_wins))


def _where_reverse(grad, node):
    cond = node.src[0]
    zero = grad.const_like(0)
    return (None, cond.where(grad, zero), cond.where(zero, grad))


def _where_jvp(node, tangents):
    cond, a, b = node.src
    ta = tangents[1] if tangents[1] is not None else a.const_like(0)
    tb = tangents[2] if tangents[2] is not None else b.const_like(0)
    return cond.where(ta, tb)


# ---- decompositions ----------------------------------------------------------------------------
def _max_by_rule(a, b):
    """max(a, b) = where(b < a or a != a, a, b) (a NaN in a wins, as C's)."""
    pick_a = ir.alu(Op.CMPLT, b, a)
    if a.dtype.is_float:
        pick_a = ir.alu(Op.OR, pick_a, ir.alu(Op.CMPNE, a, a))
    return ir.alu(Op.WHERE, pick_a, a, b)


def _mod_by_rule(a, b):
    """a % b = where(b != 0, a - (a // b) * b, 0) (truncating, like IDIV)."""
    remainder = ir.alu(Op.ADD, a, ir.alu(Op.MUL, ir.alu(Op.MUL, ir.alu(Op.IDIV, a, b), b),
                                         a.const_like(-1)))
    return ir.alu(Op.WHERE, ir.alu(Op.CMPNE, b, b.const_like(0)), remainder, a.const_like(0))


# ---- WGSL spellings that are more than an infix ------------------------------------------------
def _wgsl_max(r, a, dtype, src):
    if dtype.is_bool:
        return f"({a[0]} | {a[1]})"
    keep_a = f"(({a[0]}) > ({a[1]}))" + (f" | tl_isnan({a[0]})" if r.type_name(dtype) == "f32"
                                         else "")
    return f"select({a[1]}, {a[0]}, {keep_a})"


def _wgsl_division(symbol: str, wraps: bool):
    def spell(r, a, dtype, src):
        zero = r.literal(0, dtype)
        text = f"select(({a[0]}) {symbol} ({a[1]}), {zero}, ({a[1]}) == {zero})"
        return r.wrap_int(text, dtype) if wraps else text
    return spell


def _wgsl_not_equal(r, a, dtype, src):
    if a[0] == a[1] and r.type_name(src) == "f32" and not src.is_bool:
        return f"tl_isnan({a[0]})"  # x != x: some WGSL compilers assume no NaN
    return f"(({a[0]}) != ({a[1]}))"


def _vector_max(w, a, t, mask):
    keep_a = f"(({a[0]}>{a[1]})|({a[0]}!={a[0]}))" if t.startswith("float") else \
        f"({a[0]}>{a[1]})"
    return w.select(keep_a, a[0], a[1], t, mask)


def _comparison(sources):
    return dtypes.bool


def _row(name, oracle, spellings, reverse=None, jvp=no_tangent, properties=(),
         decomposition=None, group=BINARY, result_dtype=None):
    Op.register(name, group, oracle=oracle, reverse=reverse, jvp=jvp, batch=elementwise_batch,
                properties=properties, spellings=spellings, decomposition=decomposition,
                result_dtype=result_dtype)


# name, oracle, spellings, reverse, jvp (integer, comparison and bit ops: no tangent)
_row("ADD", np.add, infix("+", "||", "({0} | {1})", wraps=True),
     lambda grad, node: (grad, grad),                              # d(a+b) = da + db
     lambda n, t: add_tangents(t[0], t[1]), ("commutative",))
_row("MUL", np.multiply, infix("*", "&&", "({0} & {1})", wraps=True),
     lambda grad, node: (grad * node.src[1], grad * node.src[0]),  # d(ab) = b da + a db
     lambda n, t: add_tangents(scaled(t[0], n.src[1]), scaled(t[1], n.src[0])),
     ("commutative",))
_row("MAX", _max, {"c": lambda r, a, dtype, src: r.maximum(a[0], a[1], dtype),
                   "c_vector": _vector_max, "wgsl": _wgsl_max},
     _max_reverse, _max_jvp, ("commutative",),                     # to the larger, ties half
     decomposition=_max_by_rule)
_row("IDIV", _idiv, {"c": lambda r, a, dtype, src: r.int_division("/", a[0], a[1], dtype),
                     "wgsl": _wgsl_division("/", wraps=True)},
     properties=("integer_only",))
_row("MOD", _mod, {"c": lambda r, a, dtype, src: r.int_division("%", a[0], a[1], dtype),
                   "wgsl": _wgsl_division("%", wraps=False)},
     properties=("integer_only",), decomposition=_mod_by_rule)
_row("CMPLT", np.less, {**infix("<"), "wgsl": lambda r, a, dtype, src: (
         f"((!{a[0]}) & {a[1]})" if src.is_bool else f"(({a[0]}) < ({a[1]}))")},
     properties=("comparison",), result_dtype=_comparison)
_row("CMPNE", np.not_equal, {**infix("!="), "wgsl": _wgsl_not_equal},
     properties=("comparison", "commutative"), result_dtype=_comparison)
_row("AND", np.bitwise_and, infix("&"), properties=("commutative", "integer_only"))
_row("OR", np.bitwise_or, infix("|"), properties=("commutative", "integer_only"))
_row("XOR", np.bitwise_xor, infix("^", wgsl_bool="({0} != {1})"),
     properties=("commutative", "integer_only"))
_row("SHL", _shift_left, {**infix("<<"), "wgsl": lambda r, a, dtype, src: r.wrap_int(
         r.shift(True, a[0], a[1], dtype), dtype)}, properties=("integer_only",))
_row("SHR", _shift_right, {**infix(">>"), "wgsl": lambda r, a, dtype, src: r.shift(
         False, a[0], a[1], dtype)}, properties=("integer_only",))
_row("WHERE", np.where,
     {"c": lambda r, a, dtype, src: f"({a[0]}?{a[1]}:{a[2]})",
      "wgsl": lambda r, a, dtype, src: f"select({a[2]}, {a[1]}, {a[0]})"},
     _where_reverse, _where_jvp, group="ternary",                 # to the chosen branch
     result_dtype=lambda sources: sources[1].dtype)
