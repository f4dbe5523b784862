"""Notebook 03's builder exercise, checked by fuzzing: a simplifier rewrite for `x // c` over
bounded index expressions (tinylab.ir.symbolic), compared with floor division at random points
inside the bounds; notebooks/solutions.py holds the reference solution.
"""
from __future__ import annotations

import numpy as np
from exercises import passed


def check_div_rewrite(rewrite, cases: int = 400, seed: int = 0) -> bool:
    """`rewrite(x, c)` is a simplifier rule for the index expression `x // c` (x a
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
    hint = ("x.lo and x.hi are the bounds of x: when they fall within one multiple of c, what "
            "is x // c?") if any("gave None" in f for f in failures) else (
            "your rule fired where it should not, or returned a different value: for which "
            "values of the variables is your result not x // c?")
    return passed("x // c rewrite", failures, hint)
