"""Reference solutions of the notebooks' builder exercises, in one place: tests/notebooks/
test_exercises.py runs each checker of notebooks/exercises.py with the solution here (it must pass)
and with a trivial or wrong answer (it must fail). Read them after trying the exercise.
"""
from __future__ import annotations


def my_sigmoid(t):
    """01: sigmoid from primitives; autograd differentiates the chain with the primitives' rules."""
    return (1 + (-t).exp()).reciprocal()


def softsign_reverse_rule(grad, x, out):
    """01: d/dx x / (1 + |x|) = ((1 + |x|) - x sign(x)) / (1 + |x|)² = 1 / (1 + |x|)²."""
    return grad / ((1 + x.abs()) * (1 + x.abs()))


def div_rewrite(x, c):
    """03: x // c is the constant x.lo // c when every value of x lies in one multiple of c."""
    from tinylab.ir import symbolic as sym
    return sym.const(x.lo // c) if x.lo // c == x.hi // c else None


MAX_ROW = "({0} if ({0} > {1} or {0} != {0}) else {1})"   # 06: NaN in either input wins
WRONG_MAX_ROW = "max({0}, {1})"   # 06: Python's max drops a NaN in its second argument

# 07: actions for the 128 x 128 matmul's plain plan, as (action, axis, amount): a vector of
# 8 columns, a 4 x 2 register tile of independent accumulators, two threads (the heuristic's)
PLAN_07 = [("VECTORIZE", 1, 8), ("UPCAST", 1, 2), ("UPCAST", 0, 4), ("THREAD", 0, 2)]
