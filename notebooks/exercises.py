"""Exercise checks for the tutorial notebooks: `check(question, answer, actual, why, hint)` compares
a reader's answer with the value the notebook just computed from the real implementation. A wrong
answer gets a hint (what to look at), never the answer: that comes from `show_answer(question)` or
after three wrong tries. Builder exercises (the reader writes code) are checked by the functions
below with the project's own machinery; notebooks/solutions.py holds their reference solutions.
"""
from __future__ import annotations

import numpy as np

UNANSWERED = ...   # `guess = ...` in a notebook means "not answered yet"
TRIES = 3          # wrong tries before the answer is shown
GENERIC_HINT = "look again at the output of the cells above and the text that explains it"
_tries: dict[str, int] = {}
_answers: dict[str, tuple[object, str]] = {}


def check(question: str, answer, actual, why: str = "", hint: str = "") -> None:
    """Print whether `answer` equals `actual` (a value computed live from tinylab)."""
    verdict(question, answer, actual, why, hint)


def verdict(question: str, answer, actual, why: str = "", hint: str = "") -> bool:
    """`check`, returning True when the answer is right."""
    _answers[question] = (actual, why)
    if answer is UNANSWERED:
        print(f"[ ] {question}: write your answer in the cell above (replace the ...), "
              "then run this cell again")
        return False
    if _same(answer, actual):
        print(f"[x] {question}: {actual!r} is right" + (f" ({why})" if why else ""))
        return True
    _tries[question] = _tries.get(question, 0) + 1
    print(f"[!] {question}: you said {answer!r}, which is not what the implementation computes"
          f"\n    hint: {hint or GENERIC_HINT}")
    if _tries[question] >= TRIES:
        show_answer(question)
    else:
        print(f"    (try {_tries[question]} of {TRIES}; show_answer({question!r}) shows the answer)")
    return False


def show_answer(question: str) -> None:
    """The answer (and why) of a question checked in this session."""
    if question not in _answers:
        print(f"no question {question!r} has been checked yet: run its check cell first")
        return
    actual, why = _answers[question]
    print(f"    answer: {actual!r}" + (f"\n    why: {why}" if why else ""))


def check_all(answers: dict, actuals: dict, why: dict | None = None,
              hints: dict | None = None) -> None:
    """`check` for each key of `actuals`, then how many answers were right."""
    why, hints = why or {}, hints or {}
    right = sum(verdict(key, answers.get(key, UNANSWERED), value, why.get(key, ""),
                        hints.get(key, "")) for key, value in actuals.items())
    print(f"{right}/{len(actuals)} right")


def passed(question: str, failures: list[str], hint: str) -> bool:
    """A builder exercise's verdict: right when its checks found nothing wrong."""
    if not failures:
        print(f"[x] {question}: every check passes")
        return True
    _tries[question] = _tries.get(question, 0) + 1
    print(f"[!] {question}: " + "; ".join(failures) + f"\n    hint: {hint}")
    return False


def _same(answer, actual) -> bool:
    if isinstance(actual, float) and isinstance(answer, (int, float)):
        return abs(answer - actual) <= 1e-4 * max(1.0, abs(actual))
    if isinstance(actual, tuple) and isinstance(answer, list):
        return tuple(answer) == actual
    return answer == actual


# ---- builder exercises: the reader's code, checked by the project's machinery ----

def primitive_ops(tensor) -> list[str]:
    """The primitive ops in a tensor's lazy graph (what the kernels will compute)."""
    return sorted({node.op.name for node in tensor.node.toposort()} - {"BUFFER", "CONST"})


def check_my_sigmoid(fn) -> bool:
    """01: `fn` builds sigmoid from exp, +, - and reciprocal. Values and gradients must match
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
    failures = []
    if out.node in autograd.COMPOSITE:
        failures.append("the graph ends in a registered composite (Tensor.sigmoid or another "
                        "method with its own backward), not in the primitives' rules")
    if "RECIPROCAL" not in primitive_ops(out) or "EXP2" not in primitive_ops(out):
        failures.append(f"the graph uses {primitive_ops(out)}: no EXP2 or no RECIPROCAL")
    reference = ref_in.sigmoid()
    out.sum().backward()
    reference.sum().backward()
    if not np.allclose(out.numpy(), reference.numpy(), atol=1e-6):
        failures.append("the values differ from Tensor.sigmoid")
    elif not np.allclose(mine_in.grad.numpy(), ref_in.grad.numpy(), atol=1e-6):
        failures.append("the gradients differ from Tensor.sigmoid")
    return passed("my_sigmoid", failures, "write it as (1 + (-t).exp()).reciprocal(), "
                  "with no activation method")


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
    """01: `rule(grad, x, out)` is the backward of softsign(x) = x / (1 + |x|), attached to the
    forward chain the way Tensor methods attach theirs (`_with_backward`). Checked in float64
    against central differences of the numpy softsign, weighted by a random upstream gradient."""
    from tinylab import Tensor, dtypes
    from tinylab.frontend.elementwise import _with_backward
    rng = np.random.default_rng(0)
    data, weights = rng.standard_normal((3, 5)) * 2, rng.standard_normal((3, 5))
    x = Tensor(data, dtype=dtypes.float64, requires_grad=True)
    forward = x / (1 + x.abs())
    try:
        out = _with_backward(forward, (x,), lambda grad: (rule(grad, x, forward),))
        (out * Tensor(weights, dtype=dtypes.float64)).sum().backward()
        mine = x.grad.numpy()
    except Exception as error:   # a rule that does not build is a wrong rule
        return passed("softsign reverse rule", [f"{type(error).__name__}: {error}"],
                      "return a Tensor of x's shape, built from grad, x and out")
    numeric = central_differences(lambda a: weights * a / (1 + np.abs(a)), data)
    failures = [] if np.allclose(mine, numeric, rtol=1e-6, atol=1e-8) else \
        [f"largest gradient error {np.abs(mine - numeric).max():.3g} against central differences"]
    return passed("softsign reverse rule", failures,
                  "differentiate x / (1 + |x|) with the quotient rule; for x < 0 and x > 0 "
                  "it simplifies to one expression in |x|, then multiply by grad")


def check_div_rewrite(rewrite, cases: int = 400, seed: int = 0) -> bool:
    """03: `rewrite(x, c)` is a simplifier rule for the index expression `x // c` (x a
    tinylab.ir.symbolic.Lin over bounded variables): it returns a simpler Lin equal to `x // c`
    for every value the variables can take, or None where it does not apply. Fuzzed: random
    sums of variables with random bounds, each result compared with floor division over random
    assignments inside the bounds; the rule must also fire wherever x stays within one multiple
    of c (where `x // c` is a constant)."""
    from tinylab.ir import symbolic as sym
    rng = np.random.default_rng(seed)
    failures, should_fire, fired = [], 0, 0
    for case in range(cases):
        names = [f"v{case}_{k}" for k in range(int(rng.integers(1, 3)))]
        bounds = [sorted(int(b) for b in rng.integers(0, 40, 2)) for _ in names]
        x = sym.const(int(rng.integers(-8, 40)))
        for name, (lo, hi) in zip(names, bounds):
            x = x + sym.var(name, lo, hi) * int(rng.integers(1, 5))
        c = int(rng.integers(2, 12))
        constant = x.lo // c == x.hi // c
        should_fire += constant
        try:
            result = rewrite(x, c)
        except Exception as error:
            failures.append(f"rewrite({x}, {c}) raised {type(error).__name__}: {error}")
            break
        if result is None:
            if constant:
                failures.append(f"rewrite({x}, {c}) gave None, but {x} stays in "
                                f"[{x.lo}, {x.hi}]: one multiple of {c}")
                break
            continue
        fired += 1
        for _ in range(8):
            env = {n: int(rng.integers(lo, hi + 1))
                   for n, (lo, hi) in zip(names, bounds)}
            if sym.evaluate(sym.lin(result), env) != sym.evaluate(x, env) // c:
                failures.append(f"rewrite({x}, {c}) = {result}, which differs from floor "
                                f"division at {env}")
                break
        if failures:
            break
    print(f"    fuzzed {case + 1} expressions: the rule fired on {fired} "
          f"({should_fire} had a constant quotient)")
    return passed("x // c rewrite", failures, "x.lo and x.hi are the bounds of x; when they "
                  "fall within one multiple of c, what is x // c?")
