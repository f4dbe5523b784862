"""Notebook 01's builder exercises, checked by autograd itself: a sigmoid built from primitives, a
reverse rule attached with tinylab.custom_backward (against central differences), and the
backward walk (a topological order and gradient accumulation, on a graph with a diamond, against
Tensor.backward and central differences). Each says right, not answered, or what is wrong with a
hint that asks a question; notebooks/solutions.py holds the reference solutions.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
from exercises import UNANSWERED, passed


def primitive_ops(tensor) -> list[str]:
    """The primitive ops in a tensor's lazy graph (what the kernels will compute)."""
    return sorted({node.op.name for node in tensor.node.toposort()} - {"BUFFER", "CONST"})


def check_my_sigmoid(fn) -> bool:
    """`fn` builds sigmoid from exp, +, - and reciprocal. Values and gradients must match
    Tensor.sigmoid, and the gradient must come from the primitives' own rules: Tensor.sigmoid
    registers a composite backward, so `return t.sigmoid()` does not count."""
    from tinylab import Tensor
    from tinylab.frontend import autograd
    data = np.linspace(-4, 4, 9, dtype=np.float32)
    mine_in, ref_in = Tensor(data, requires_grad=True), Tensor(data, requires_grad=True)
    out = fn(mine_in)
    if not isinstance(out, Tensor):
        print("[ ] my_sigmoid: return a Tensor built from t (replace the ...)")
        return False
    if out.node in autograd.COMPOSITE:
        return passed("my_sigmoid", ["the graph ends in a registered composite (Tensor.sigmoid or "
                                     "another method with its own backward)"],
                      "which of the methods you call brings a backward of its own, and which "
                      "primitives would let autograd's rule table do the work instead?")
    if "RECIPROCAL" not in primitive_ops(out) or "EXP2" not in primitive_ops(out):
        return passed("my_sigmoid", [f"the graph uses {primitive_ops(out)}: no EXP2 or no "
                                     "RECIPROCAL"],
                      "which primitive does .exp() lower to, and which one computes 1 / x?")
    reference = ref_in.sigmoid()
    out.sum().backward()
    reference.sum().backward()
    mine, theirs = out.numpy(), reference.numpy()
    if not np.allclose(mine, theirs, atol=1e-6):
        at = int(np.argmax(np.abs(mine - theirs)))
        return passed("my_sigmoid", [f"at t = {data[at]:g} yours gives {mine[at]:.4g}, "
                                     f"Tensor.sigmoid {theirs[at]:.4g}"],
                      "sigmoid(0) is 0.5 and sigmoid grows with t: does yours, and is the sign "
                      "inside the exponential the one 1 / (1 + exp(-t)) has?")
    failures = [] if np.allclose(mine_in.grad.numpy(), ref_in.grad.numpy(), atol=1e-6) else \
        ["the values match but the gradients differ from Tensor.sigmoid"]
    return passed("my_sigmoid", failures, "does every op of yours have a float gradient rule?")


def central_differences(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d sum(f(x)) / dx, one coordinate at a time (float64)."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up).sum() - f(down).sum()) / (2 * eps)
    return grad


def check_reverse_rule(rule) -> bool:
    """`rule(grad, x, out)` is the backward of softsign(x) = x / (1 + |x|), attached to the
    forward chain with `tinylab.custom_backward`, as Tensor methods attach theirs. Checked in
    float64 against central differences of the numpy softsign, weighted by a random upstream
    gradient."""
    from tinylab import Tensor, custom_backward, dtypes
    rng = np.random.default_rng(0)
    data, weights = rng.standard_normal((3, 5)) * 2, rng.standard_normal((3, 5))
    x = Tensor(data, dtype=dtypes.float64, requires_grad=True)
    forward = x / (1 + x.abs())
    try:
        out = custom_backward(forward, x, lambda grad, out, x: rule(grad, x, out))
        (out * Tensor(weights, dtype=dtypes.float64)).sum().backward()
        mine = x.grad.numpy()
    except Exception as error:   # a rule that does not build is a wrong rule
        return passed("softsign reverse rule", [f"{type(error).__name__}: {error}"],
                      "what shape must the gradient of x have, and which of grad, x and out "
                      "does it need?")
    numeric = central_differences(lambda a: weights * a / (1 + np.abs(a)), data)
    failures = [] if np.allclose(mine, numeric, rtol=1e-6, atol=1e-8) else \
        [f"largest gradient error {np.abs(mine - numeric).max():.3g} against central differences"]
    return passed("softsign reverse rule", failures,
                  "what is d/dx of x / (1 + |x|) for x > 0, and for x < 0? Do the two cases "
                  "share one expression in |x|, and where does the upstream grad enter?")


# ---- the backward walk ------------------------------------------------------------------------

def diamond():
    """(loss, [x, y]) in float64: a = x*y is used twice (by exp and by the product with x), and x
    twice too, so two gradients meet at each of them."""
    from tinylab import Tensor, dtypes
    rng = np.random.default_rng(3)
    x, y = (Tensor(rng.standard_normal(4) * 0.5, dtype=dtypes.float64, requires_grad=True)
            for _ in "xy")
    a = x * y
    return (a.exp() + a * x).sum(), [x, y]


def _diamond_numpy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.exp(x * y) + x * y * x


@contextmanager
def _no_shortcuts():
    """Tensor.backward, autograd.gradients and Node.toposort raise while a walk is checked: the
    walk must be the reader's own."""
    from tinylab import Tensor
    from tinylab.frontend import autograd
    from tinylab.ir.node import Node

    def refuse(name):
        def refused(*args, **kwargs):
            raise RuntimeError(f"{name} is the library's walk: write your own")
        return refused
    saved = Tensor.backward, autograd.gradients, Node.toposort
    Tensor.backward, autograd.gradients = refuse("backward()"), refuse("autograd.gradients")
    Node.toposort = refuse("Node.toposort")
    try:
        yield
    finally:
        Tensor.backward, autograd.gradients, Node.toposort = saved


def order_problems(order: list, root) -> list[str]:
    """What is wrong with `order` as a topological order of root's graph, if anything."""
    every = root.toposort()
    if len(order) != len(set(order)):
        return [f"{len(order) - len(set(order))} node(s) appear twice in your order"]
    if set(order) != set(every):
        return [f"your order has {len(order)} nodes, the graph has {len(every)}"]
    place = {node: k for k, node in enumerate(order)}
    late = [node for node in order for src in node.src if place[src] > place[node]]
    return [f"{late[0].op.name} comes before one of its sources"] if late else []


def check_backward_walk(my_order, my_gradients) -> bool:
    """`my_order(root)` lists every node of root's graph once, each after its sources;
    `my_gradients(loss, targets)` walks that order backwards applying autograd.RULES and returns
    one gradient Tensor per target. Checked on diamond(): the order itself, then the gradients
    against Tensor.backward and against central differences of the same function in numpy."""
    loss, (x, y) = diamond()
    named = {"my_order": lambda: my_order(loss.node),
             "my_gradients": lambda: my_gradients(loss, [x, y])}
    answers = {}
    for name, call in named.items():
        try:
            with _no_shortcuts():
                answers[name] = call()
        except Exception as error:
            return passed("backward walk", [f"{name} raised {type(error).__name__}: {error}"],
                          "can your order come from node.src alone, each node's sources placed "
                          "before it?" if name == "my_order" else "do you visit a node's users "
                          "before the node, so its gradient is complete when its rule runs?")
        if answers[name] is UNANSWERED:
            print("[ ] backward walk: write my_order and my_gradients (replace the ...)")
            return False
    order, grads = list(answers["my_order"]), answers["my_gradients"]
    problems = order_problems(order, loss.node)
    if problems:
        hint = ("does your walk remember which nodes it has placed already?" if "twice" in
                problems[0] else "when you place a node, are all of its sources placed already?")
        return passed("backward walk", problems, hint)
    try:
        mine = [g.numpy() for g in grads]
    except Exception as error:
        return passed("backward walk", [f"my_gradients raised {type(error).__name__}: {error}"],
                      "do you visit a node's users before the node itself, so its gradient is "
                      "complete when you apply its rule?")
    x0, y0 = x.numpy(), y.numpy()
    numeric = [central_differences(lambda v: _diamond_numpy(v, y0), x0),
               central_differences(lambda v: _diamond_numpy(x0, v), y0)]
    loss.backward()
    failures = [f"d loss / d {name}: yours {np.round(g, 4).tolist()}, backward() "
                f"{np.round(t.grad.numpy(), 4).tolist()}"
                for name, g, t, n in zip("xy", mine, (x, y), numeric)
                if not (np.allclose(g, t.grad.numpy(), atol=1e-8)
                        and np.allclose(g, n, atol=1e-6))]
    return passed("backward walk", failures,
                  "x * y is used twice here, and x twice: when a second gradient reaches a "
                  "node, what happens to the first one?")
