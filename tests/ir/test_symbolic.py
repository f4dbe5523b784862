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


def test_substitute_each_is_substitute_for_every_value():
    """substitute_each (each lane's index from one expression) gives the very expression
    substitute does, whether the variable is a term of its own (the shortcut: only the
    constant moves) or sits inside a div or mod."""
    random.seed(2)
    lane = sym.var("lane", 0, 15)
    others = [sym.var("x", 0, 7), sym.var("y", 0, 40)]
    shortcut = 0
    for _ in range(400):
        expr = _random_expr([lane] + others, 3) + lane * random.choice([1, 4, 9, -3])
        atom = lane.as_atom()
        got = sym.substitute_each(expr, atom, list(range(16)))
        want = [sym.substitute(expr, {atom: sym.const(v)}) for v in range(16)]
        assert all(g is w for g, w in zip(got, want)) and len(got) == 16, expr
        shortcut += all(a is atom or atom not in a.x.vars() for a, _ in expr.terms
                        if not isinstance(a, sym.Var))
    assert 0 < shortcut < 400   # both ways taken


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


RENDER_A_CONV = """
import sys
import numpy as np
from tinylab import Tensor
from tinylab.engine.realize import render_for
from tinylab.schedule.schedule import schedule

def sources(t):
    return [render_for(k.ast, "CPU") for k in schedule([t.node]).kernels]

rng = np.random.default_rng(0)
if sys.argv[1] == "after_others":  # other padded, strided convolutions simplify their indices first
    for shape in ((1, 2, 7, 7), (2, 1, 11, 5)):
        for padding in (1, 3):
            a = Tensor(rng.random(shape, dtype=np.float32))
            sources(a.conv2d(Tensor(rng.random((2, shape[1], 3, 3), dtype=np.float32)),
                             padding=padding, stride=2))
x = Tensor(np.ones((2, 3, 9, 9), np.float32))
print("\\n".join(sources(x.conv2d(Tensor(np.ones((4, 3, 3, 3), np.float32)), padding=2,
                                  stride=2, dilation=2))))
"""


def test_a_kernel_renders_the_same_whatever_compiled_before():
    """simplify_valid's temporaries are numbered per call: a kernel's source does not depend on
    what the process simplified before it (compile caches are shared across processes)."""
    import subprocess
    import sys
    alone, after_others = (subprocess.run([sys.executable, "-c", RENDER_A_CONV, order],
                                          check=True, capture_output=True, text=True,
                                          timeout=120).stdout
                           for order in ("alone", "after_others"))
    assert "for (" in alone and alone == after_others


def test_simplify_valid_names_its_temporaries_per_call():
    from tinylab.ir import simplify_valid as module
    x = sym.var("tl_fresh_x", 0, 40)
    index, valid = (x + 5) // 4 * 7 + (x + 5) % 4, sym.and_(sym.lt(x, 30), sym.lt(-x, -2))
    first = module._simplify_valid_narrowed(index, valid)  # the unmemoized computation
    y = sym.var("tl_fresh_y", 0, 50)
    module._simplify_valid_narrowed((y + 3) // 6 + (y + 3) % 6 * 9, sym.lt(-y, -4))
    again = module._simplify_valid_narrowed(index, valid)
    assert again[0] is first[0] and again[1] is first[1]
    assert str(first[0]) == str(module.simplify_valid(index, valid)[0])


def test_a_bound_whose_first_term_is_negative_reads_as_its_negation():
    """x < c with a negative first coefficient is written (-x) >= 1-c, so a window's two
    bounds compare one expression ((a-b)>=0 and (a-b)<8: one unsigned compare for a C
    compiler, where (-a+b)<1 and (a-b)<8 were two); the text means what the condition does."""
    a, b = sym.var("a", 0, 9), sym.var("b", 0, 2)
    low, high = sym.lt(b - a, 1), sym.lt(a - b, 8)
    assert (str(low), str(high), str(sym.lt(-a, -2))) == ("((a-b)>=0)", "((a-b)<8)", "(a>=3)")
    assert str(sym.and_(low, high)) == "(((a-b)<8) && ((a-b)>=0))"
    for av, bv in itertools.product(range(10), range(3)):
        env = {"a": av, "b": bv}
        text = str(sym.and_(low, high)).replace("&&", "and")
        assert eval(text, {}, env) == (0 <= av - bv < 8)
