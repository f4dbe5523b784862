"""The numpy oracle: evaluates any IR graph (lazy Tensor graphs and scheduled kernel ASTs) with
plain numpy, op by op, so every compiled result can be checked against it. It is never used to
compute a Tensor's value; tests and `tinylab.testing` call it.

`evaluate(node)` -> numpy array of node's value; `evaluate_kernel(sink, buffers)` runs one
scheduled kernel on flat numpy buffers (outputs written in place).
"""
from __future__ import annotations

import numpy as np

from .. import numpy_alu
from . import symbolic as sym
from .movement_ops import MOVEMENTS
from .node import Node, toposort
from .ops import ALU, REDUCE, Op
from .view import ViewStack


def _alu(node: Node, values: list[np.ndarray]) -> np.ndarray:
    if node.op in (Op.CAST, Op.BITCAST):
        return numpy_alu.cast(values[0], node.dtype.np, bitcast=node.op is Op.BITCAST)
    return numpy_alu.apply(node.op.name, *values)


def evaluate(root: Node, buffers: list | None = None) -> np.ndarray:
    """Value of `root` (a lazy graph node, or a kernel-AST value node given `buffers`)."""
    values: dict[Node, np.ndarray] = {}
    for node in toposort([root]):
        values[node] = _evaluate_one(node, [values[s] for s in node.src], buffers)
    return values[root]


def _evaluate_one(node: Node, srcs: list, buffers) -> np.ndarray:
    op = node.op
    if op is Op.CONST:
        return np.full(node.shape, node.value, dtype=node.dtype.np)
    if op is Op.BUFFER:
        return node.buffer.numpy().reshape(node.shape)
    if op in ALU:
        return _alu(node, srcs)
    if op in REDUCE:
        return numpy_alu.reduce(op.name, srcs[0], node.axes)
    if op in MOVEMENTS:
        return MOVEMENTS[op].array(srcs[0], node.arg)
    if op in (Op.CONTIGUOUS, Op.DETACH, Op.COPY):
        return np.array(srcs[0])
    if op is Op.ASSIGN:
        return np.array(srcs[1])
    if op is Op.LOAD:
        return gather(buffers[node.buffer_index], node.view)
    if op is Op.VALID:
        return gather(None, node.view)
    raise AssertionError(f"evaluate: no rule for {op}")


def view_indices(view: ViewStack):
    """(flat buffer index array, validity array) of every element of the view's shape."""
    shape = view.shape
    names = [f"i{k}" for k in range(len(shape))]
    idxs = [sym.var(n, 0, max(s - 1, 0)) for n, s in zip(names, shape)]
    index, valid = view.to_index(idxs)
    grid = np.indices(shape, dtype=np.int64) if shape else []
    env = {n: grid[k] for k, n in enumerate(names)}
    index = np.broadcast_to(np.asarray(sym.evaluate(index, env), dtype=np.int64), shape)
    valid = np.broadcast_to(np.asarray(sym.evaluate_cond(valid, env), dtype=bool), shape)
    return index, valid


def gather(flat: np.ndarray | None, view: ViewStack) -> np.ndarray:
    """Elements of a flat buffer through a view; masked-out elements read 0 (validity if None)."""
    index, valid = view_indices(view)
    if flat is None:
        return valid.copy()
    safe = np.where(valid, index, 0)
    out = flat[safe] if flat.size else np.zeros(view.shape, flat.dtype)
    return np.where(valid, out, np.zeros((), flat.dtype))


def evaluate_kernel(sink: Node, buffers: list[np.ndarray]) -> None:
    """Run one kernel AST (a SINK of STOREs) on flat numpy buffers, writing outputs in place."""
    assert sink.op is Op.SINK
    results = [(store, evaluate(store.src[0], buffers)) for store in sink.src]
    for store, value in results:
        index, valid = view_indices(store.view)
        buffers[store.buffer_index][index[valid]] = value[valid]
