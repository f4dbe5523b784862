"""An index simplified where it is valid: `simplify_valid(index, valid) -> (index, valid)` uses
the bounds a validity mask puts on each variable (a padded load's `0 <= x < n`) to fold the
divisions and modulos of the index, and splits an index into cases where that makes both
simpler. Pure functions of ir/symbolic.py expressions, memoized. Called by codegen/plan.py.
"""
from __future__ import annotations

import itertools
import math

from ..memo import Memo
from .symbolic import (Atom, Cond, Div, Lin, Mod, Var, and_, div, in_range, lin, lt, mod,
                       substitute, substitute_cond)

class _Fresh:
    """The temporary variables of one simplification: __t1, __t2, ... counted from 1 in every
    call, so a result (whose terms sort by name) never depends on what was simplified before, in
    this process or in another thread."""

    def __init__(self):
        self.count = 0

    def __call__(self, lo: int, hi: int) -> Var:
        self.count += 1
        return Var(f"__t{self.count}", lo, hi)


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


def _tightened(operand: Lin, bounds: dict, fresh: _Fresh) -> tuple[Lin, dict]:
    """operand with its terms replaced by a fresh variable of the validity-implied range."""
    found = _bounded(operand, bounds)
    if found is None:
        return operand, {}
    scale, key, lo, hi = found
    if lo > hi or (lo, hi) == (key.lo, key.hi):
        return operand, {}
    tight = fresh(lo, hi)
    return lin(tight) * scale + operand.const, {tight: key}


def _rebuild(x: Lin, bounds: dict, fresh: _Fresh) -> Lin:
    """x with every div/mod re-simplified using the ranges the validity condition implies."""
    out = lin(x.const)
    for atom, coeff in x.terms:
        if isinstance(atom, Var):
            out = out + lin(atom) * coeff
            continue
        inner = _rebuild(atom.x, bounds, fresh)
        inner_t, back = _tightened(inner, bounds, fresh)
        value = div(inner_t, atom.c) if isinstance(atom, Div) else mod(inner_t, atom.c)
        out = out + (substitute(value, back) if back else value) * coeff
    return out


def _rebuild_cond(cond: Cond, bounds: dict, fresh: _Fresh) -> Cond:
    if cond.kind in ("true", "false"):
        return cond
    parts = []
    for leaf in cond.leaves():
        parts.append(lt(_rebuild(leaf.x, bounds, fresh), leaf.c))
    return and_(*parts)


def _atoms(x: Lin, found: list) -> list:
    for atom, _ in x.terms:
        if not isinstance(atom, Var):
            _atoms(atom.x, found)
            if atom not in found:
                found.append(atom)
    return found


_REPLACED = Memo("simplify_valid_replaced")


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


def _split_cases(index: Lin, valid: Cond, fresh: _Fresh) -> tuple[Lin, Cond]:
    """For x//c or x%c where x = q*c + y and y straddles 0, keep the one sign of y the validity
    condition allows: then x//c is q (or q-1) and x%c is y (or y+c), and the sign becomes part
    of the condition."""
    bounds = _bounds(valid)
    for atom in _atoms(index, []) + [a for leaf in valid.leaves() if leaf.x is not None
                                      for a in _atoms(leaf.x, [])]:
        if isinstance(atom, Var):
            continue
        found = _rewrite(atom, valid, bounds, fresh)
        if found is None:
            continue
        q, y, sign_cond = found
        partner_div, partner_mod = Div(atom.x, atom.c), Mod(atom.x, atom.c)
        index = _replace_atom(_replace_atom(index, partner_div, q), partner_mod, y)
        valid = _replace_atom_cond(_replace_atom_cond(valid, partner_div, q), partner_mod, y)
        if sign_cond is not None:
            valid = and_(valid, sign_cond)
        return _split_cases(index, valid, fresh)
    return index, valid


# (atom, valid) -> (rewrite, fresh names it took)
_REWRITES = Memo("simplify_valid_rewrites")


def _rewrite(atom: Atom, valid: Cond, bounds: dict, fresh: _Fresh):
    """What _split_cases does with `atom` under `valid` (memoized: each rewrite restarts the
    scan, which asks again about the atoms before it). A replay also takes the fresh names the
    first answer took, so later fresh variables are named as without the memo."""
    key = (atom, valid)
    found = _REWRITES.get(key)
    if found is None:
        start = fresh.count
        found = _REWRITES[key] = (_decide_rewrite(atom, valid, bounds, fresh), fresh.count - start)
    else:
        fresh.count += found[1]
    return found[0]


def _decide_rewrite(atom: Atom, valid: Cond, bounds: dict, fresh: _Fresh):
    """(q, y, sign condition or None): x//c is q and x%c is y where valid (and the sign holds),
    or None when no decomposition of x = q*c + y is decided by the condition."""
    partner_div, partner_mod = Div(atom.x, atom.c), Mod(atom.x, atom.c)
    for q, y in _decompositions(atom.x, atom.c):
        y_lo, y_hi = _range_of(y, bounds)  # what the validity condition says about y
        if 0 <= y_lo and y_hi < atom.c:  # where valid, x // c is q and x % c is y exactly
            return q, y, None
        if not (-atom.c < y_lo < 0 <= y_hi < atom.c):
            continue
        for sign, shift in ((1, 0), (-1, 1)):  # keep y >= 0, or keep y < 0
            other = fresh(y_lo, -1) if sign == 1 else fresh(0, y_hi)
            other_q = q - (1 if sign == 1 else 0)
            other_y = lin(other) + (atom.c if sign == 1 else 0)
            dropped = _replace_atom_cond(_replace_atom_cond(valid, partner_div, other_q),
                                         partner_mod, other_y)
            if not dropped.is_false:
                continue
            sign_cond = lt(-y, 1) if sign == 1 else lt(y, 0)  # y >= 0  or  y < 0
            return q - shift, y + shift * atom.c, sign_cond
    return None


def _narrowed_vars(valid: Cond, fresh: _Fresh) -> dict:
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
    return {v: fresh(lo, hi) for v, (lo, hi) in ranges.items()
            if lo <= hi and (lo, hi) != (v.lo, v.hi)}


_SIMPLIFIED = Memo("simplify_valid_simplified")


def simplify_valid(index: Lin, valid: Cond) -> tuple[Lin, Cond]:
    """(index, validity) simplified on the assumption that the index is only used where valid."""
    if valid.is_true or valid.is_false:
        return index, valid
    key = (index, valid)
    if key not in _SIMPLIFIED:
        _SIMPLIFIED[key] = _simplify_valid_narrowed(index, valid)
    return _SIMPLIFIED[key]


def _simplify_valid_narrowed(index: Lin, valid: Cond) -> tuple[Lin, Cond]:
    fresh = _Fresh()
    narrowed = _narrowed_vars(valid, fresh)
    if narrowed:  # simplify with the narrower ranges, then put the real variables back
        new_index, new_valid = _simplify_valid(substitute(index, narrowed),
                                               substitute_cond(valid, narrowed), fresh)
        back = {fresh: lin(v) for v, fresh in narrowed.items()}
        # the narrowing came from conditions that now read as always true: keep them
        ranges = [in_range(lin(v), fresh.lo, fresh.hi + 1) for v, fresh in narrowed.items()]
        return substitute(new_index, back), and_(substitute_cond(new_valid, back), *ranges)
    return _simplify_valid(index, valid, fresh)


def _simplify_valid(index: Lin, valid: Cond, fresh: _Fresh) -> tuple[Lin, Cond]:
    for _ in range(3):
        bounds = _bounds(valid)
        new_index, new_valid = _rebuild(index, bounds, fresh), _rebuild_cond(valid, bounds, fresh)
        new_index, new_valid = _split_cases(new_index, new_valid, fresh)
        if new_index is index and new_valid is valid:
            break
        index, valid = new_index, new_valid
    return index, valid
