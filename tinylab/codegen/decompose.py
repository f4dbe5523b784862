"""Capability-driven decomposition: rewrite a kernel AST into what a renderer can say.

`decompose(ast, renderer)` replaces every ALU op missing from `renderer.ops` by its row in
FALLBACKS (built from other primitive ops), and when `renderer.half_arithmetic` is False computes
float16 ops in float32, rounding back to float16 after each (float16 stays a storage type). The
engine calls it before planning; a renderer with every op and float16 math (C, PYTHON) gets the
AST back. Both attributes are declared by renderers/base.py Renderer. bfloat16 is lowered
into float32 and uint16 ops for every renderer first (bfloat16.py).
"""
from __future__ import annotations

from ..dtype import dtypes
from ..ir import node as ir
from ..ir import walk
from ..ir.node import Node
from ..ir.ops import ALU, REDUCE, Op
from .bfloat16 import has_bfloat16, lower_bfloat16


def _const(like: Node, value) -> Node:
    return ir.const(value, like.dtype, like.shape, like.device)


def _max(a: Node, b: Node) -> Node:
    pick_a = ir.alu(Op.CMPLT, b, a)
    if a.dtype.is_float:  # a NaN in a wins, as C's (a>b || a!=a) ? a : b
        pick_a = ir.alu(Op.OR, pick_a, ir.alu(Op.CMPNE, a, a))
    return ir.alu(Op.WHERE, pick_a, a, b)


def _neg(x: Node) -> Node:
    if x.dtype.is_bool:
        return ir.alu(Op.CMPNE, x, _const(x, True))
    return ir.alu(Op.MUL, x, _const(x, -1))


def _mod(a: Node, b: Node) -> Node:
    remainder = ir.alu(Op.ADD, a, ir.alu(Op.MUL, ir.alu(Op.MUL, ir.alu(Op.IDIV, a, b), b),
                                         _const(a, -1)))
    return ir.alu(Op.WHERE, ir.alu(Op.CMPNE, b, _const(b, 0)), remainder, _const(a, 0))


def _trunc(x: Node) -> Node:
    """Round toward zero through an integer cast, where the float has a fractional part at all."""
    bits = {dtypes.float64: 52, dtypes.float32: 23}.get(x.dtype, 10)
    integer = dtypes.int64 if x.dtype == dtypes.float64 else dtypes.int32
    limit = float(2 ** bits)
    small = ir.alu(Op.AND, ir.alu(Op.CMPLT, x, _const(x, limit)),
                   ir.alu(Op.CMPLT, _const(x, -limit), x))
    return ir.alu(Op.WHERE, small, ir.cast(ir.cast(x, integer), x.dtype), x)


# op -> the same value from other primitive ops
FALLBACKS = {
    Op.MAX: _max,       # max(a, b) = where(b < a or a != a, a, b)
    Op.NEG: _neg,       # -x = x * -1;  not b = b != true
    Op.MOD: _mod,       # a % b = where(b != 0, a - (a // b) * b, 0)   (truncating, like IDIV)
    Op.TRUNC: _trunc,   # trunc(x) = where(|x| < 2**mantissa, float(int(x)), x)
}


def _half_in_float(node: Node, srcs: list[Node]) -> Node:
    """A float16 ALU op or reduce, computed in float32 and rounded back."""
    wide = [ir.cast(s, dtypes.float32) if s.dtype == dtypes.float16 else s for s in srcs]
    if node.op in REDUCE:
        out = Node(node.op, dtypes.float32, (wide[0],), node.arg, node.shape, node.device)
    else:
        out = ir.alu(node.op, *wide)
    return ir.cast(out, dtypes.float16) if out.dtype == dtypes.float32 else out


def _touches_half(node: Node) -> bool:
    if node.op in (Op.CAST, Op.BITCAST) or (node.op not in ALU and node.op not in REDUCE):
        return False
    return node.dtype == dtypes.float16 or any(s.dtype == dtypes.float16 for s in node.src)


def decompose(ast: Node, renderer, memo: dict | None = None) -> Node:
    """`memo`, when given, is filled with each node -> the node that replaces it (a rewrite maps
    to itself). bfloat16 is a storage type on every renderer: lowered first (bfloat16.py)."""
    lowered: dict = {}
    if has_bfloat16(ast):
        ast = lower_bfloat16(ast, lowered)
    memo = {} if memo is None else memo
    out = _decompose(ast, renderer, memo)
    for node, new in lowered.items():   # the original nodes map to what they became
        memo.setdefault(node, memo.get(new, new))
    return out


def _decompose(ast: Node, renderer, memo: dict) -> Node:
    half = renderer.half_arithmetic
    missing = set(FALLBACKS) - set(renderer.ops)
    if not missing and half:
        return ast

    def rewrite_one(node: Node, srcs: list) -> Node:
        out = _rebuild(node, srcs)
        if not half and _touches_half(node):
            out = _half_in_float(node, srcs)
        if out.op in missing:
            out = rewrite(FALLBACKS[out.op](*out.src))
        memo.setdefault(out, out)   # a rewrite maps to itself
        return out

    def rewrite(root: Node) -> Node:
        return walk.rewrite([root], rewrite_one, memo)[0]   # (ir/walk.py: sources first)

    return rewrite(ast)


def _rebuild(node: Node, srcs: list[Node]) -> Node:
    if tuple(srcs) == node.src:
        return node
    if node.op in (Op.CAST, Op.BITCAST):
        return ir.cast(srcs[0], node.dtype, bitcast=node.op is Op.BITCAST)
    if node.op in ALU:
        return ir.alu(node.op, *srcs)
    return walk.rebuilt(node, srcs)
