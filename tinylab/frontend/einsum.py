"""einsum: parse a formula ('ij,jk->ik', with '...' and repeated letters) and lower it to
permute/reshape, a broadcast multiply and one sum, so the scheduler sees a matmul-like kernel.
Called by Tensor.einsum (frontend/nn_ops.py); errors name the formula and the shapes.
"""
from __future__ import annotations

import functools
import string

from ..errors import ArgumentError, ShapeError

ELLIPSIS_LETTERS = "".join(chr(0x3B1 + i) for i in range(24))  # greek: never in a formula


def _split(formula: str, count: int) -> tuple[list[str], str | None]:
    formula = formula.replace(" ", "")
    inputs, arrow, output = formula.partition("->")
    terms = inputs.split(",")
    if len(terms) != count:
        raise ArgumentError(f"einsum: formula {formula!r} has {len(terms)} operand(s) but "
                         f"{count} tensor(s) were given")
    allowed = set(string.ascii_letters) | {"."}
    for term in terms + ([output] if arrow else []):
        if set(term) - allowed or term.replace("...", "").count(".") or term.count("...") > 1:
            raise ValueError(f"einsum: bad term {term!r} in {formula!r}; use letters and at most "
                             f"one '...' per term")
    return terms, (output if arrow else None)


def _with_ellipsis(term: str, ndim: int, width: int, formula: str) -> str:
    """Replace '...' by one placeholder letter per dim it covers (right-aligned across terms)."""
    letters = term.replace("...", "")
    if "..." not in term:
        if len(letters) != ndim:
            raise ShapeError(f"einsum: term {term!r} names {len(letters)} dims but its operand "
                             f"has {ndim} ({formula!r})")
        return term
    covered = ndim - len(letters)
    if covered < 0:
        raise ShapeError(f"einsum: term {term!r} names more dims than its operand's {ndim}")
    return term.replace("...", ELLIPSIS_LETTERS[width - covered:width])


def _diagonal(x, letters: str):
    """Take the diagonal over each repeated letter, so every letter appears once."""
    while len(set(letters)) != len(letters):
        letter = next(c for c in letters if letters.count(c) > 1)
        i = letters.index(letter)
        j = letters.index(letter, i + 1)
        n = x.shape[i]
        if x.shape[j] != n:
            raise ShapeError(f"einsum: repeated letter {letter!r} covers sizes {n} and "
                             f"{x.shape[j]}")
        rest = [a for a in range(x.ndim) if a not in (i, j)]
        x = x.permute(rest + [i, j]).reshape(tuple(x.shape[a] for a in rest) + (n * n,))
        x = x.pad(tuple(None for _ in rest) + ((0, n),))  # n*(n+1) long: row k starts at k(n+1)
        x = x.reshape(tuple(x.shape[:-1]) + (n, n + 1)).shrink(
            tuple(None for _ in rest) + (None, (0, 1))).reshape(tuple(x.shape[:-1]) + (n,))
        letters = "".join(letters[a] for a in rest) + letter
    return x, letters


def einsum(formula: str, operands) -> object:
    if not operands:
        raise ValueError("einsum: needs at least one operand")
    terms, output = _split(formula, len(operands))
    width = max(t.ndim - len(term.replace("...", "")) for t, term in zip(operands, terms)
                if "..." in term) if any("..." in t for t in terms) else 0
    terms = [_with_ellipsis(term, t.ndim, width, formula) for term, t in zip(terms, operands)]
    pieces = [_diagonal(t, term) for t, term in zip(operands, terms)]
    if output is None:
        counts = "".join(terms)
        output = ELLIPSIS_LETTERS[:width] + "".join(
            sorted(c for c in set(counts) if counts.count(c) == 1 and c not in ELLIPSIS_LETTERS))
    else:
        output = output.replace("...", ELLIPSIS_LETTERS[:width])
    sizes: dict = {}
    for x, letters in pieces:
        for c, n in zip(letters, x.shape):
            if sizes.get(c, 1) not in (1, n) and n != 1:
                raise ShapeError(f"einsum: letter {c!r} is size {sizes[c]} in one operand and {n} "
                                 f"in another ({formula!r}, shapes {[t.shape for t in operands]})")
            sizes[c] = n if sizes.get(c, 1) == 1 else sizes[c]
    for c in output:
        if c not in sizes or output.count(c) > 1:
            raise ArgumentError(f"einsum: output letter {c!r} is repeated or not in any input "
                             f"({formula!r})")
    order = output + "".join(c for c in sizes if c not in output)
    aligned = []
    for x, letters in pieces:
        present = [c for c in order if c in letters]
        x = x.permute([letters.index(c) for c in present])
        aligned.append(x.reshape(tuple(x.shape[present.index(c)] if c in letters else 1
                                       for c in order)))
    product = functools.reduce(lambda a, b: a * b, aligned)
    product = product.expand(tuple(sizes[c] for c in order))
    summed = tuple(range(len(output), len(order)))
    return product.sum(summed) if summed else product
