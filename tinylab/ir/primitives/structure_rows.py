"""Rows of the primitives that are not elementwise: reduces (REDUCE_SUM, REDUCE_MAX), movement
(RESHAPE, PERMUTE, EXPAND, PAD, SHRINK, FLIP: they change the view, never the data), buffers
(BUFFER, CONST, COPY, CONTIGUOUS, ASSIGN, DETACH) and the kernel-level ops a scheduled kernel's
AST holds (LOAD, STORE, VALID, SINK). Each with its reverse, jvp and batching rules, math beside.
"""
from __future__ import annotations

from ...dtype import dtypes
from .. import node as ir
from ..ops import Op
from .row_parts import leading, linear, no_tangent, shifted


def _is_max(node):
    # the maxima of a max-reduce (ties share, NaNs are maxima): 1.0 there, else 0.0
    src = node.src[0]
    result = node.expand(src.shape)
    is_max = ir.alu(Op.OR, src.eq(result), ir.alu(Op.AND, src.ne(src), result.ne(result)))
    return is_max.cast(src.dtype)


def _reduce_max_reverse(grad, node):
    # d max = [x == max] / count(x == max): the maxima share the gradient
    is_max = _is_max(node)
    count = is_max.sum(node.axes).expand(node.src[0].shape)
    return (is_max * grad.expand(node.src[0].shape) / count,)


def _reduce_max_jvp(node, tangents):
    # d max_i x_i = mean of dx_i over the maxima
    is_max = _is_max(node)
    return (is_max * tangents[0]).sum(node.axes) / is_max.sum(node.axes)


def _expand_reverse(grad, node):
    # d expand = sum over the axes that were broadcast
    src = node.src[0]
    axes = tuple(i for i, (s, n) in enumerate(zip(src.shape, node.shape)) if s != n)
    if grad.dtype.is_narrow_float:  # partial sums in float32, as a forward half sum (and
        return (ir.cast(ir.cast(grad, dtypes.float32).sum(axes), grad.dtype),)  # PyTorch)
    return (grad.sum(axes),)


def _pad_reverse(grad, node):
    return (grad.shrink(tuple((b, b + s) for (b, _), s in zip(node.padding, node.src[0].shape))),)


def _shrink_reverse(grad, node):
    src = node.src[0]
    return (grad.pad(tuple((b, s - e) for (b, e), s in zip(node.bounds, src.shape))),)


# reduce: jvp d Σx = Σdx; batching: the reduced axes move up by one
Op.register("REDUCE_SUM", "reduce",
            reverse=lambda grad, node: (grad.expand(node.src[0].shape),),  # broadcast back
            jvp=linear(lambda n, t: t.sum(n.axes)),
            batch=leading(lambda n, x, b: x.sum(shifted(n.axes))))
Op.register("REDUCE_MAX", "reduce", reverse=_reduce_max_reverse, jvp=_reduce_max_jvp,
            batch=leading(lambda n, x, b: x.max(shifted(n.axes))))

# movement M is linear: dM(x) = M(dx); batching: M on (B, ...) with the batch axis kept
Op.register("RESHAPE", "movement",
            reverse=lambda grad, node: (grad.reshape(node.src[0].shape),),  # reshape back
            jvp=linear(lambda n, t: t.reshape(n.shape)),
            batch=leading(lambda n, x, b: x.reshape((b,) + n.shape)))
Op.register("PERMUTE", "movement",
            reverse=lambda grad, node: (grad.permute(ir.inverse_permutation(node.order)),),
            jvp=linear(lambda n, t: t.permute(n.order)),
            batch=leading(lambda n, x, b: x.permute((0,) + shifted(n.order))))
Op.register("EXPAND", "movement", reverse=_expand_reverse,          # sum the broadcast axes
            jvp=linear(lambda n, t: t.expand(n.shape)),
            batch=leading(lambda n, x, b: x.expand((b,) + n.shape)))
Op.register("PAD", "movement", reverse=_pad_reverse,                # shrink the padding off
            jvp=linear(lambda n, t: t.pad(n.padding)),
            batch=leading(lambda n, x, b: x.pad(((0, 0),) + n.padding)))
Op.register("SHRINK", "movement", reverse=_shrink_reverse,          # pad back with zeros
            jvp=linear(lambda n, t: t.shrink(n.bounds)),
            batch=leading(lambda n, x, b: x.shrink(((0, b),) + n.bounds)))
Op.register("FLIP", "movement",
            reverse=lambda grad, node: (grad.flip(node.axes),),     # flip back
            jvp=linear(lambda n, t: t.flip(n.axes)),
            batch=leading(lambda n, x, b: x.flip(shifted(n.axes))))

# buffers: identities for every transform; BUFFER and CONST are leaves (no rules)
Op.register("BUFFER", "buffer")
Op.register("CONST", "buffer")
Op.register("COPY", "buffer",
            reverse=lambda grad, node: (ir.copy_to(grad, node.src[0].device),),  # copy it back
            jvp=linear(lambda n, t: ir.copy_to(t, n.device)),
            batch=leading(lambda n, x, b: ir.copy_to(x, n.device)))
Op.register("CONTIGUOUS", "buffer",
            reverse=lambda grad, node: (grad,),                     # identity
            jvp=linear(lambda n, t: t),
            batch=leading(lambda n, x, b: ir.contiguous(x)))
# an in-place write: the gradient flows to the value; no functional meaning under jvp or vmap
Op.register("ASSIGN", "buffer", reverse=lambda grad, node: (None, grad))
# detach: identity forward, no tangent, no cotangent
Op.register("DETACH", "buffer", jvp=no_tangent, batch=leading(lambda n, x, b: ir.detach(x)))

# kernel-level ops (only inside a scheduled kernel's AST)
for _name in ("LOAD", "STORE", "VALID", "SINK"):
    Op.register(_name, "kernel")
