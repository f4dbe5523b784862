"""Capability-driven decomposition: rewrite a kernel AST into what a renderer can say.

`decompose(ast, renderer)` replaces every ALU op missing from `renderer.ops` (what the renderer
can spell) by its row's decomposition into other primitive ops (ir/primitives/), and when
`renderer.half_arithmetic` is False computes float16 ops in float32, rounding back to float16
after each (float16 stays a storage type). The engine calls it before planning; a renderer that
spells every op and has float16 math (C, PYTHON) gets the AST back. Both attributes are declared
by renderers/base.py Renderer. bfloat16 is lowered into float32 and uint16 ops for every
renderer first (bfloat16.py).
"""
from __future__ import annotations

from ..dtype import dtypes
from ..ir import node as ir
from ..ir import walk
from ..ir.node import Node
from ..ir.ops import ALU, REDUCE, Op
from .bfloat16 import has_bfloat16, lower_bfloat16


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
    missing = _unspelled(ast, renderer.ops)
    if not missing and half:
        return ast

    def rewrite_one(node: Node, srcs: list) -> Node:
        out = _rebuild(node, srcs)
        if not half and _touches_half(node):
            out = _half_in_float(node, srcs)
        if out.op in missing:
            out = rewrite(out.op.decomposition(*out.src))
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


def _unspelled(ast: Node, spelled) -> set:
    """The ALU ops in `ast` the renderer cannot spell and their rows can decompose (a shipped
    renderer's family has one or the other for every row: ir/ops.py checks at registration; a
    renderer that declares its own `ops` meets the rest at render time)."""
    return {node.op for node in ast.toposort()
            if node.op in ALU and node.op not in spelled and node.op.decomposition is not None}
