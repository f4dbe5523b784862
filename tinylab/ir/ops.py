"""The primitive op vocabulary: a registry whose members are the rows of ir/primitives/. Every
Tensor method lowers to these; autograd, tinylab.func, the numpy oracle, decomposition and the
renderers read each op's row (`Op.EXP2.reverse`, `.jvp`, `.batch`, `.spellings`, ...).

`Op.register(...)` adds a primitive, at import (ir/primitives/) or later (a test, a notebook):
the group sets below (UNARY, ALU, TRANSCENDENTAL, ...) and numpy_alu's oracle table follow.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Callable

from .. import numpy_alu
from ..errors import IRError
from ..memo import Role, register

# the renderer families an ALU row is spelled for (or decomposed for): C-style (C, OpenCL, CUDA,
# Metal), WGSL, and PYTHON (which calls the row's numpy oracle). "c_vector" (C's native vector
# variables) is optional: without it C computes the op one lane at a time.
FAMILIES = ("c", "wgsl", "python")
GROUPS = MappingProxyType({"unary": 1, "binary": 2, "ternary": 3, "reduce": 1, "movement": 1,
                          "buffer": None, "kernel": None})
# properties a row may name, each with the set of ops that have it
PROPERTIES = ("transcendental", "not_zero_at_zero", "commutative", "comparison", "integer_only")


class _Registry(type):
    """Op's class: iterating it gives the rows in declaration order, Op["ADD"] looks one up."""

    def __iter__(cls):
        return iter(list(cls._rows.values()))

    def __len__(cls):
        return len(cls._rows)

    def __getitem__(cls, name: str) -> Op:
        try:
            return cls._rows[name]
        except KeyError:
            raise KeyError(f"no primitive op named {name!r}") from None

    def __contains__(cls, name) -> bool:
        return (name.name if isinstance(name, Op) else name) in cls._rows


class Op(metaclass=_Registry):
    """One primitive and its row. Attributes (None where the op has none):
    name, group ("unary", "binary", "ternary", "reduce", "movement", "buffer", "kernel"), arity;
    result_dtype(sources) -> DType (ALU ops; default: the first source's);
    oracle: the numpy function of an ALU op (numpy_alu.apply calls it);
    reverse(grad, node) -> one gradient per source;  jvp(node, tangents) -> the output tangent;
    batch(node, sources, batched, size) -> the node over a leading batch axis;
    properties: a frozenset of PROPERTIES;
    spellings: {family: spell(renderer, args, dtype, src_dtype) -> text} ("c_vector":
    spell(walk, args, vector_type, mask_type));
    decomposition(*sources) -> the same value from other ops, for renderers without a spelling.
    """
    _rows: dict[str, Op] = {}
    __slots__ = ("name", "group", "arity", "result_dtype", "oracle", "reverse", "jvp", "batch",
                 "properties", "spellings", "decomposition")

    def __init__(self, name, group, arity, result_dtype, oracle, reverse, jvp, batch, properties,
                 spellings, decomposition):
        self.name, self.group, self.arity = name, group, arity
        self.result_dtype, self.oracle = result_dtype, oracle
        self.reverse, self.jvp, self.batch = reverse, jvp, batch
        self.properties, self.spellings = frozenset(properties), dict(spellings)
        self.decomposition = decomposition

    # identity hashing (object's, in C): the scheduler looks ops up in sets and dicts a few
    # hundred thousand times per training step
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"Op.{self.name}"

    def __reduce__(self):
        return (_named, (self.name,))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def spelling(self, family: str) -> Callable | None:
        """How renderers of `family` write this op, or None (then they decompose it)."""
        return self.spellings.get(family)

    @classmethod
    def register(cls, name: str, group: str, *, result_dtype: Callable | None = None,
                 oracle: Callable | None = None, reverse: Callable | None = None,
                 jvp: Callable | None = None, batch: Callable | None = None, properties=(),
                 spellings: dict | None = None, decomposition: Callable | None = None) -> Op:
        """Declare a primitive; gives its row, also reachable as Op.<name> from then on."""
        if not name.isidentifier() or not name.isupper():
            raise IRError(f"a primitive's name is an upper-case identifier, got {name!r}")
        if name in cls._rows or name in vars(cls):
            raise IRError(f"primitive {name} is already registered")
        if group not in GROUPS:
            raise IRError(f"primitive {name}: group must be one of {sorted(GROUPS)}, got {group!r}")
        unknown = set(properties) - set(PROPERTIES)
        if unknown:
            raise IRError(f"primitive {name}: unknown properties {sorted(unknown)}")
        row = cls(name, group, GROUPS[group], result_dtype or _same_dtype, oracle, reverse, jvp,
                  batch, properties, spellings or {}, decomposition)
        if group in ("unary", "binary", "ternary"):
            _check_alu(row)
        cls._rows[name] = row
        setattr(cls, name, row)
        for group_set in _sets_of(row):
            group_set.add(row)
        if row.oracle is not None:
            keeps_dtype = group != "ternary" and "comparison" not in row.properties
            numpy_alu.define(name, row.oracle, keeps_dtype)
        return row

    @classmethod
    def unregister(cls, name: str) -> None:
        """Remove a primitive registered after import (tests); its nodes stay valid objects."""
        row = cls._rows.pop(name)
        delattr(cls, name)
        for group_set in _sets_of(row):
            group_set.discard(row)
        numpy_alu.forget(name)


register("primitive rows", Op._rows, Role.ROWS)


def _named(name: str) -> Op:
    return Op[name]


def _same_dtype(sources):
    return sources[0].dtype


def _check_alu(row: Op) -> None:
    """Every renderer family can say an ALU op: a spelling, else a decomposition (CAST and
    BITCAST carry their dtype: the renderers spell them, PYTHON casts with numpy_alu.cast)."""
    for family in FAMILIES:
        spelled = family in row.spellings or (family == "python" and row.oracle is not None)
        if not spelled and row.decomposition is None:
            raise IRError(f"primitive {row.name}: no spelling for the {family!r} renderers and no "
                          f"decomposition; give spellings[{family!r}] (or an oracle for python) "
                          f"or a decomposition into other primitives")


def _op_set(name: str) -> set:
    """A set of rows that Op.register fills (and unregister empties): registered extension rows."""
    return register(f"primitive rows: {name}", set(), Role.ROWS)


UNARY: set[Op] = _op_set("UNARY")
BINARY: set[Op] = _op_set("BINARY")
TERNARY: set[Op] = _op_set("TERNARY")
ALU: set[Op] = _op_set("ALU")
REDUCE: set[Op] = _op_set("REDUCE")
MOVEMENT: set[Op] = _op_set("MOVEMENT")
BUFFER_OPS: set[Op] = _op_set("BUFFER_OPS")
KERNEL_OPS: set[Op] = _op_set("KERNEL_OPS")
TRANSCENDENTAL: set[Op] = _op_set("TRANSCENDENTAL")
# f(0) != 0: a padded zero does not stay zero through it
NOT_ZERO_AT_ZERO: set[Op] = _op_set("NOT_ZERO_AT_ZERO")
COMMUTATIVE: set[Op] = _op_set("COMMUTATIVE")
COMPARISON: set[Op] = _op_set("COMPARISON")
INTEGER_ONLY: set[Op] = _op_set("INTEGER_ONLY")        # AND/OR/XOR also bool
_GROUP_SETS = MappingProxyType({
    "unary": (UNARY, ALU), "binary": (BINARY, ALU), "ternary": (TERNARY, ALU), "reduce": (REDUCE,),
    "movement": (MOVEMENT,), "buffer": (BUFFER_OPS,), "kernel": (KERNEL_OPS,)})
_PROPERTY_SETS = MappingProxyType({
    "transcendental": TRANSCENDENTAL, "not_zero_at_zero": NOT_ZERO_AT_ZERO,
    "commutative": COMMUTATIVE, "comparison": COMPARISON, "integer_only": INTEGER_ONLY})


def _sets_of(row: Op) -> list[set]:
    return list(_GROUP_SETS[row.group]) + [_PROPERTY_SETS[p] for p in row.properties]


def primitive(method: str) -> Op:
    """The row of the primitive a lower-case method name stands for (`primitive("sqrt")`)."""
    return Op[method.upper()]


def spelled_by(family: str) -> frozenset:
    """The ALU ops renderers of `family` can write (the rest they decompose)."""
    return frozenset(op for op in ALU if family in op.spellings or
                     (family == "python" and op.oracle is not None))


from . import primitives  # noqa: E402,F401  (the rows: registers every built-in primitive)

# the binary op a reduce folds with
REDUCE_ALU = {Op.REDUCE_SUM: Op.ADD, Op.REDUCE_MAX: Op.MAX}
