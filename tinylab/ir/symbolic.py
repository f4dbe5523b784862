"""Integer index expressions and the simplifier that keeps generated indices clean.

Every index is kept in one canonical form, `Lin`: a sum of `coeff * atom` terms plus a constant,
where an atom is a loop variable (`Var`), a floor division (`Div`) or a floor modulo (`Mod`) of a
Lin by a positive constant. Building an expression simplifies it: constants fold, terms merge,
`(8*a + b) // 8 -> a + b // 8`, range-aware folds (`b // 8 -> 0` when 0 <= b < 8), nested
div/mod, and `(x // c) * c + x % c -> x`. Validity masks are `Lt` comparisons joined by `And`.
All arithmetic has Python's floor semantics; renderers emit floor helpers where an operand can be
negative. Used by ir/view.py (views -> indices) and codegen (axis splits, lanes); an index
simplified where its mask holds is ir/simplify_valid.py. Here: interning, the atoms, Lin and
division/modulo; conditions.py (masks), symbolic_render.py (text) and variable.py (Variable)
hold the rest, re-exported at the end so `symbolic.X` names every piece.
"""
from __future__ import annotations

import math
import threading
import weakref
from typing import Union

from ..memo import Memo, Role, register


# the intern table holds each expression only while something else does: equal expressions
# are the same object while alive, and dead ones leave the table. A plain dict of weak
# references (what WeakValueDictionary keeps, without its Python-level lookup)
_INTERN = register("symbolic expressions", {}, Role.LIVE)  # (cls, key) -> weakref to the live one
_INTERN_LOCK = threading.RLock()  # compile threads: one object per expression; re-entered by
                                  # a weakref callback that a collection runs inside the lock
# (terms, const) as a caller gave them -> the canonical Lin they make
_AS_GIVEN = Memo("symbolic_as_given")
_SUMS = Memo("symbolic_sums")      # (Lin, Lin or int) -> their sum
_PRODUCTS = Memo("symbolic_products")  # (Lin, int) -> the product


def _intern(cls, key, build):
    """The one live object for (cls, key). `build` runs outside the lock (it may intern the
    expressions it is made of); when two threads build the same one, the first stored wins."""
    entry = (cls, key)
    found = _live(entry)
    if found is None:
        built = build()
        with _INTERN_LOCK:
            found = _live(entry)
            if found is None:
                found = built
                _INTERN[entry] = weakref.KeyedRef(built, _forget, entry)
    return found


def _live(entry):
    """The live interned object for (cls, key), or None."""
    ref = _INTERN.get(entry)
    return None if ref is None else ref()


def _forget(dead_ref, lock=_INTERN_LOCK, table=_INTERN) -> None:
    """The weakref callback, one for every entry (a KeyedRef carries its entry): it drops the
    entry once its object dies, only if the table still holds that dead reference (a new object
    for the same key may have taken its place). The lock and table are bound at definition:
    at interpreter exit, expressions die after this module's globals are cleared."""
    with lock:
        if table.get(dead_ref.key) is dead_ref:
            del table[dead_ref.key]


class Atom:
    """A Var, Div or Mod: something a Lin multiplies by a coefficient."""
    __slots__ = ("lo", "hi", "sort_key", "__weakref__")
    lo: int
    hi: int
    sort_key: tuple


class Var(Atom):
    __slots__ = ("name",)

    def __new__(cls, name: str, lo: int, hi: int):
        def build():
            v = object.__new__(cls)
            v.name, v.lo, v.hi = name, lo, hi
            v.sort_key = (0, name)
            return v
        return _intern(cls, (name, lo, hi), build)

    def __repr__(self):
        return self.name


class Div(Atom):
    __slots__ = ("x", "c")

    def __new__(cls, x: Lin, c: int):
        def build():
            d = object.__new__(cls)
            d.x, d.c = x, c
            d.lo, d.hi = x.lo // c, x.hi // c
            d.sort_key = (1, str(x), c)
            return d
        return _intern(cls, (x, c), build)

    def __repr__(self):
        return f"({self.x}//{self.c})"


class Mod(Atom):
    __slots__ = ("x", "c")

    def __new__(cls, x: Lin, c: int):
        def build():
            m = object.__new__(cls)
            m.x, m.c = x, c
            m.lo, m.hi = (0, min(c - 1, x.hi)) if x.lo >= 0 else (0, c - 1)
            m.sort_key = (2, str(x), c)
            return m
        return _intern(cls, (x, c), build)

    def __repr__(self):
        return f"({self.x}%{self.c})"


class Lin:
    """sum(coeff * atom) + const, canonical and interned: equal expressions are the same object."""
    __slots__ = ("terms", "const", "lo", "hi", "_str", "_vars", "__weakref__")

    def __new__(cls, terms: tuple = (), const: int = 0):
        raw = (terms, const) if type(terms) is tuple else None
        found = _AS_GIVEN.get(raw) if raw is not None else None
        if found is not None:  # built from these very terms before: skip canonicalizing
            return found
        terms, const = _canonical(terms, const)
        def build():
            e = object.__new__(cls)
            e.terms, e.const = terms, const
            e.lo = const + sum(c * (a.lo if c > 0 else a.hi) for a, c in terms)
            e.hi = const + sum(c * (a.hi if c > 0 else a.lo) for a, c in terms)
            e._str = e._vars = None
            return e
        found = _intern(cls, (terms, const), build)
        if raw is not None:
            _AS_GIVEN[raw] = found
        return found

    # ---- views of the form ----
    @property
    def is_const(self) -> bool:
        return not self.terms

    def as_atom(self) -> Atom | None:
        """The atom if this is exactly `1 * atom + 0`."""
        if self.const == 0 and len(self.terms) == 1 and self.terms[0][1] == 1:
            return self.terms[0][0]
        return None

    def vars(self) -> frozenset[Var]:
        """The Vars in x, each shared sub-expression visited once (a stack of views nests
        one index in several divisions: walked as a tree, that is exponential); kept on the
        expression (it is immutable), as planning asks each index many times."""
        if self._vars is not None:
            return self._vars
        out: set[Var] = set()
        stack, seen = [self], {self}
        while stack:
            for atom, _ in stack.pop().terms:
                if isinstance(atom, Var):
                    out.add(atom)
                elif atom.x not in seen:
                    seen.add(atom.x)
                    stack.append(atom.x)
        self._vars = frozenset(out)
        return self._vars

    # ---- arithmetic ----
    def __add__(self, other: Union[Lin, int]) -> Lin:
        key = (self, other) if type(other) in (Lin, int) else None  # not True for 1: lin says
        found = _SUMS.get(key)
        if found is None:
            right = lin(other)
            found = Lin(self.terms + right.terms, self.const + right.const)
            if key is not None:
                _SUMS[key] = found
        return found

    __radd__ = __add__

    def __neg__(self) -> Lin:
        return self * -1

    def __sub__(self, other):
        return self + (-lin(other))

    def __rsub__(self, other):
        return lin(other) + (-self)

    def __mul__(self, k: int) -> Lin:
        if not isinstance(k, int):
            if isinstance(k, Lin) and k.is_const:
                k = k.const
            elif self.is_const:
                return k * self.const
            else:
                raise TypeError(f"index expressions multiply by constants only, not {k}")
        if k == 0:
            return ZERO
        key = (self, k)
        found = _PRODUCTS.get(key)
        if found is None:
            found = _PRODUCTS[key] = Lin(tuple((a, c * k) for a, c in self.terms), self.const * k)
        return found

    __rmul__ = __mul__

    def __floordiv__(self, c: int) -> Lin:
        return div(self, c)

    def __mod__(self, c: int) -> Lin:
        return mod(self, c)

    def __lt__(self, c):  # builds a condition, it does not compare
        return lt(self, c)

    def __ge__(self, c):
        return lt(-self, -lin(c) + 1)

    def __repr__(self):
        if self._str is None:
            self._str = render(self)
        return self._str


def _canonical(terms, const: int) -> tuple[tuple, int]:
    merged: dict[Atom, int] = {}
    for atom, coeff in terms:
        if coeff:
            merged[atom] = merged.get(atom, 0) + coeff
    const += _fold_div_mod_pairs(merged)
    ordered = sorted(((a, c) for a, c in merged.items() if c), key=lambda t: t[0].sort_key)
    return tuple(ordered), const


def _fold_div_mod_pairs(merged: dict) -> int:
    """(x // c) * (k*c) + (x % c) * k  ->  x * k   (what a split axis merges back into).
    Folds in place; returns the constant the folded x contributes."""
    carry = 0
    for atom in [a for a in merged if isinstance(a, Mod)]:
        k = merged.get(atom, 0)
        partner = _live((Div, (atom.x, atom.c)))
        if not k or partner is None or merged.get(partner, 0) != k * atom.c:
            continue
        del merged[atom], merged[partner]
        for inner, coeff in atom.x.terms:
            merged[inner] = merged.get(inner, 0) + coeff * k
        carry += atom.x.const * k
    return carry


def lin(value) -> Lin:
    if isinstance(value, Lin):
        return value
    if isinstance(value, Variable):  # a symbolic size: its expression over the variables
        return value.lin
    if isinstance(value, Atom):
        return Lin(((value, 1),), 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"not an index expression: {value!r}")
    return Lin((), value)


def const(value: int) -> Lin:
    return Lin((), value)


def var(name: str, lo: int, hi: int) -> Lin:
    """A loop variable ranging over lo..hi inclusive."""
    return lin(Var(name, lo, hi))


ZERO = Lin((), 0)


# ---- division and modulo ---------------------------------------------------------------------
def _split(x: Lin, c: int) -> tuple[Lin, Lin]:
    """x == quotient*c + rest, where rest keeps the terms whose coefficient c does not divide."""
    q_terms, r_terms = [], []
    for atom, coeff in x.terms:
        (q_terms if coeff % c == 0 else r_terms).append((atom, coeff))
    q_const, r_const = divmod(x.const, c)
    quotient = Lin(tuple((a, k // c) for a, k in q_terms), q_const)
    return quotient, Lin(tuple(r_terms), r_const)


def _small_split(rest: Lin, c: int) -> tuple[Lin, Lin, int] | None:
    """Split rest into big + small where c is a multiple of g (the gcd of big's coefficients)
    and 0 <= small < g, so floor/mod by c only sees big. Returns (big, small, g)."""
    best = None
    for g in sorted({math.gcd(k, c) for _, k in rest.terms}, reverse=True):
        if g <= 1:
            continue
        big = [(a, k) for a, k in rest.terms if k % g == 0]
        small = Lin(tuple((a, k) for a, k in rest.terms if k % g), rest.const)
        if big and 0 <= small.lo and small.hi < g:
            best = (Lin(tuple(big), 0), small, g)
            break
    return best


_QUOTIENTS = Memo("symbolic_quotients")   # (Lin, c) -> x // c
_REMAINDERS = Memo("symbolic_remainders")  # (Lin, c) -> x % c


def div(x: Lin, c: int) -> Lin:
    x = lin(x)
    if c <= 0:
        raise ValueError(f"index division by non-positive {c}")
    if c == 1:
        return x
    return _remembered(_QUOTIENTS, _div, x, c)


def _remembered(table: Memo, compute, x: Lin, c: int) -> Lin:
    """compute(x, c) through its memo table."""
    key = (x, c)
    found = table.get(key)
    if found is None:
        found = table[key] = compute(x, c)
    return found


def _div(x: Lin, c: int) -> Lin:
    quotient, rest = _split(x, c)
    if rest.is_const:
        return quotient + rest.const // c
    if rest.lo // c == rest.hi // c:
        return quotient + rest.lo // c
    g = math.gcd(c, *[k for _, k in rest.terms])
    if g > 1:  # (g*T + r) // c == (T + r // g) // (c // g)   for 0 <= r < c
        scaled = Lin(tuple((a, k // g) for a, k in rest.terms), rest.const // g)
        return quotient + div(scaled, c // g)
    found = _small_split(rest, c)
    if found is not None:
        big, _, g = found
        return quotient + div(Lin(tuple((a, k // g) for a, k in big.terms)), c // g)
    atom = rest.as_atom()
    if isinstance(atom, Div):  # (y // a) // c == y // (a*c)
        return quotient + div(atom.x, atom.c * c)
    if isinstance(atom, Mod) and atom.c % c == 0:  # (y % (a*c)) // c == (y // c) % a
        return quotient + mod(div(atom.x, c), atom.c // c)
    return quotient + Lin(((Div(rest, c), 1),))


def mod(x: Lin, c: int) -> Lin:
    x = lin(x)
    if c <= 0:
        raise ValueError(f"index modulo by non-positive {c}")
    if c == 1:
        return ZERO
    return _remembered(_REMAINDERS, _mod, x, c)


def _mod(x: Lin, c: int) -> Lin:
    rest = Lin(tuple((a, k % c) for a, k in x.terms), x.const % c)
    if rest.is_const:
        return rest
    if 0 <= rest.lo and rest.hi < c:
        return rest
    g = math.gcd(c, *[k for _, k in rest.terms])
    if g > 1:  # (g*T + r) % c == g*((T + r//g) % (c//g)) + r % g
        scaled = Lin(tuple((a, k // g) for a, k in rest.terms), rest.const // g)
        return mod(scaled, c // g) * g + rest.const % g
    found = _small_split(rest, c)
    if found is not None:
        big, small, g = found
        return mod(Lin(tuple((a, k // g) for a, k in big.terms)), c // g) * g + small
    atom = rest.as_atom()
    if isinstance(atom, Mod) and atom.c % c == 0:  # (y % (a*c)) % c == y % c
        return mod(atom.x, c)
    if rest.lo >= 0 and rest.hi < 2 * c and rest.lo >= c:
        return rest - c
    return Lin(((Mod(rest, c), 1),))


# the rest of the algebra, in modules of their own; named here so `symbolic.X` names every piece
from .symbolic_render import render, render_cond, repeated_parts  # noqa: E402,F401
from .conditions import (FALSE, TRUE, Cond, and_, evaluate, evaluate_cond, in_range,  # noqa: E402,F401
                         lt, substitute, substitute_cond, substitute_each)
from .variable import (INT_DTYPE_NAMES, RESERVED_PREFIXES, Variable, any_symbolic,  # noqa: E402,F401
                       as_lin, bound_shape, bound_value, fits_bounds, is_symbolic, max_of,
                       max_shape,
                       rebind, unbind_args)
