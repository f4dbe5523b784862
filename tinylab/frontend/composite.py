"""Composite backward at the Tensor level: `custom_backward(out, sources, rule)` (public, exported
as `tinylab.custom_backward`) gives a Tensor built from a chain of primitives one gradient rule,
applied straight to its sources in place of the chain's own rules; `_with_backward` is the same
without the argument checks, for the Tensor methods that attach theirs (elementwise, reduce,
activations, piecewise). Both are the Tensor face of frontend/autograd.py `composite`.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

from ..errors import ArgumentError, DTypeError, ShapeError
from ..ir import node as ir
from ..ir.ops import Op
from . import autograd


def _with_backward(out, sources: tuple, rule, saved: tuple = ()):
    """`out` with `rule(grad, out, *sources, *saved)` (Tensors in, one Tensor or None per source
    out) as its backward, in place of the rules of the chain that computed it
    (frontend/autograd.py `composite`). The rule gets every tensor it reads as an argument, made
    afresh from the graph's nodes, and captures none: the registry holds `out`'s node weakly and
    the rule strongly, so a captured `out`, or a captured tensor whose `.grad` came to refer to
    `out` (backward sets it), would keep them, their graphs and buffers alive for ever."""
    held = tuple(t.node for t in (*sources, *saved))

    def node_rule(grad_node, out_node):
        grads = rule(*map(_tensor, (grad_node, out_node, *held)))
        return tuple(None if g is None else g.node for g in grads)
    autograd.composite(out.node, held[:len(sources)], node_rule)
    return out


def _tensor(node):
    from .tensor import Tensor
    return Tensor(node, requires_grad=None)


def custom_backward(out, sources, rule: Callable):
    """Attach `rule` as the reverse-mode rule of the chain of ops that computed `out` from
    `sources`, and return `out` (the same Tensor). PyTorch's analogue is a
    `torch.autograd.Function`'s `backward`; here the forward is ordinary Tensor code, written first.

        y = x / (1 + x.abs())                       # softsign, built from primitives
        y = custom_backward(y, x, lambda grad, y, x: grad / (1 + x.abs()) ** 2)

    `sources` is one Tensor or a sequence of them; `rule(grad)` gets the gradient of the loss
    with respect to `out` (a Tensor of out's shape) and returns the gradient for each source: one
    Tensor (for one source) or a tuple with one Tensor or None (no gradient) per source, each of
    its source's shape. It is built from ordinary differentiable Tensor ops, so gradients of
    gradients (`tinylab.func.grad(grad(f))`) go through it too. `Tensor.backward` and
    `tinylab.func`'s reverse transforms use the rule; jvp and vmap transform the primitives of
    the forward chain. The rule belongs to the graph node: an identical expression built again
    from the same sources is the same node and shares it.

    A rule that reads tensors takes them as arguments, `rule(grad, out)` or
    `rule(grad, out, *sources)` (sigmoid's `lambda grad, s: grad * s * (1 - s)`), as PyTorch's
    `ctx.save_for_backward`: a rule that captured `out`, or a source whose `.grad` comes to refer
    to `out`, in its closure would keep them, their graphs and buffers alive for as long as the
    process runs (the rule lives as long as out's graph node).
    """
    from .tensor import Tensor
    single = isinstance(sources, Tensor)
    sources = _checked_inputs(out, sources, rule)
    shapes, dtypes_ = [s.shape for s in sources], [s.dtype for s in sources]
    wanted = _positional_parameters(rule)

    def checked(grad, value, *given):
        grads = rule(*(grad, value, *given)[:wanted])
        grads = (grads,) if single and not isinstance(grads, (tuple, list)) else grads
        if not isinstance(grads, (tuple, list)) or len(grads) != len(shapes):
            raise ArgumentError(f"custom_backward: rule {getattr(rule, '__name__', rule)!r} must "
                                f"return one gradient per source ({len(shapes)}), got "
                                f"{type(grads).__name__}"
                                + (f" of {len(grads)}" if isinstance(grads, (tuple, list)) else ""))
        for k, (g, shape) in enumerate(zip(grads, shapes)):
            if g is None:
                continue
            if not isinstance(g, Tensor):
                raise ArgumentError(f"custom_backward: the rule's gradient {k} is a "
                                    f"{type(g).__name__}, not a Tensor or None")
            if g.shape != shape:
                raise ShapeError(f"custom_backward: the rule's gradient {k} has shape {g.shape}, "
                                 f"its source has shape {shape}")
        return tuple(None if g is None else g.cast(d) if g.dtype != d else g
                     for g, d in zip(grads, dtypes_))
    return _with_backward(out, sources, checked)


def _positional_parameters(rule) -> int:
    """How many positional arguments `rule` takes (all of them for *args; 1 where Python cannot
    tell)."""
    try:
        parameters = inspect.signature(rule).parameters.values()
    except (TypeError, ValueError):
        return 1
    kinds = [p.kind for p in parameters]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return 1 << 16
    return sum(k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
               for k in kinds)


def _checked_inputs(out, sources, rule) -> tuple:
    """custom_backward's arguments checked: `sources` as a tuple of Tensors out is computed from."""
    from .tensor import Tensor
    if not isinstance(out, Tensor):
        raise ArgumentError(f"custom_backward: out must be a Tensor, got {type(out).__name__}")
    sources = (sources,) if isinstance(sources, Tensor) else tuple(sources) \
        if isinstance(sources, Sequence) else None
    if sources is None or not sources or not all(isinstance(s, Tensor) for s in sources):
        raise ArgumentError("custom_backward: sources must be a Tensor or a non-empty sequence "
                            "of Tensors")
    if not callable(rule):
        raise ArgumentError(f"custom_backward: rule must be callable, got {type(rule).__name__}")
    if not out.dtype.is_float:
        raise DTypeError(f"custom_backward: out must be a float tensor, it is {out.dtype.name}")
    if out.node.op in (Op.BUFFER, Op.CONST):
        raise ArgumentError("custom_backward: out has no chain of ops to replace (it is a "
                            f"{'realized buffer' if out.node.op is Op.BUFFER else 'constant'}); "
                            "attach the rule before realizing out")
    reachable = set(ir.toposort([out.node]))
    for k, source in enumerate(sources):
        if source.node is out.node:
            raise ArgumentError(f"custom_backward: source {k} is out itself")
        if source.node not in reachable:
            raise ArgumentError(f"custom_backward: out is not computed from source {k} "
                                f"(shape {source.shape})")
    return sources
