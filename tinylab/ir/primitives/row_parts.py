"""Pieces the primitive rows share: transform helpers (a zero tangent as None, the batching of an
elementwise op, lifting an unbatched operand) and renderer spellings common to several rows
(a math library call, an infix operator). Read by math_rows, arithmetic_rows, structure_rows.
"""
from __future__ import annotations

import math
from typing import Callable

from .. import node as ir

LN2 = math.log(2)


# ---- transforms ------------------------------------------------------------------------------
def add_tangents(*terms):
    """Sum of the terms that are not None (None if all are: a zero tangent)."""
    present = [t for t in terms if t is not None]
    if not present:
        return None
    total = present[0]
    for t in present[1:]:
        total = total + t
    return total


def scaled(tangent, factor):
    return None if tangent is None else tangent * factor


def no_tangent(node, tangents):
    return None


def linear(apply: Callable) -> Callable:
    """jvp of a linear op L (movement, sum, copy): dL(x) = L(dx)."""
    return lambda node, tangents: apply(node, tangents[0])


def lift(x, size: int):
    """An unbatched value broadcast over the batch axis: x -> (size, *x.shape)."""
    return x.reshape((1,) + x.shape).expand((size,) + x.shape)


def elementwise_batch(node, sources, batched, size):
    # f(x_b, y) = f(x, y)_b: lift the unbatched operands, apply f to (B, ...) shapes
    lifted = [s if b else lift(s, size) for s, b in zip(sources, batched)]
    if node.op.name in ("CAST", "BITCAST"):
        return ir.cast(lifted[0], node.dtype, node.op.name == "BITCAST")
    return ir.alu(node.op, *lifted)


def leading(make: Callable) -> Callable:
    """A one-source op whose argument gains the batch axis in front (movement, reduce)."""
    return lambda node, sources, batched, size: make(node, sources[0], size)


def shifted(axes):
    return tuple(a + 1 for a in axes)


def cosine(x):
    """cos x = 1 - 2 sin²(x/2): x/2 is exact, where x + pi/2 rounds a large x's digits away."""
    half_sine = ir.alu(ir.Op.SIN, x * 0.5)
    return half_sine * half_sine * -2.0 + 1.0


# ---- spellings -------------------------------------------------------------------------------
def math_call(function: str) -> dict:
    """A float math function, spelled by each renderer's math_call (C: `exp2f(x)`, OpenCL and
    WGSL: `exp2(x)`, Metal: `metal::precise::exp2(x)`)."""
    spell = lambda r, a, dtype, src: r.math_call(function, a[0], dtype)  # noqa: E731
    return {"c": spell, "wgsl": spell}


def infix(symbol: str, c_bool: str | None = None, wgsl_bool: str | None = None,
          wraps: bool = False) -> dict:
    """`(a OP b)` in C (on bool scalars `c_bool` where given) and in C vector code; WGSL puts
    spaces around it, spells bools with `wgsl_bool`, and `wraps` a narrow integer's result."""
    def c(r, a, dtype, src):
        return f"({a[0]}{c_bool if c_bool and dtype.is_bool else symbol}{a[1]})"

    def wgsl(r, a, dtype, src):
        if wgsl_bool and dtype.is_bool:
            return wgsl_bool.format(*a)
        text = f"({a[0]} {symbol} {a[1]})"
        return r.wrap_int(text, dtype) if wraps else text

    return {"c": c, "c_vector": lambda w, a, t, mask: f"({a[0]}{symbol}{a[1]})", "wgsl": wgsl}
