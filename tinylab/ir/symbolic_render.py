"""Index expressions and conditions as text: `render` / `render_cond` (renderers pass their own
floor division and modulo), and `repeated_parts`, the subexpressions a kernel names once.
Re-exported by ir/symbolic.py (`symbolic.render`).
"""
from __future__ import annotations

from .conditions import Cond
from .symbolic import Atom, Div, Lin, Var


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
    if cond.x.terms and cond.x.terms[0][1] < 0:
        # -x < c  as  x >= 1-c: a window's two bounds then compare the same expression
        # (x >= 0 and x < 8), which a C compiler turns into one unsigned compare
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
    if all(type(atom) is Var for root in roots for atom, _ in root.terms):
        return []   # no division or modulo anywhere (most indices): nothing to name
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
