"""Graph rewrites the scheduler applies before cutting: a sum of (a view of) a sum becomes one sum.

    SUM_A( movements( SUM_B(F) ) )  ->  SUM_{A, c}( lifted movements( F with B flattened to c ) )

This is what the gradient of a sliding-window view produces (a sum over window copies of a
conv's channel sum): folded, the kernel loops over both and the large intermediate never exists.
Movement ops act only on the non-summed dims, so each lifts by carrying the summed dim `c` last.
Folding is skipped when the movements would make the inner sum run many more times (broadcast),
or when the inner sum has other readers. `fold_nested_reduces(outputs, realized)` returns the
rewritten outputs and a FusionDecision per fold. Called by schedule.schedule().
"""
from __future__ import annotations

from ..ir.node import Node, prod
from ..ir.symbolic import any_symbolic
from ..ir.ops import MOVEMENT, Op
from .fusion import FusionDecision, Reason

MAX_EXTRA_WORK = 2.0  # folded work may be at most this multiple of the two sums' work


def _lift(op: Op, arg, extra: tuple):
    """The same movement on a tensor with trailing dims `extra` it leaves alone."""
    if op in (Op.RESHAPE, Op.EXPAND):
        return tuple(arg) + extra
    if op is Op.PERMUTE:
        return tuple(arg) + tuple(range(len(arg), len(arg) + len(extra)))
    if op is Op.PAD:
        return tuple(arg) + ((0, 0),) * len(extra)
    if op is Op.SHRINK:
        return tuple(arg) + tuple((0, e) for e in extra)
    return arg  # FLIP: axes are unchanged


def _consumer_counts(outputs, realized) -> dict:
    counts: dict = {}
    seen, stack = set(), list(outputs)
    while stack:
        node = stack.pop()
        if node in seen or node in realized:
            continue
        seen.add(node)
        for s in node.src:
            counts[s] = counts.get(s, 0) + 1
            stack.append(s)
    return counts


def _chain(outer: Node, counts: dict, realized):
    """(movement nodes from the inner sum up to outer's source, inner sum) or None."""
    chain, node = [], outer.src[0]
    while node.op in MOVEMENT and node not in realized:
        if counts.get(node, 0) != 1:
            return None
        chain.append(node)
        node = node.src[0]
    if node.op is not Op.REDUCE_SUM or node in realized or counts.get(node, 0) != 1:
        return None
    return list(reversed(chain)), node


def _fold(outer: Node, ops: list, inner: Node) -> Node | None:
    """outer's sum over `ops` (movements, as (op, arg)) of inner's sum, as one sum."""
    source = inner.src[0]
    if any_symbolic(source.shape + outer.src[0].shape):  # weighed by sizes: keep it static
        return None
    keep = [i for i in range(source.ndim) if i not in inner.axes]
    summed = prod(source.shape[i] for i in inner.axes)
    work_before = source.numel + outer.src[0].numel
    if outer.src[0].numel * summed > MAX_EXTRA_WORK * work_before:
        return None
    extra = tuple(source.shape[i] for i in inner.axes)  # the inner sum's dims, carried last
    y = source.permute(tuple(keep) + tuple(inner.axes))
    y = y.reshape(inner.shape + extra)
    for op, arg in ops:
        y = _apply(op, y, _lift(op, arg, extra))
    carried = tuple(range(y.ndim - len(extra), y.ndim))
    folded = y.sum(tuple(outer.axes) + carried)
    return folded.reshape(outer.shape)


def _apply(op: Op, node: Node, arg) -> Node:
    from ..ir.node import movement
    return movement(op, node, arg)


def fold_nested_reduces(outputs: list[Node], realized) -> tuple[list[Node], list]:
    counts = _consumer_counts(outputs, realized)
    memo: dict[Node, Node] = {}
    decisions: list[FusionDecision] = []

    def visit(node: Node) -> Node:
        if node in memo:
            return memo[node]
        if node in realized or not node.src:
            memo[node] = node
            return node
        stack = [(node, False)]
        while stack:  # iterative post-order: graphs can be deep
            n, done = stack.pop()
            if n in memo:
                continue
            if done or n in realized or not n.src:
                memo[n] = n if (n in realized or not n.src) else _rebuild(n)
                continue
            stack.append((n, True))
            stack.extend((s, False) for s in n.src if s not in memo)
        return memo[node]

    def _rebuild(n: Node) -> Node:
        src = tuple(memo[s] for s in n.src)
        rebuilt = n if src == n.src else _same_op(n, src)
        if rebuilt.op is Op.REDUCE_SUM:
            found = _chain(n, counts, realized)
            if found is not None:
                chain, inner = found
                base, ops = _peel(memo[inner])
                if base.op is Op.REDUCE_SUM:
                    ops += [(m.op, m.arg) for m in chain]
                    folded = _fold(rebuilt, ops, base)
                    if folded is not None:
                        decisions.append(FusionDecision(
                            inner, n, True, Reason.FOLDED_REDUCE,
                            {"producer_op": inner.op.name, "producer_shape": inner.shape,
                             "consumer_op": n.op.name, "consumer_shape": n.shape,
                             "rule": Reason.FOLDED_REDUCE.value}))
                        return folded
        return rebuilt

    new_outputs = [visit(o) for o in outputs]
    return new_outputs, decisions


def _peel(node: Node) -> tuple[Node, list]:
    """A (possibly already folded) inner sum under movements: (the sum, movements from it)."""
    ops = []
    while node.op in MOVEMENT:
        ops.insert(0, (node.op, node.arg))
        node = node.src[0]
    return node, ops


def _same_op(node: Node, src: tuple) -> Node:
    return Node(node.op, node.dtype, src, node.arg, node.shape, node.device)
