"""The IR verifier: checks every node of a graph against the shape and dtype rules of its op.

`verify(roots)` raises IRError naming the offending node (printed) and the rule it breaks;
builders in node.py already enforce most rules, so this catches hand-built or rewritten graphs.
Called by tests, by the scheduler in debug mode, and by anyone writing a pass.
"""
from __future__ import annotations

from ..dtype import dtypes
from ..errors import IRError
from .node import Node, prod, toposort
from .ops import ALU, COMPARISON, INTEGER_ONLY, MOVEMENT, REDUCE, Op
from .graph_printer import format_node


def _expected_shape(node: Node) -> tuple | None:
    op, src = node.op, node.src
    if op in ALU or op in (Op.CONTIGUOUS, Op.DETACH, Op.COPY):
        return src[0].shape
    if op in REDUCE:
        return tuple(1 if i in node.arg else s for i, s in enumerate(src[0].shape))
    if op in (Op.RESHAPE, Op.EXPAND):
        return tuple(node.arg)
    if op is Op.PERMUTE:
        return tuple(src[0].shape[i] for i in node.arg)
    if op is Op.PAD:
        return tuple(s + b + a for s, (b, a) in zip(src[0].shape, node.arg))
    if op is Op.SHRINK:
        return tuple(e - b for b, e in node.arg)
    if op is Op.FLIP:
        return src[0].shape
    if op is Op.ASSIGN:
        return src[0].shape
    return None


def _check(node: Node) -> str | None:
    """The broken rule, or None."""
    op, src = node.op, node.src
    expected = _expected_shape(node)
    if expected is not None and expected != node.shape:
        return f"shape should be {expected}"
    if op in ALU and op not in (Op.CAST, Op.BITCAST):
        arity = op.arity
        if len(src) != arity:
            return f"{op.name} takes {arity} sources"
        if any(s.shape != src[0].shape for s in src):
            return "sources must have equal shapes"
        operands = src[1:] if op is Op.WHERE else src
        if any(s.dtype != operands[0].dtype for s in operands):
            return "operands must have equal dtypes"
        if op is Op.WHERE and src[0].dtype != dtypes.bool:
            return "WHERE condition must be bool"
        if op in INTEGER_ONLY and operands[0].dtype.is_float:
            return f"{op.name} needs integer (or bool) operands"
        if op in COMPARISON and node.dtype != dtypes.bool:
            return "comparisons produce bool"
    if op is Op.RESHAPE and prod(node.arg) != src[0].numel:
        return "RESHAPE must keep the element count"
    if op is Op.EXPAND and any(s != n and s != 1 for s, n in zip(src[0].shape, node.arg)):
        return "EXPAND can only grow size-1 axes"
    if op in MOVEMENT | REDUCE and node.dtype != src[0].dtype:
        return "movement and reduce ops keep the dtype"
    if op is Op.BITCAST and node.dtype.itemsize != src[0].dtype.itemsize:
        return "BITCAST needs equal item sizes"
    if op is Op.ASSIGN and (src[0].dtype != src[1].dtype or src[0].shape != src[1].shape):
        return "ASSIGN target and value must match in shape and dtype"
    return None


def verify(roots) -> None:
    roots = [roots] if isinstance(roots, Node) else list(roots)
    names: dict[Node, str] = {}
    for node in toposort(roots):
        names[node] = f"%{len(names)}"
        problem = _check(node)
        if problem:
            sources = "\n".join(f"    {names[s]} = {format_node(s, names)}" for s in node.src)
            raise IRError(f"invalid node {names[node]}: {problem}\n"
                          f"    {names[node]} = {format_node(node, names)}\n"
                          f"  sources:\n{sources}")
