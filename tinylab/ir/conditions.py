"""Validity conditions over index expressions (ir/symbolic.py's Lin): `Cond` is True, False,
`x < c` or an And of those, interned like the expressions; `lt`, `and_`, `in_range` build them
(simplifying by range), `substitute*` / `evaluate*` replace or evaluate variables. Re-exported by
ir/symbolic.py, which is how every caller names them (`symbolic.lt`).
"""
from __future__ import annotations

import math

from ..memo import Memo
from .symbolic import Div, Lin, Var, _intern, div, lin, mod
from . import symbolic_render   # text of a condition (it imports Cond from here)


class Cond:
    """A validity condition: True, False, `x < c`, or an And of those. Interned."""
    __slots__ = ("kind", "x", "c", "parts", "_str", "__weakref__")

    def __new__(cls, kind: str, x: Lin | None = None, c: int = 0, parts: tuple = ()):
        def build():
            o = object.__new__(cls)
            o.kind, o.x, o.c, o.parts, o._str = kind, x, c, parts, None
            return o
        return _intern(cls, (kind, x, c, parts), build)

    @property
    def is_true(self) -> bool:
        return self.kind == "true"

    @property
    def is_false(self) -> bool:
        return self.kind == "false"

    def __and__(self, other: Cond) -> Cond:
        return and_(self, other)

    def leaves(self) -> tuple[Cond, ...]:
        if self.kind == "and":
            return self.parts
        return () if self.is_true else (self,)

    def vars(self) -> set[Var]:
        out: set[Var] = set()
        for leaf in self.leaves():
            if leaf.x is not None:
                out |= leaf.x.vars()
        return out

    def __repr__(self):
        return symbolic_render.render_cond(self)


TRUE = Cond("true")
FALSE = Cond("false")


_LESS_THAN = Memo("symbolic_less_than")


def lt(x, c) -> Cond:
    """The condition x < c (both index expressions)."""
    key = (x, c)
    found = _LESS_THAN.get(key)
    if found is None:
        found = _LESS_THAN[key] = _lt(x, c)
    return found


def _lt(x, c) -> Cond:
    x = lin(x) - lin(c)
    bound = -x.const
    x = Lin(x.terms, 0)
    if x.hi < bound:
        return TRUE
    if x.lo >= bound:
        return FALSE
    g = math.gcd(*[k for _, k in x.terms])
    if g > 1:  # g*T < b  <=>  T < ceil(b / g)
        x = Lin(tuple((a, k // g) for a, k in x.terms), 0)
        bound = -(-bound // g)
    return Cond("lt", x, bound)


def and_(*conds: Cond) -> Cond:
    parts: list[Cond] = []
    for cond in conds:
        if cond.is_false:
            return FALSE
        for leaf in cond.leaves():
            if leaf not in parts:
                parts.append(leaf)
    if not parts:
        return TRUE
    if len(parts) == 1:
        return parts[0]
    return Cond("and", parts=tuple(sorted(parts, key=symbolic_render.render_cond)))


def in_range(x, lo: int, hi: int) -> Cond:
    """lo <= x < hi."""
    x = lin(x)
    return and_(lt(-x, -lo + 1), lt(x, hi))


# ---- substitution and evaluation ---------------------------------------------------------------
def substitute(x: Lin, mapping: dict, done: dict | None = None) -> Lin:
    """Replace Vars (keys) by expressions (values) and re-simplify; `done` remembers the
    sub-expressions already substituted (shared ones are substituted once)."""
    done = {} if done is None else done
    found = done.get(x)
    if found is not None:
        return found
    out = lin(x.const)
    for atom, coeff in x.terms:
        if isinstance(atom, Var):
            out = out + lin(mapping.get(atom, atom)) * coeff
        elif isinstance(atom, Div):
            out = out + div(substitute(atom.x, mapping, done), atom.c) * coeff
        else:
            out = out + mod(substitute(atom.x, mapping, done), atom.c) * coeff
    done[x] = out
    return out


def substitute_each(x: Lin, atom: Var, values: list[int]) -> list[Lin]:
    """[substitute(x, {atom: v}) for v in values], the sub-expressions without `atom`
    substituted once for all values (they come out the same whatever the value)."""
    holding: dict = {}   # sub-expression -> whether it contains atom

    def holds(y: Lin) -> bool:
        found = holding.get(y)
        if found is None:
            found = holding[y] = any(a is atom or (not isinstance(a, Var) and holds(a.x))
                                     for a, _ in y.terms)
        return found
    holds(x)
    lane_terms = [(a, c) for a, c in x.terms if a is atom or (not isinstance(a, Var) and holds(a.x))]
    if len(lane_terms) == 1 and lane_terms[0][0] is atom:
        # atom only as a term of its own (x = rest + c * atom): each value moves the constant
        rest, coeff = tuple(t for t in x.terms if t[0] is not atom), lane_terms[0][1]
        return [Lin(rest, x.const + coeff * v) for v in values]
    first: dict = {}
    out = [substitute(x, {atom: lin(values[0])}, first)] if values else []
    free = {y: done for y, done in first.items() if not holding.get(y, True)}
    return out + [substitute(x, {atom: lin(v)}, dict(free)) for v in values[1:]]


def substitute_cond(cond: Cond, mapping: dict) -> Cond:
    if cond.kind in ("true", "false"):
        return cond
    if cond.kind == "and":
        return and_(*[substitute_cond(p, mapping) for p in cond.parts])
    return lt(substitute(cond.x, mapping), cond.c)


def evaluate(x: Lin, env: dict):
    """Value of x with env mapping Var names to ints or numpy int arrays (floor semantics)."""
    total = x.const
    for atom, coeff in x.terms:
        if isinstance(atom, Var):
            value = env[atom.name]
        elif isinstance(atom, Div):
            value = evaluate(atom.x, env) // atom.c
        else:
            value = evaluate(atom.x, env) % atom.c
        total = total + value * coeff
    return total


def evaluate_cond(cond: Cond, env: dict):
    if cond.is_true:
        return True
    if cond.is_false:
        return False
    if cond.kind == "and":
        out = True
        for p in cond.parts:
            out = out & evaluate_cond(p, env)
        return out
    return evaluate(cond.x, env) < cond.c
