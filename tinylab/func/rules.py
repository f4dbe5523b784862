"""The transform table: one row per primitive op, holding its forward-mode (jvp) rule, its reverse
(vjp) rule and its batching rule side by side, with the math beside them. Composite Tensor ops
get no row: they are transformed through the primitives they lower to.

jvp(node, tangents) -> the output's tangent (tangents: one per source, None for zero).
vjp: frontend/autograd.py's reverse rule (grad, node) -> one cotangent per source; the same
     functions Tensor.backward uses, built of ordinary differentiable nodes (create_graph).
batch(node, sources, batched, size) -> the node over a leading batch axis of `size`; `sources`
     are the already batched sources, `batched[i]` says whether source i carries the axis.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from ..errors import IRError
from ..frontend.autograd import LN2, RULES, _cosine
from ..ir import node as ir
from ..ir.node import Node
from ..ir.ops import Op


class Rule(NamedTuple):
    jvp: Callable | None
    vjp: Callable | None
    batch: Callable | None


def _sum(*terms):
    """Sum of the terms that are not None (None if all are: a zero tangent)."""
    present = [t for t in terms if t is not None]
    if not present:
        return None
    total = present[0]
    for t in present[1:]:
        total = total + t
    return total


def _scaled(tangent, factor):
    return None if tangent is None else tangent * factor


# ---- jvp rules that need more than one line ----------------------------------------------------
def _max_jvp(node: Node, tangents):
    # d max(a, b) = [a > b] da + [b > a] db, a tie shares equally (as the reverse rule)
    a, b = node.src
    a_wins = b.lt(a).cast(a.dtype) + a.eq(b).cast(a.dtype) * 0.5
    return _sum(_scaled(tangents[0], a_wins), _scaled(tangents[1], 1.0 - a_wins))


def _reduce_max_jvp(node: Node, tangents):
    # d max_i x_i = mean of dx_i over the maxima (ties share, NaNs are maxima)
    src = node.src[0]
    result = node.expand(src.shape)
    is_max = ir.alu(Op.OR, src.eq(result), ir.alu(Op.AND, src.ne(src), result.ne(result)))
    is_max = is_max.cast(src.dtype)
    return (is_max * tangents[0]).sum(node.axes) / is_max.sum(node.axes)


def _where_jvp(node: Node, tangents):
    # d where(c, a, b) = where(c, da, db)
    cond, a, b = node.src
    ta = tangents[1] if tangents[1] is not None else a.const_like(0)
    tb = tangents[2] if tangents[2] is not None else b.const_like(0)
    return cond.where(ta, tb)


def _cast_jvp(node: Node, tangents):
    # d cast(x) = cast(dx) between float types; no tangent into or out of integers
    if not (node.dtype.is_float and node.src[0].dtype.is_float):
        return None
    return tangents[0].cast(node.dtype)


def _same(apply: Callable) -> Callable:
    """jvp of a linear op L (movement, sum, copy): dL(x) = L(dx)."""
    return lambda node, tangents: apply(node, tangents[0])


def _none(node, tangents):
    return None


# ---- batching rules ----------------------------------------------------------------------------
def lift(x: Node, size: int) -> Node:
    """An unbatched value broadcast over the batch axis: x -> (size, *x.shape)."""
    return x.reshape((1,) + x.shape).expand((size,) + x.shape)


def _elementwise_batch(node: Node, sources, batched, size):
    # f(x_b, y) = f(x, y)_b: lift the unbatched operands, apply f to (B, ...) shapes
    lifted = [s if b else lift(s, size) for s, b in zip(sources, batched)]
    if node.op in (Op.CAST, Op.BITCAST):
        return ir.cast(lifted[0], node.dtype, node.op is Op.BITCAST)
    return ir.alu(node.op, *lifted)


def _shifted(axes):
    return tuple(a + 1 for a in axes)


def _leading(make: Callable) -> Callable:
    """A one-source op whose argument gains the batch axis in front (movement, reduce)."""
    return lambda node, sources, batched, size: make(node, sources[0], size)


TABLE: dict[Op, Rule] = {
    # op              jvp (forward)                                vjp (reverse)    batch
    # d(-x) = -dx
    Op.NEG: Rule(lambda n, t: -t[0], RULES[Op.NEG], _elementwise_batch),
    # d(1/x) = -dx / x²
    Op.RECIPROCAL: Rule(lambda n, t: -t[0] * n * n, RULES[Op.RECIPROCAL], _elementwise_batch),
    # d√x = dx / 2√x
    Op.SQRT: Rule(lambda n, t: t[0] / (n * 2.0), RULES[Op.SQRT], _elementwise_batch),
    # d2^x = 2^x ln2 dx
    Op.EXP2: Rule(lambda n, t: t[0] * n * LN2, RULES[Op.EXP2], _elementwise_batch),
    # dlog2 x = dx / (x ln2)
    Op.LOG2: Rule(lambda n, t: t[0] / (n.src[0] * LN2), RULES[Op.LOG2], _elementwise_batch),
    # d sin x = cos x dx
    Op.SIN: Rule(lambda n, t: t[0] * _cosine(n.src[0]), RULES[Op.SIN], _elementwise_batch),
    # trunc is piecewise constant: 0
    Op.TRUNC: Rule(_none, RULES[Op.TRUNC], _elementwise_batch),
    # d cast x = cast dx (floats only)
    Op.CAST: Rule(_cast_jvp, RULES[Op.CAST], _elementwise_batch),
    # bit reinterpretation: no derivative
    Op.BITCAST: Rule(_none, None, _elementwise_batch),
    # d(a+b) = da + db
    Op.ADD: Rule(lambda n, t: _sum(t[0], t[1]), RULES[Op.ADD], _elementwise_batch),
    # d(ab) = b da + a db
    Op.MUL: Rule(lambda n, t: _sum(_scaled(t[0], n.src[1]), _scaled(t[1], n.src[0])),
                 RULES[Op.MUL], _elementwise_batch),
    # d max(a,b) = [a>b] da + [b>a] db (ties: half each)
    Op.MAX: Rule(_max_jvp, RULES[Op.MAX], _elementwise_batch),
    # d where(c,a,b) = where(c, da, db)
    Op.WHERE: Rule(_where_jvp, RULES[Op.WHERE], _elementwise_batch),
    # integer, comparison and bit ops: no tangent, elementwise batching
    **{op: Rule(_none, None, _elementwise_batch)
       for op in (Op.IDIV, Op.MOD, Op.CMPLT, Op.CMPNE, Op.AND, Op.OR, Op.XOR, Op.SHL, Op.SHR)},
    # d Σx = Σdx; batch: reduce axes + 1
    Op.REDUCE_SUM: Rule(_same(lambda n, t: t.sum(n.axes)), RULES[Op.REDUCE_SUM],
                        _leading(lambda n, x, b: x.sum(_shifted(n.axes)))),
    # d max x = mean of dx over the maxima; batch: reduce axes + 1
    Op.REDUCE_MAX: Rule(_reduce_max_jvp, RULES[Op.REDUCE_MAX],
                        _leading(lambda n, x, b: x.max(_shifted(n.axes)))),
    # movement M is linear: dM(x) = M(dx); batch: M on (B, ...) with the batch axis kept
    Op.RESHAPE: Rule(_same(lambda n, t: t.reshape(n.shape)), RULES[Op.RESHAPE],
                     _leading(lambda n, x, b: x.reshape((b,) + n.shape))),
    Op.PERMUTE: Rule(_same(lambda n, t: t.permute(n.order)), RULES[Op.PERMUTE],
                     _leading(lambda n, x, b: x.permute((0,) + _shifted(n.order)))),
    Op.EXPAND: Rule(_same(lambda n, t: t.expand(n.shape)), RULES[Op.EXPAND],
                    _leading(lambda n, x, b: x.expand((b,) + n.shape))),
    Op.PAD: Rule(_same(lambda n, t: t.pad(n.padding)), RULES[Op.PAD],
                 _leading(lambda n, x, b: x.pad(((0, 0),) + n.padding))),
    Op.SHRINK: Rule(_same(lambda n, t: t.shrink(n.bounds)), RULES[Op.SHRINK],
                    _leading(lambda n, x, b: x.shrink(((0, b),) + n.bounds))),
    Op.FLIP: Rule(_same(lambda n, t: t.flip(n.axes)), RULES[Op.FLIP],
                  _leading(lambda n, x, b: x.flip(_shifted(n.axes)))),
    # buffers: identities for every transform
    Op.CONTIGUOUS: Rule(_same(lambda n, t: t), RULES[Op.CONTIGUOUS],
                        _leading(lambda n, x, b: ir.contiguous(x))),
    Op.COPY: Rule(_same(lambda n, t: ir.copy_to(t, n.device)), RULES[Op.COPY],
                  _leading(lambda n, x, b: ir.copy_to(x, n.device))),
    # detach: identity forward, no tangent, no cotangent
    Op.DETACH: Rule(_none, None, _leading(lambda n, x, b: ir.detach(x))),
    # an in-place write has no functional meaning under a transform
    Op.ASSIGN: Rule(None, RULES[Op.ASSIGN], None),
}


def rule(op: Op, transform: str) -> Callable:
    """The `transform` ("jvp", "vjp", "batch") rule of `op`, or an error naming both."""
    row = TABLE.get(op)
    found = row._asdict()[transform] if row is not None else None
    if found is None:
        transformer, kind = {"jvp": ("jvp", "jvp"), "vjp": ("vjp", "vjp"),
                             "batch": ("vmap", "batching")}[transform]
        raise IRError(f"{transformer}: no {kind} rule for {op.name}; {transformer} never falls "
                      f"back to a loop (or to running the op)")
    return found


def coverage() -> dict[str, int]:
    """How many rows have each of the three rules."""
    return {name: sum(1 for row in TABLE.values() if row._asdict()[name] is not None)
            for name in ("jvp", "vjp", "batch")}
