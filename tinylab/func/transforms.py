"""grad, vjp, jvp and vmap with torch.func's names and conventions. Each calls the function once on
placeholder leaves (frontend/traced.py), then rewrites the traced graph (transform_rewrites.py) into the
answer's graph built on the real arguments: nothing runs until a value is asked for. Because
every answer is an ordinary lazy graph, the transforms compose to any depth.
"""
from __future__ import annotations

from functools import wraps

from ..errors import ShapeError
from ..frontend import autograd, traced
from ..frontend.tensor import Tensor
from ..frontend.traced import TRANSFORM_OF
from ..ir import node as ir
from . import transform_rewrites
from .pytree import flatten, unflatten


def _tensors(tree, transform: str, what: str) -> tuple[list[Tensor], object]:
    leaves, spec = flatten(tree)
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise TypeError(f"{transform}: {what} must be Tensors (or tuples, lists, dicts of "
                            f"them), got {type(leaf).__name__}")
    return leaves, spec


def _stand_ins(tensors: list[Tensor], transform: str, shapes=None) -> list[Tensor]:
    shapes = shapes or [t.shape for t in tensors]
    return [Tensor(traced.placeholder(shape, t.dtype, t.device, transform))
            for t, shape in zip(tensors, shapes)]


def _argnums(argnums, count: int, transform: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not -count <= n < count:
            raise ValueError(f"{transform}: argnums={argnums} is out of range for a function "
                             f"called with {count} positional arguments")
    return tuple(n % count for n in nums)


def _split_aux(out, has_aux: bool, transform: str):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(f"{transform}(f, has_aux=True): f must return a (output, aux) tuple")
    return out


def _trace(f, args: tuple, nums: tuple[int, ...], transform: str):
    """Call f with placeholders for the tensors of args[nums]: (real tensors, their stand-ins,
    f's output)."""
    args, real, stand = list(args), [], []
    for n in nums:
        leaves, spec = _tensors(args[n], transform, f"argument {n} of f")
        ins = _stand_ins(leaves, transform)
        real, stand, args[n] = real + leaves, stand + ins, unflatten(spec, ins)
    return real, stand, f(*args)


def _back(nodes: list, stand: list[Tensor], real: list[Tensor]) -> list:
    """Rewrite traced nodes onto the real arguments."""
    return transform_rewrites.substitute(nodes, {s.node: r.node for s, r in zip(stand, real)})


def _rebuild_tree(tree, nodes):
    leaves, spec = flatten(tree)
    return unflatten(spec, [Tensor(n) for n in nodes[:len(leaves)]]), nodes[len(leaves):]


def _cotangents(outputs: list[Tensor], seeds: list, stand: list[Tensor]) -> list:
    """Σ over outputs of d output / d stand-in, seeded with each output's cotangent."""
    total: dict = {}
    for out, seed in zip(outputs, seeds):
        for node, g in autograd.gradients(out.node, seed, [s.node for s in stand]).items():
            total[node] = total[node] + g if node in total else g
    grads = []
    for s in stand:
        g = total.get(s.node, ir.const(0, s.dtype, s.shape, s.device))
        for made in ir.toposort([g]):
            TRANSFORM_OF.setdefault(made, "vjp cotangent")
        grads.append(g)
    return grads


def grad_and_value(f, argnums=0, has_aux: bool = False):
    """f's gradient with respect to args[argnums] and f's value: (grad, value) or, with has_aux,
    (grad, (value, aux)). f must return a 0-d float Tensor."""
    @wraps(f)
    def wrapper(*args):
        nums = _argnums(argnums, len(args), "grad")
        real, stand, out = _trace(f, args, nums, "grad")
        out, aux = _split_aux(out, has_aux, "grad")
        if not isinstance(out, Tensor):
            raise TypeError(f"grad(f)(*args): f must return a Tensor, got {type(out).__name__}")
        if out.shape != ():
            raise ShapeError(f"grad(f)(*args): expected f(*args) to return a scalar (0-d) "
                             f"Tensor, got one of shape {out.shape}; use vjp or jacrev instead")
        if not out.dtype.is_float:
            raise TypeError(f"grad(f)(*args): f returned a {out.dtype.name} tensor; only "
                            f"float outputs have gradients")
        grads = _cotangents([out], [autograd.ones_like(out.node)], stand)
        aux_leaves = flatten(aux)[0] if has_aux else []
        aux_nodes = [a.node for a in aux_leaves if isinstance(a, Tensor)]
        nodes = _back(grads + [out.node] + aux_nodes, stand, real)
        grad_tree = _grads_tree(args, nums, nodes[:len(grads)], argnums)
        value = Tensor(nodes[len(grads)])
        if not has_aux:
            return grad_tree, value
        return grad_tree, (value, _replace_tensors(aux, nodes[len(grads) + 1:]))
    return wrapper


def _grads_tree(args, nums, nodes, argnums):
    trees = []
    for n in nums:
        tree, nodes = _rebuild_tree(args[n], nodes)
        trees.append(tree)
    return trees[0] if isinstance(argnums, int) else tuple(trees)


def _replace_tensors(tree, nodes):
    leaves, spec = flatten(tree)
    it = iter(nodes)
    return unflatten(spec, [Tensor(next(it)) if isinstance(x, Tensor) else x for x in leaves])


def grad(f, argnums=0, has_aux: bool = False):
    """d f / d args[argnums] (torch.func.grad): f returns a 0-d float Tensor."""
    both = grad_and_value(f, argnums, has_aux)

    @wraps(f)
    def wrapper(*args):
        g, value = both(*args)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(f, *primals, has_aux: bool = False):
    """(f(*primals), vjp_fn[, aux]): vjp_fn(cotangents) gives one cotangent per primal."""
    real, stand, out = _trace(f, primals, tuple(range(len(primals))), "vjp")
    out, aux = _split_aux(out, has_aux, "vjp")
    outputs, out_spec = _tensors(out, "vjp", "f's outputs")
    values = _back([o.node for o in outputs], stand, real)

    def vjp_fn(cotangents):
        seeds, seed_spec = _tensors(cotangents, "vjp_fn", "cotangents")
        if seed_spec != out_spec or any(s.shape != o.shape for s, o in zip(seeds, outputs)):
            raise ShapeError(f"vjp_fn: cotangents of shapes {[s.shape for s in seeds]} do not "
                             f"match f's outputs of shapes {[o.shape for o in outputs]}")
        grads = _back(_cotangents(outputs, [s.node for s in seeds], stand), stand, real)
        trees = []
        for p in primals:
            tree, grads = _rebuild_tree(p, grads)
            trees.append(tree)
        return tuple(trees)

    result = unflatten(out_spec, [Tensor(v) for v in values])
    if not has_aux:
        return result, vjp_fn
    aux_nodes = _back([a.node for a in flatten(aux)[0] if isinstance(a, Tensor)], stand, real)
    return result, vjp_fn, _replace_tensors(aux, aux_nodes)


def jvp(f, primals, tangents, has_aux: bool = False):
    """(f(*primals), the directional derivative along `tangents`), by the forward (jvp) rules."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp(f, primals, tangents): primals and tangents must be tuples")
    real, stand, out = _trace(f, tuple(primals), tuple(range(len(primals))), "jvp")
    seeds, seed_spec = _tensors(tuple(tangents), "jvp", "tangents")
    if seed_spec != flatten(tuple(primals))[1] or \
            any(s.shape != r.shape or s.dtype != r.dtype for s, r in zip(seeds, real)):
        raise ShapeError(f"jvp: tangents {[(s.shape, s.dtype.name) for s in seeds]} must match "
                         f"primals {[(r.shape, r.dtype.name) for r in real]} in shape and dtype")
    out, aux = _split_aux(out, has_aux, "jvp")
    outputs, out_spec = _tensors(out, "jvp", "f's outputs")
    pushed = transform_rewrites.tangents([o.node for o in outputs],
                                         {s.node: t.node for s, t in zip(stand, seeds)})
    pushed = [p if p is not None else o.node.const_like(0) for p, o in zip(pushed, outputs)]
    aux_nodes = [a.node for a in flatten(aux)[0] if isinstance(a, Tensor)] if has_aux else []
    nodes = _back([o.node for o in outputs] + pushed + aux_nodes, stand, real)
    count = len(outputs)
    result = (unflatten(out_spec, [Tensor(n) for n in nodes[:count]]),
              unflatten(out_spec, [Tensor(n) for n in nodes[count:2 * count]]))
    return result + (_replace_tensors(aux, nodes[2 * count:]),) if has_aux else result
