"""The primitive op set: every Tensor method lowers to these (frontend), autograd has one rule per
differentiable one (frontend/autograd.py), the scheduler cuts graphs of them into kernels, and
codegen turns a kernel of them into loops. Groups below say which ops share a treatment.
"""
from __future__ import annotations

from enum import Enum, auto


class Op(Enum):
    # unary ALU (CAST/BITCAST carry the target dtype as the node's dtype)
    EXP2 = auto(); LOG2 = auto(); SIN = auto(); SQRT = auto(); RECIPROCAL = auto()  # noqa: E702
    NEG = auto(); TRUNC = auto(); CAST = auto(); BITCAST = auto()  # noqa: E702
    # binary ALU
    ADD = auto(); MUL = auto(); MAX = auto(); IDIV = auto(); MOD = auto()  # noqa: E702
    CMPLT = auto(); CMPNE = auto(); AND = auto(); OR = auto(); XOR = auto()  # noqa: E702
    SHL = auto(); SHR = auto()  # noqa: E702
    # ternary ALU
    WHERE = auto()
    # reduce over axes (shape keeps the reduced axes as size 1)
    REDUCE_SUM = auto(); REDUCE_MAX = auto()  # noqa: E702
    # movement: change the view, never the data
    RESHAPE = auto(); PERMUTE = auto(); EXPAND = auto(); PAD = auto(); SHRINK = auto()  # noqa: E702
    FLIP = auto()
    # buffers
    BUFFER = auto(); CONST = auto(); COPY = auto(); CONTIGUOUS = auto(); ASSIGN = auto()  # noqa: E702
    DETACH = auto()  # identity forward, no gradient backward
    # kernel-level ops (only inside a scheduled kernel's AST)
    LOAD = auto(); STORE = auto(); VALID = auto(); SINK = auto()  # noqa: E702

    # identity hashing, in C: Enum's own __hash__ hashes the name in Python, and the scheduler
    # looks ops up in sets and dicts a few hundred thousand times per training step
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"Op.{self.name}"


UNARY = {Op.EXP2, Op.LOG2, Op.SIN, Op.SQRT, Op.RECIPROCAL, Op.NEG, Op.TRUNC, Op.CAST, Op.BITCAST}
BINARY = {Op.ADD, Op.MUL, Op.MAX, Op.IDIV, Op.MOD, Op.CMPLT, Op.CMPNE, Op.AND, Op.OR, Op.XOR,
          Op.SHL, Op.SHR}
TERNARY = {Op.WHERE}
ALU = UNARY | BINARY | TERNARY
REDUCE = {Op.REDUCE_SUM, Op.REDUCE_MAX}
MOVEMENT = {Op.RESHAPE, Op.PERMUTE, Op.EXPAND, Op.PAD, Op.SHRINK, Op.FLIP}
BUFFER_OPS = {Op.BUFFER, Op.CONST, Op.COPY, Op.CONTIGUOUS, Op.ASSIGN, Op.DETACH}
KERNEL_OPS = {Op.LOAD, Op.STORE, Op.VALID, Op.SINK}
COMPARISON = {Op.CMPLT, Op.CMPNE}
COMMUTATIVE = {Op.ADD, Op.MUL, Op.MAX, Op.CMPNE, Op.AND, Op.OR, Op.XOR}
INTEGER_ONLY = {Op.IDIV, Op.MOD, Op.AND, Op.OR, Op.XOR, Op.SHL, Op.SHR}  # AND/OR/XOR also bool
TRANSCENDENTAL = {Op.EXP2, Op.LOG2, Op.SIN, Op.SQRT, Op.RECIPROCAL}

# the binary op a reduce folds with
REDUCE_ALU = {Op.REDUCE_SUM: Op.ADD, Op.REDUCE_MAX: Op.MAX}
