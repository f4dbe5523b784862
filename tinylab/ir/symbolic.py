"""Integer index expressions and the simplifier that keeps generated indices clean.

Every index is kept in one canonical form, `Lin`: a sum of `coeff * atom` terms plus a constant,
where an atom is a loop variable (`Var`), a floor division (`Div`) or a floor modulo (`Mod`) of a
Lin by a positive constant. Building an expression simplifies it: constants fold, terms merge,
`(8*a + b) // 8 -> a + b // 8`, range-aware folds (`b // 8 -> 0` when 0 <= b < 8), nested
div/mod, and `(x // c) * c + x % c -> x`. Validity masks are `Lt` comparisons joined by `And`.
All arithmetic has Python's floor semantics; renderers emit floor helpers where an operand can be
negative. Used by ir/view.py (views -> indices) and codegen (axis splits, lanes).
"""
from __future__ import annotations

import itertools
import math
import threading
import weakref
from typing import Union


class _Memo(dict):
    """A memo table that forgets everything once it holds `limit` entries: bounded memory, and
    a forgotten entry is only computed again (its values are interned expressions)."""

    def __init__(self, limit: int = 1 << 17):
        super().__init__()
        self.limit = limit

    def __setitem__(self, key, value) -> None:
        if len(self) >= self.limit:
            self.clear()
        super().__setitem__(key, value)


# the intern table holds each expression only while something else does: equal expressions
# are the same object while alive, and dead ones leave the table
_INTERN: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_INTERN_LOCK = threading.Lock()  # codegen runs in compile threads: one object per expression
_AS_GIVEN = _Memo()  # (terms, const) as a caller gave them -> the canonical Lin they make
_SUMS = _Memo()      # (Lin, Lin or int) -> their sum
_PRODUCTS = _Memo()  # (Lin, int) -> the product


def _intern(cls, key, build):
    found = _INTERN.get((cls, key))
    if found is None:
        with _INTERN_LOCK:
            found = _INTERN.get((cls, key))
            if found is None:
                found = build()
                _INTERN[(cls, key)] = found
    return found


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
        out: set[Var] = set()
        for atom, _ in self.terms:
            if isinstance(atom, Var):
                out.add(atom)
            else:
                out |= atom.x.vars()
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
        partner = _INTERN.get((Div, (atom.x, atom.c)))
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


def div(x: Lin, c: int) -> Lin:
    x = lin(x)
    if c <= 0:
        raise ValueError(f"index division by non-positive {c}")
    if c == 1:
        return x
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
    __slots__ = ("kind", "x", "c", "parts", "__weakref__")

    def __new__(cls, kind: str, x: Lin | None = None, c: int = 0, parts: tuple = ()):
        def build():
            o = object.__new__(cls)
            o.kind, o.x, o.c, o.parts = kind, x, c, parts
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


_LESS_THAN = _Memo()


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
def substitute(x: Lin, mapping: dict) -> Lin:
    """Replace Vars (keys) by expressions (values) and re-simplify."""
    out = lin(x.const)
    for atom, coeff in x.terms:
        if isinstance(atom, Var):
            out = out + lin(mapping.get(atom, atom)) * coeff
        elif isinstance(atom, Div):
            out = out + div(substitute(atom.x, mapping), atom.c) * coeff
        else:
            out = out + mod(substitute(atom.x, mapping), atom.c) * coeff
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
def render(x: Lin, div_fn=None, mod_fn=None) -> str:
    """Text of x. div_fn/mod_fn(text, c, may_be_negative) let renderers choose C operators.
    The plain text (no div_fn/mod_fn) is kept on x: it is also the order of terms and leaves."""
    plain = div_fn is None and mod_fn is None
    if plain and x._str is not None:
        return x._str
    def atom_text(atom: Atom) -> str:
        if isinstance(atom, Var):
            return atom.name
        inner = render(atom.x, div_fn, mod_fn)
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


def render_cond(cond: Cond, div_fn=None, mod_fn=None, and_text: str = " && ") -> str:
    if cond.is_true:
        return "1"
    if cond.is_false:
        return "0"
    if cond.kind == "and":
        return "(" + and_text.join(render_cond(p, div_fn, mod_fn) for p in cond.parts) + ")"
    if all(k < 0 for _, k in cond.x.terms):  # -x < c  reads better as  x >= 1-c
        return f"({render(-cond.x, div_fn, mod_fn)}>={1 - cond.c})"
    return f"({render(cond.x, div_fn, mod_fn)}<{cond.c})"


# ---- simplifying an index where it is valid ----------------------------------------------------
_FRESH = [0]


def _fresh(lo: int, hi: int) -> Var:
    _FRESH[0] += 1
    return Var(f"__t{_FRESH[0]}", lo, hi)


def _bounds(valid: Cond) -> dict:
    """Range of each expression the validity condition bounds: {terms-only Lin: (lo, hi)}."""
    out: dict = {}
    for leaf in valid.leaves():
        if leaf.kind != "lt" or not leaf.x.terms:
            continue
        x, c = leaf.x, leaf.c
        if x.terms[0][1] > 0:  # x < c
            lo, hi = out.get(x, (x.lo, x.hi))
            out[x] = (lo, min(hi, c - 1))
        else:  # -y < c  ->  y > -c
            y = -x
            lo, hi = out.get(y, (y.lo, y.hi))
            out[y] = (max(lo, -c + 1), hi)
    return out


def _bounded(x: Lin, bounds: dict):
    """(scale, key, lo, hi) when x == scale*key + x.const and the condition bounds key."""
    if not x.terms:
        return None
    scale = math.gcd(*[k for _, k in x.terms])
    if x.terms[0][1] < 0:
        scale = -scale
    key = Lin(tuple((a, k // scale) for a, k in x.terms), 0)
    if key not in bounds:
        return None
    lo, hi = bounds[key]
    return scale, key, lo, hi


def _range_of(x: Lin, bounds: dict) -> tuple[int, int]:
    """x's range, tightened by what the validity condition says about it."""
    found = _bounded(x, bounds)
    if found is None:
        return x.lo, x.hi
    scale, _, lo, hi = found
    ends = (scale * lo + x.const, scale * hi + x.const)
    return max(x.lo, min(ends)), min(x.hi, max(ends))


def _tightened(operand: Lin, bounds: dict) -> tuple[Lin, dict]:
    """operand with its terms replaced by a fresh variable of the validity-implied range."""
    found = _bounded(operand, bounds)
    if found is None:
        return operand, {}
    scale, key, lo, hi = found
    if lo > hi or (lo, hi) == (key.lo, key.hi):
        return operand, {}
    fresh = _fresh(lo, hi)
    return lin(fresh) * scale + operand.const, {fresh: key}


def _rebuild(x: Lin, bounds: dict) -> Lin:
    """x with every div/mod re-simplified using the ranges the validity condition implies."""
    out = lin(x.const)
    for atom, coeff in x.terms:
        if isinstance(atom, Var):
            out = out + lin(atom) * coeff
            continue
        inner = _rebuild(atom.x, bounds)
        inner_t, back = _tightened(inner, bounds)
        value = div(inner_t, atom.c) if isinstance(atom, Div) else mod(inner_t, atom.c)
        out = out + (substitute(value, back) if back else value) * coeff
    return out


def _rebuild_cond(cond: Cond, bounds: dict) -> Cond:
    if cond.kind in ("true", "false"):
        return cond
    parts = []
    for leaf in cond.leaves():
        parts.append(lt(_rebuild(leaf.x, bounds), leaf.c))
    return and_(*parts)


def _atoms(x: Lin, found: list) -> list:
    for atom, _ in x.terms:
        if not isinstance(atom, Var):
            _atoms(atom.x, found)
            if atom not in found:
                found.append(atom)
    return found


_REPLACED: dict = {}


def _replace_atom(x: Lin, old: Atom, new: Lin) -> Lin:
    """x with every `old` (also inside its divs and mods) replaced by `new` (memoized: the
    split cases rewrite the same few expressions again and again)."""
    key = (x, old, new)
    found = _REPLACED.get(key)
    if found is None:
        found = _REPLACED[key] = _replace_atom_uncached(x, old, new)
    return found


def _replace_atom_uncached(x: Lin, old: Atom, new: Lin) -> Lin:
    out = lin(x.const)
    for atom, coeff in x.terms:
        if atom is old:
            out = out + new * coeff
        elif isinstance(atom, Var):
            out = out + lin(atom) * coeff
        else:
            inner = _replace_atom(atom.x, old, new)
            out = out + (div(inner, atom.c) if isinstance(atom, Div) else mod(inner, atom.c)) * coeff
    return out


def _replace_atom_cond(cond: Cond, old: Atom, new: Lin) -> Cond:
    if cond.kind in ("true", "false"):
        return cond
    key = (cond, old, new)
    found = _REPLACED.get(key)
    if found is None:
        found = _REPLACED[key] = and_(*[lt(_replace_atom(leaf.x, old, new), leaf.c)
                                        for leaf in cond.leaves()])
    return found


def _decompositions(x: Lin, c: int, limit: int = 64):
    """Ways to write x == q*c + y, each term's coefficient reduced to one of its two remainders
    in (-c, c); narrowest y first (a window position wants +16 where a balanced remainder says
    -9, so trying only the balanced form is not enough)."""
    options = []
    for atom, coeff in x.terms:
        rem = coeff % c
        options.append([(atom, coeff, r) for r in dict.fromkeys((rem, rem - c)) if r or rem == 0])
    out = []
    for combo in itertools.islice(itertools.product(*options), limit):
        q_const, y_const = divmod(x.const, c)
        q = Lin(tuple((a, (k - r) // c) for a, k, r in combo), q_const)
        y = Lin(tuple((a, r) for a, _, r in combo), y_const)
        out.append((y.hi - y.lo, q, y))
    return [(q, y) for _, q, y in sorted(out, key=lambda t: t[0])]


def _split_cases(index: Lin, valid: Cond) -> tuple[Lin, Cond]:
    """For x//c or x%c where x = q*c + y and y straddles 0, keep the one sign of y the validity
    condition allows: then x//c is q (or q-1) and x%c is y (or y+c), and the sign becomes part
    of the condition."""
    bounds = _bounds(valid)
    for atom in _atoms(index, []) + [a for leaf in valid.leaves() if leaf.x is not None
                                      for a in _atoms(leaf.x, [])]:
        if isinstance(atom, Var):
            continue
        partner_div, partner_mod = Div(atom.x, atom.c), Mod(atom.x, atom.c)
        for q, y in _decompositions(atom.x, atom.c):
            y_lo, y_hi = _range_of(y, bounds)  # what the validity condition says about y
            if 0 <= y_lo and y_hi < atom.c:  # where valid, x // c is q and x % c is y exactly
                index = _replace_atom(_replace_atom(index, partner_div, q), partner_mod, y)
                valid = _replace_atom_cond(_replace_atom_cond(valid, partner_div, q),
                                           partner_mod, y)
                return _split_cases(index, valid)
            if not (-atom.c < y_lo < 0 <= y_hi < atom.c):
                continue
            for sign, shift in ((1, 0), (-1, 1)):  # keep y >= 0, or keep y < 0
                other = _fresh(y_lo, -1) if sign == 1 else _fresh(0, y_hi)
                other_q = q - (1 if sign == 1 else 0)
                other_y = lin(other) + (atom.c if sign == 1 else 0)
                dropped = _replace_atom_cond(_replace_atom_cond(valid, partner_div, other_q),
                                             partner_mod, other_y)
                if not dropped.is_false:
                    continue
                keep_q, keep_y = q - shift, y + shift * atom.c
                sign_cond = lt(-y, 1) if sign == 1 else lt(y, 0)  # y >= 0  or  y < 0
                index = _replace_atom(_replace_atom(index, partner_div, keep_q), partner_mod,
                                      keep_y)
                valid = and_(_replace_atom_cond(_replace_atom_cond(valid, partner_div, keep_q),
                                                partner_mod, keep_y), sign_cond)
                return _split_cases(index, valid)
    return index, valid


def _narrowed_vars(valid: Cond) -> dict:
    """Variables the condition bounds on their own (v < c, v >= c): Var -> narrower fresh Var."""
    ranges: dict[Var, list] = {}
    for leaf in valid.leaves():
        if leaf.kind != "lt" or len(leaf.x.terms) != 1:
            continue
        atom, coeff = leaf.x.terms[0]
        if not isinstance(atom, Var) or abs(coeff) != 1:
            continue
        lo, hi = ranges.setdefault(atom, [atom.lo, atom.hi])
        if coeff > 0:    # v < c
            ranges[atom][1] = min(hi, leaf.c - 1)
        else:            # -v < c  ->  v >= 1 - c
            ranges[atom][0] = max(lo, 1 - leaf.c)
    return {v: _fresh(lo, hi) for v, (lo, hi) in ranges.items()
            if lo <= hi and (lo, hi) != (v.lo, v.hi)}


_SIMPLIFIED: dict = {}


def simplify_valid(index: Lin, valid: Cond) -> tuple[Lin, Cond]:
    """(index, validity) simplified on the assumption that the index is only used where valid."""
    if valid.is_true or valid.is_false:
        return index, valid
    key = (index, valid)
    if key not in _SIMPLIFIED:
        _SIMPLIFIED[key] = _simplify_valid_narrowed(index, valid)
    return _SIMPLIFIED[key]


def _simplify_valid_narrowed(index: Lin, valid: Cond) -> tuple[Lin, Cond]:
    narrowed = _narrowed_vars(valid)
    if narrowed:  # simplify with the narrower ranges, then put the real variables back
        new_index, new_valid = _simplify_valid(substitute(index, narrowed),
                                               substitute_cond(valid, narrowed))
        back = {fresh: lin(v) for v, fresh in narrowed.items()}
        # the narrowing came from conditions that now read as always true: keep them
        ranges = [in_range(lin(v), fresh.lo, fresh.hi + 1) for v, fresh in narrowed.items()]
        return substitute(new_index, back), and_(substitute_cond(new_valid, back), *ranges)
    return _simplify_valid(index, valid)


def _simplify_valid(index: Lin, valid: Cond) -> tuple[Lin, Cond]:
    for _ in range(3):
        bounds = _bounds(valid)
        new_index, new_valid = _rebuild(index, bounds), _rebuild_cond(valid, bounds)
        new_index, new_valid = _split_cases(new_index, new_valid)
        if new_index is index and new_valid is valid:
            break
        index, valid = new_index, new_valid
    return index, valid
