"""bfloat16 as a storage type: `lower_bfloat16(ast)` rewrites a kernel AST's bfloat16 loads,
stores, consts, casts, bitcasts and ops into float32, uint32 and uint16 ops every renderer has.
A bfloat16 is the top half of a float32: a load widens its 16 bits into a float32, every op
computes in float32 and rounds its result to the nearest bfloat16 (ties to even, as PyTorch's
round_to_nearest_even), and a store keeps the top half (a NaN as 0x7FC0, PyTorch's). So one op
on bfloat16 values gives PyTorch's bits. Called by decompose.py for every renderer.
"""
from __future__ import annotations

from ..dtype import dtypes
from ..ir import node as ir
from ..ir import walk
from ..ir.node import Node
from ..ir.ops import ALU, REDUCE, Op

BF16, F32, U32, U16 = dtypes.bfloat16, dtypes.float32, dtypes.uint32, dtypes.uint16
EXACT = frozenset({Op.NEG, Op.MAX, Op.WHERE, Op.TRUNC, Op.REDUCE_MAX})  # a bfloat16 in, a bfloat16 out


def _u32(like: Node, value: int) -> Node:
    return ir.const(value, U32, like.shape, like.device)


def widen(bits: Node) -> Node:
    """uint16 bits -> the float32 they are the top half of: bitcast(u32(bits) << 16)."""
    wide = ir.cast(bits, U32)
    return ir.cast(ir.alu(Op.SHL, wide, _u32(wide, 16)), F32, bitcast=True)


def _rounded(value: Node) -> Node:
    """float32 -> its bits rounded to the top half, ties to even:
    (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000."""
    u = ir.cast(value, U32, bitcast=True)
    odd = ir.alu(Op.AND, ir.alu(Op.SHR, u, _u32(u, 16)), _u32(u, 1))
    up = ir.alu(Op.ADD, ir.alu(Op.ADD, u, _u32(u, 0x7FFF)), odd)
    return ir.alu(Op.AND, up, _u32(u, 0xFFFF0000))


def round_in_float(value: Node) -> Node:
    """The bfloat16 nearest a float32, as a float32 (a NaN stays itself)."""
    is_nan = ir.alu(Op.CMPNE, value, value)
    return ir.alu(Op.WHERE, is_nan, value, ir.cast(_rounded(value), F32, bitcast=True))


def narrow(value: Node) -> Node:
    """float32 -> the uint16 bits of its nearest bfloat16 (a NaN: 0x7FC0, as PyTorch)."""
    bits = ir.cast(ir.alu(Op.SHR, _rounded(value), _u32(value, 16)), U16)
    is_nan = ir.alu(Op.CMPNE, value, value)
    return ir.alu(Op.WHERE, is_nan, ir.const(0x7FC0, U16, value.shape, value.device), bits)


def _bits(value: Node, dtype) -> Node:
    """A bfloat16 value (a float32 here) bitcast to a 16-bit integer dtype."""
    top = ir.alu(Op.SHR, ir.cast(value, U32, bitcast=True), _u32(value, 16))
    return ir.cast(ir.cast(top, U16), dtype, bitcast=True)


def _cast(node: Node, source: Node) -> Node:
    """CAST or BITCAST to or from bfloat16; `source` is the rewritten operand."""
    bitcast = node.op is Op.BITCAST
    if node.dtype == BF16 and bitcast:      # 16 integer bits -> their bfloat16
        return widen(ir.cast(source, U16, bitcast=True))
    if node.dtype == BF16:                  # x -> float32 (rounded once) -> nearest bfloat16
        return round_in_float(ir.cast(source, F32))
    if bitcast:                             # bfloat16 -> its 16 bits as (u)int16
        return _bits(source, node.dtype)
    return ir.cast(source, node.dtype)      # bfloat16 (a float32 now) -> x


def _op(node: Node, sources: list) -> Node:
    """An ALU op or reduce with bfloat16 operands or result: in float32, rounded after."""
    if node.op in REDUCE:
        out = Node(node.op, F32, (sources[0],), node.arg, node.shape, node.device)
    else:
        out = ir.alu(node.op, *sources)
    return round_in_float(out) if node.dtype == BF16 and node.op not in EXACT else out


def _lower_one(node: Node, sources: list) -> Node:
    if node.op is Op.LOAD and node.dtype == BF16:     # the buffer holds uint16 bits
        return widen(node.replace(dtype=U16))
    if node.op is Op.CONST and node.dtype == BF16:    # its value is a bfloat16 already
        return ir.const(node.value, F32, node.shape, node.device)
    if node.op is Op.STORE and node.dtype == BF16:
        return node.replace(dtype=U16, src=(narrow(sources[0]),))
    if node.op in (Op.CAST, Op.BITCAST) and BF16 in (node.dtype, node.src[0].dtype):
        return _cast(node, sources[0])
    if (node.op in ALU or node.op in REDUCE) and \
            (node.dtype == BF16 or any(s.dtype == BF16 for s in node.src)):
        return _op(node, sources)
    return walk.rebuilt(node, sources)


def has_bfloat16(ast: Node) -> bool:
    return any(n.dtype == BF16 for n in ast.toposort())


def lower_bfloat16(ast: Node, memo: dict | None = None) -> Node:
    """`ast` with every bfloat16 node in float32 / uint16 terms (`memo`: node -> rewrite)."""
    return walk.rewrite([ast], _lower_one, memo)[0]
