"""Integer index expressions and the simplifier that keeps generated indices clean.

Every index is kept in one canonical form, `Lin`: a sum of `coeff * atom` terms plus a constant,
where an atom is a loop variable (`Var`), a floor division (`Div`) or a floor modulo (`Mod`) of a
Lin by a positive constant. Building an expression simplifies it: constants fold, terms merge,
`(8*a + b) // 8 -> a + b // 8`, range-aware folds (`b // 8 -> 0` when 0 <= b < 8), nested
div/mod, and `(x // c) * c + x % c -> x`. Validity masks are `Lt` comparisons joined by `And`.
All arithmetic has Python's floor semantics; renderers emit floor helpers where an operand can be
negative. Used by ir/view.py (views -> indices) and codegen (axis splits, lanes); an index
simplified where its mask holds is ir/simplify_valid.py.
"""
from __future__ import annotations

import math
import numbers
import threading
import weakref
from typing import Union

from ..memo import Memo


# the intern table holds each expression only while something else does: equal expressions
# are the same object while alive, and dead ones leave the table. A plain dict of weak
# references (what WeakValueDictionary keeps, without its Python-level lookup)
_INTERN: dict = {}   # (cls, key) -> weakref.ref to the one live object
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
                _INTERN[entry] = weakref.ref(built, _forgetter(entry))
    return found


def _live(entry):
    """The live interned object for (cls, key), or None."""
    ref = _INTERN.get(entry)
    return None if ref is None else ref()


def _forgetter(entry):
    """The weakref callback that drops `entry` once its object dies (only if the table still
    holds that dead reference: a new object for the same key may have taken its place)."""
    def forget(dead_ref, entry=entry) -> None:
        with _INTERN_LOCK:
            if _INTERN.get(entry) is dead_ref:
                del _INTERN[entry]
    return forget


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
    __slots__ = ("terms", "const", "lo", "hi", "_str", "__weakref__")

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
            e._str = None
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

    def vars(self) -> set[Var]:
        """The Vars in x, each shared sub-expression visited once (a stack of views nests
        one index in several divisions: walked as a tree, that is exponential)."""
        out: set[Var] = set()
        stack, seen = [self], {self}
        while stack:
            for atom, _ in stack.pop().terms:
                if isinstance(atom, Var):
                    out.add(atom)
                elif atom.x not in seen:
                    seen.add(atom.x)
                    stack.append(atom.x)
        return out

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


# ---- conditions ------------------------------------------------------------------------------
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
        return render_cond(self)


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
    return Cond("and", parts=tuple(sorted(parts, key=render_cond)))


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


# ---- rendering -------------------------------------------------------------------------------
def render(x: Lin, div_fn=None, mod_fn=None, names: dict | None = None) -> str:
    """Text of x. div_fn/mod_fn(text, c, may_be_negative) let renderers choose C operators;
    `names` ({Lin: text}) writes those expressions, where a division or modulo takes them, as
    the given name (see repeated_parts). The plain text (no div_fn/mod_fn/names) is kept on x:
    it is also the order of terms and leaves."""
    plain = div_fn is None and mod_fn is None and not names
    if plain and x._str is not None:
        return x._str
    def atom_text(atom: Atom) -> str:
        if isinstance(atom, Var):
            return atom.name
        inner = names.get(atom.x) if names else None
        if inner is None:
            inner = render(atom.x, div_fn, mod_fn, names)
        negative = atom.x.lo < 0
        if isinstance(atom, Div):
            return div_fn(inner, atom.c, negative) if div_fn else f"({inner}//{atom.c})"
        return mod_fn(inner, atom.c, negative) if mod_fn else f"({inner}%{atom.c})"

    pieces: list[str] = []
    for atom, coeff in x.terms:
        text = atom_text(atom)
        if coeff == 1:
            piece = text
        elif coeff == -1:
            piece = f"-{text}"
        else:
            piece = f"{text}*{coeff}" if coeff > 0 else f"-{text}*{-coeff}"
        pieces.append(piece)
    if x.const or not pieces:
        pieces.append(str(x.const))
    out = pieces[0]
    for piece in pieces[1:]:
        out += piece if piece.startswith("-") else "+" + piece
    out = out if len(pieces) == 1 else f"({out})"
    if plain:
        x._str = out
    return out


def render_cond(cond: Cond, div_fn=None, mod_fn=None, and_text: str = " && ",
                names: dict | None = None) -> str:
    """Text of a condition; the plain text (no div_fn/mod_fn/names) is kept on it, as render
    does: and_ orders its leaves by that text."""
    if div_fn is None and mod_fn is None and and_text == " && " and not names:
        if cond._str is None:
            cond._str = _render_cond(cond, None, None, and_text, None)
        return cond._str
    return _render_cond(cond, div_fn, mod_fn, and_text, names)


def _render_cond(cond: Cond, div_fn, mod_fn, and_text: str, names) -> str:
    if cond.is_true:
        return "1"
    if cond.is_false:
        return "0"
    if cond.kind == "and":
        return "(" + and_text.join(render_cond(p, div_fn, mod_fn, names=names)
                                   for p in cond.parts) + ")"
    if all(k < 0 for _, k in cond.x.terms):  # -x < c  reads better as  x >= 1-c
        return f"({render(-cond.x, div_fn, mod_fn, names)}>={1 - cond.c})"
    return f"({render(cond.x, div_fn, mod_fn, names)}<{cond.c})"


def repeated_parts(exprs) -> list[Lin]:
    """The expressions a division or modulo takes that the text of `exprs` (Lins and Conds)
    would write out more than once, and that hold a division or modulo themselves: innermost
    first, for a renderer to declare once and write by name. An index through a stack of views
    (each view's index inside the next one's divisions) written out grows exponentially with
    the stack; named, linearly. Empty unless naming at least halves the text (counted in
    atoms written), so small repeats stay written out where they are read."""
    roots = [e for e in exprs if isinstance(e, Lin)]
    conds = [e for e in exprs if isinstance(e, Cond)]
    while conds:
        cond = conds.pop()
        conds.extend(cond.parts)
        if cond.x is not None:
            roots.append(cond.x)
    order, seen = [], set()  # every Lin under the roots, each after the Lins it holds
    for root in roots:
        stack = [(root, False)]
        while stack:
            lin, done = stack.pop()
            if done:
                order.append(lin)
                continue
            if lin in seen:
                continue
            seen.add(lin)
            stack.append((lin, True))
            stack.extend((a.x, False) for a, _ in lin.terms if not isinstance(a, Var))
    order.reverse()  # now each before the Lins it holds
    named, named_size = _written(order, roots, True)
    _, inline_size = _written(order, roots, False)
    return named[::-1] if 2 * named_size <= inline_size else []


def _written(order: list[Lin], roots: list[Lin], naming: bool) -> tuple[list[Lin], int]:
    """(Lins named, atoms written) for the text of `roots`, `order` holding every Lin under
    them, each before the Lins it holds; naming: a repeated one with a division inside is
    written once, in its declaration."""
    inner = dict.fromkeys(order, 0)  # times a division or modulo writes the Lin out
    at_top = dict.fromkeys(order, 0)  # times it is written as a whole index (never named)
    for root in roots:
        at_top[root] += 1
    named, size = [], 0
    for lin in order:
        divides = any(not isinstance(a, Var) for a, _ in lin.terms)
        written = at_top[lin] + inner[lin]
        if naming and inner[lin] > 1 and divides:
            named.append(lin)
            written = at_top[lin] + 1  # its declaration
        size += written * len(lin.terms)
        for atom, _ in lin.terms:
            if not isinstance(atom, Var):
                inner[atom.x] += written
    return named, size


# ---- symbolic sizes: Variable, bind, unbind ---------------------------------------------------
INT_DTYPE_NAMES = ("int", "int32", "int64", "long")  # tinygrad's Variable(..., dtype=) choices
RESERVED_PREFIXES = ("gidx", "lidx", "ridx", "bidx", "data", "val", "alu", "acc", "red", "tl_",
                     "__t")


class Variable:
    """A symbolic size, as in tinygrad: `Variable("i", 1, 64)` is an int known to lie in 1..64;
    `.bind(5)` says which value this use has. Shapes, shrink/pad bounds and views may hold one
    (or a linear expression of them, `v + 1`, `2 * v`). Kernels take the variable as an int
    argument, so one compiled kernel serves every bound value. Comparisons answer when the
    range decides them and raise otherwise; equality is structural (expression and values)."""
    __slots__ = ("lin", "values")

    def __new__(cls, name: str, min_value: int, max_value: int, dtype=None):
        if dtype is not None and str(dtype).rsplit(".", 1)[-1] not in INT_DTYPE_NAMES:
            raise TypeError(f"Variable {name!r}: dtype must be an int dtype (kernels take it as "
                            f"an int), got {dtype!r}")
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Variable: name must be an identifier, got {name!r}")
        if name.startswith(RESERVED_PREFIXES):
            raise ValueError(f"Variable: name {name!r} is reserved for generated code (it may not "
                             f"start with {', '.join(RESERVED_PREFIXES)})")
        for bound in (min_value, max_value):
            if isinstance(bound, bool) or not isinstance(bound, int):
                raise TypeError(f"Variable {name!r}: min and max must be ints, got "
                                f"{min_value!r}, {max_value!r}")
        if not 0 <= min_value <= max_value:
            raise ValueError(f"Variable {name!r}: needs 0 <= min <= max, got [{min_value}, "
                             f"{max_value}]")
        return cls._of(var(name, min_value, max_value), ())

    @classmethod
    def _of(cls, expr: Lin, values: tuple) -> Variable:
        out = object.__new__(cls)
        out.lin, out.values = expr, values
        return out

    def __reduce__(self):  # pickling / deepcopy: rebuilt from its terms (interned again)
        terms = []
        for atom, coeff in self.lin.terms:
            if not isinstance(atom, Var):
                raise TypeError(f"cannot pickle the symbolic size {self!r} (it divides)")
            terms.append((atom.name, atom.lo, atom.hi, coeff))
        return (_variable_from_terms, (tuple(terms), self.lin.const, self.values))

    # ---- what it is ----
    @property
    def is_plain(self) -> bool:
        """A variable itself (not an expression of one)."""
        atom = self.lin.as_atom()
        return isinstance(atom, Var)

    @property
    def expr(self) -> str:
        """The name of a plain variable (tinygrad's `expr`); the expression's text otherwise."""
        atom = self.lin.as_atom()
        return atom.name if isinstance(atom, Var) else render(self.lin)

    @property
    def min(self) -> int:
        return self.lin.lo

    @property
    def max(self) -> int:
        return self.lin.hi

    @property
    def is_bound(self) -> bool:
        names = {v.name for v in self.lin.vars()}
        return names <= {name for name, _ in self.values}

    @property
    def val(self) -> int:
        """The bound value (of the expression: `(v + 1).val` is v's value + 1)."""
        if not self.is_bound:
            raise ValueError(f"{self!r} is not bound: call .bind(value) first")
        return int(evaluate(self.lin, dict(self.values)))

    def bind(self, value: int) -> Variable:
        """This variable with `value` for this use. Out of range is an error, here."""
        if not self.is_plain:
            raise ValueError(f"bind: only a variable can be bound, not the expression {self!r}")
        if self.values:
            raise ValueError(f"bind: {self!r} is already bound; bind the unbound variable "
                             f"(.unbind()[0]) again")
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise TypeError(f"bind: Variable {self.expr!r} takes an int, got {value!r}")
        value = int(value.__index__())
        if not self.min <= value <= self.max:
            raise ValueError(f"bind: Variable {self.expr!r} has range [{self.min}, {self.max}]; "
                             f"{value} is outside it")
        return Variable._of(self.lin, ((self.expr, value),))

    def unbind(self) -> tuple[Variable, int]:
        """(the variable without its value, the value), as tinygrad's `unbind`."""
        if not self.is_plain or not self.values:
            raise ValueError(f"unbind: {self!r} is not a bound variable")
        return Variable._of(self.lin, ()), self.values[0][1]

    def unbound(self) -> Variable:
        """The same expression with no values (what a kernel sees)."""
        return self if not self.values else Variable._of(self.lin, ())

    def vars(self) -> list[Variable]:
        """The plain variables in this expression, unbound, sorted by name."""
        return [Variable._of(lin(v), ()) for v in sorted(self.lin.vars(), key=lambda v: v.name)]

    # ---- arithmetic (linear: sums, and products with ints) ----
    def _combine(self, other, result: Lin) -> Variable | int:
        values = dict(self.values)
        if isinstance(other, Variable):
            for name, value in other.values:
                if values.setdefault(name, value) != value:
                    raise ValueError(f"Variable {name!r} is bound to both {values[name]} and "
                                     f"{value} in one expression")
        if result.is_const:
            return result.const
        names = {v.name for v in result.vars()}
        return Variable._of(result, tuple(sorted((k, v) for k, v in values.items()
                                                 if k in names)))

    @staticmethod
    def _lin(other) -> Lin:
        if isinstance(other, Variable):
            return other.lin
        if isinstance(other, bool) or not isinstance(other, int):
            raise TypeError(f"symbolic sizes combine with ints and Variables, not {other!r}")
        return const(other)

    def __add__(self, other):
        if _foreign(other):
            return NotImplemented  # a tensor: Tensor.__radd__ reads the variable as a value
        return self._combine(other, self.lin + self._lin(other))

    __radd__ = __add__

    def __sub__(self, other):
        if _foreign(other):
            return NotImplemented
        return self._combine(other, self.lin - self._lin(other))

    def __rsub__(self, other):
        if _foreign(other):
            return NotImplemented
        return self._combine(other, self._lin(other) - self.lin)

    def __neg__(self):
        return self._combine(0, -self.lin)

    def __mul__(self, other):
        if _foreign(other):
            return NotImplemented
        right = self._lin(other)
        if not right.is_const:
            raise TypeError(f"the product {self!r} * {other!r} is not linear: a shape may hold one "
                            f"symbolic size per product (merge static axes only)")
        return self._combine(other, self.lin * right.const)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        if isinstance(other, bool) or not isinstance(other, int) or other <= 0:
            raise TypeError(f"{self!r} // {other!r}: symbolic sizes divide by positive ints only")
        return self._combine(other, div(self.lin, other))

    # ---- comparisons: decided by the range, or an error ----
    def _difference(self, other) -> Lin:
        return self.lin - self._lin(other)

    def _decide(self, op: str, other, holds: bool | None) -> bool:
        if holds is None:
            raise TypeError(f"cannot tell whether {self!r} {op} {other!r} for every value in the "
                            f"range: a symbolic size is compared only where its range decides")
        return holds

    def __lt__(self, other):
        d = self._difference(other)
        return self._decide("<", other, True if d.hi < 0 else False if d.lo >= 0 else None)

    def __le__(self, other):
        d = self._difference(other)
        return self._decide("<=", other, True if d.hi <= 0 else False if d.lo > 0 else None)

    def __gt__(self, other):
        d = self._difference(other)
        return self._decide(">", other, True if d.lo > 0 else False if d.hi <= 0 else None)

    def __ge__(self, other):
        d = self._difference(other)
        return self._decide(">=", other, True if d.lo >= 0 else False if d.hi < 0 else None)

    def __eq__(self, other):
        if isinstance(other, Variable):
            return self.lin is other.lin and self.values == other.values
        return False  # a symbolic size is never one fixed int

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((Variable, self.lin, self.values))

    def __index__(self):
        raise TypeError(f"{self!r} is a symbolic size, not a fixed int: use .val for the bound "
                        f"value, or keep it symbolic")

    def __bool__(self):
        return True  # a size, not a truth value (never used as one)

    def __repr__(self):
        text = self.expr
        bound = f"={self.val}" if self.values and self.is_bound else ""
        return f"<{text}[{self.min}-{self.max}]{bound}>"

    def __str__(self):
        return repr(self)


def _foreign(other) -> bool:
    """An operand that is neither a number nor a Variable (a Tensor): its own reflected operator
    decides."""
    return not isinstance(other, (numbers.Number, Variable))


def _variable_from_terms(terms: tuple, constant: int, values: tuple) -> Variable:
    expr = Lin(tuple((Var(name, lo, hi), coeff) for name, lo, hi, coeff in terms), constant)
    return Variable._of(expr, values)


def is_symbolic(value) -> bool:
    return isinstance(value, Variable)


def any_symbolic(values) -> bool:
    return any(isinstance(v, Variable) for v in values)


def _holds(smaller, larger) -> bool:
    """smaller <= larger for every value in the range, or, where the range leaves it open and
    every variable is bound, for the values bound in this use."""
    try:
        return smaller <= larger
    except TypeError:
        pass
    try:
        return bound_value(smaller) <= bound_value(larger)
    except ValueError:  # an unbound variable: nothing to decide it
        return False


def fits_bounds(bounds, shape) -> bool:
    """0 <= begin <= end <= size on every axis of a shrink, as tinygrad checks it: for every
    value in a symbolic bound's range, or for the bound values where the range does not decide
    it (`x[:, v:v+2]` of a static dim, `(0, 2)` of a dim bound to 2). Buffers are laid out at
    their maximum size; a shrink checked at its bound values reads inside them."""
    return all(_holds(0, b) and _holds(b, e) and _holds(e, s) for (b, e), s in zip(bounds, shape))


def max_of(size) -> int:
    """The largest value a size can take (an int is its own)."""
    return size.max if isinstance(size, Variable) else size


def max_shape(shape) -> tuple[int, ...]:
    return tuple(max_of(s) for s in shape)


def bound_value(size) -> int:
    """The value a size has in this use (a bound Variable's value, or the int)."""
    return size.val if isinstance(size, Variable) else size


def bound_shape(shape) -> tuple[int, ...]:
    return tuple(bound_value(s) for s in shape)


def unbind_args(value, var_vals: dict):
    """`value` (an int, Variable, or nested tuple of them) with every Variable unbound; the
    values go into var_vals {name: value} (two values for one name is an error)."""
    if isinstance(value, Variable):
        for name, bound in value.values:
            if var_vals.setdefault(name, bound) != bound:
                raise ValueError(f"Variable {name!r} is bound to both {var_vals[name]} and "
                                 f"{bound} in one kernel")
        return value.unbound()
    if isinstance(value, tuple):
        return tuple(unbind_args(v, var_vals) for v in value)
    return value


def rebind(value, var_vals: dict):
    """`value` (an int, Variable or nested tuple) with its Variables bound to var_vals' values
    (names it lacks keep their old values)."""
    if isinstance(value, Variable):
        names = {v.name for v in value.lin.vars()}
        values = {**dict(value.values), **{k: v for k, v in var_vals.items() if k in names}}
        return Variable._of(value.lin, tuple(sorted(values.items())))
    if isinstance(value, tuple):
        return tuple(rebind(v, var_vals) for v in value)
    return value


def as_lin(size) -> Lin:
    """An index expression for a size (a Variable's expression, or an int constant)."""
    return size.lin if isinstance(size, Variable) else lin(size)
