"""The IR node: immutable and hash-consed, so building the same node twice returns the same object
(free common-subexpression elimination; identity is structural equality; nodes are cheap cache
keys). Fields are named: `op`, `dtype`, `src`, `arg`, `shape`, `device`, plus per-op accessors
(`node.axes`, `node.value`, `node.view`...). Builders below infer the shape and check it; the
frontend calls them after its own user-facing argument checks, autograd rules call them directly.
"""
from __future__ import annotations

import itertools
import math
import weakref
from typing import Any

from ..dtype import DType, dtypes, round_to_bfloat16
from ..errors import IRError, ShapeError
from ..memo import Role, register
from .ops import ALU, REDUCE, Op


def prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _arg_key(op: Op, arg: Any):
    """Hash key of `arg`: floats by their bits so -0.0 and nan stay distinct consts."""
    if op is Op.CONST and isinstance(arg, float):
        return ("f", arg.hex())
    return arg


class Node:
    __slots__ = ("op", "dtype", "src", "arg", "shape", "device", "_key", "__weakref__")
    _interned: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    op: Op
    dtype: DType
    src: tuple[Node, ...]
    arg: Any
    shape: tuple[int, ...]
    device: str | None

    def __new__(cls, op: Op, dtype: DType, src: tuple = (), arg: Any = None,
                shape: tuple = (), device: str | None = None):
        key = (op, dtype, src, _arg_key(op, arg), shape, device)
        found = cls._interned.get(key)
        if found is not None:
            return found
        node = object.__new__(cls)
        for name, value in (("op", op), ("dtype", dtype), ("src", src), ("arg", arg),
                            ("shape", shape), ("device", device), ("_key", key)):
            object.__setattr__(node, name, value)
        cls._interned[key] = node
        return node

    def __setattr__(self, name, value):
        raise AttributeError("Node is immutable")

    def replace(self, **fields) -> Node:
        """This node with some fields changed (op, dtype, src, arg, shape, device), interned."""
        unknown = set(fields) - {"op", "dtype", "src", "arg", "shape", "device"}
        if unknown:
            raise TypeError(f"Node.replace: no field {', '.join(sorted(unknown))}")
        return Node(fields.get("op", self.op), fields.get("dtype", self.dtype),
                    tuple(fields.get("src", self.src)), fields.get("arg", self.arg),
                    fields.get("shape", self.shape), fields.get("device", self.device))

    def __reduce__(self):  # pickling rebuilds through the interning constructor
        return (Node, (self.op, self.dtype, self.src, self.arg, self.shape, self.device))

    def __repr__(self) -> str:
        shape = ",".join(map(str, self.shape))
        arg = "" if self.arg is None or self.op is Op.BUFFER else f" {self.arg!r}"
        return f"<{self.op.name} {self.dtype.name}[{shape}]{arg}>"

    # ---- named accessors ------------------------------------------------------------------
    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def value(self):
        assert self.op is Op.CONST, self
        return self.arg

    @property
    def buffer(self):
        assert self.op is Op.BUFFER, self
        return self.arg[0]

    @property
    def version(self) -> int:
        """How many assigns the buffer had when this node was made: a buffer written in place
        gets a new BUFFER node, so graphs built on its old content never alias the new one."""
        assert self.op is Op.BUFFER, self
        return self.arg[1]

    @property
    def axes(self) -> tuple[int, ...]:
        assert self.op in REDUCE or self.op is Op.FLIP, self
        return self.arg

    @property
    def order(self) -> tuple[int, ...]:
        assert self.op is Op.PERMUTE, self
        return self.arg

    @property
    def padding(self) -> tuple[tuple[int, int], ...]:
        assert self.op is Op.PAD, self
        return self.arg

    @property
    def bounds(self) -> tuple[tuple[int, int], ...]:
        assert self.op is Op.SHRINK, self
        return self.arg

    @property
    def buffer_index(self) -> int:
        assert self.op in (Op.LOAD, Op.STORE), self
        return self.arg[0]

    @property
    def view(self):
        assert self.op in (Op.LOAD, Op.STORE, Op.VALID), self
        return self.arg if self.op is Op.VALID else self.arg[1]

    @property
    def is_const(self) -> bool:
        return self.op is Op.CONST

    # ---- graph walking --------------------------------------------------------------------
    def toposort(self) -> list[Node]:
        """Every node reachable from self, sources before users (iterative, no recursion)."""
        return toposort([self])

    # ---- builders ----------------------------------------------------------------------------
    def alu(self, op: Op, *others: Node) -> Node:
        return alu(op, self, *others)

    def const_like(self, value) -> Node:
        return const(value, self.dtype, self.shape, self.device)

    def _binary(self, op: Op, other, reverse: bool = False) -> Node:
        other = other if isinstance(other, Node) else self.const_like(other)
        return alu(op, other, self) if reverse else alu(op, self, other)

    def __add__(self, other): return self._binary(Op.ADD, other)
    def __radd__(self, other): return self._binary(Op.ADD, other, True)
    def __mul__(self, other): return self._binary(Op.MUL, other)
    def __rmul__(self, other): return self._binary(Op.MUL, other, True)
    def __neg__(self): return alu(Op.NEG, self)
    def __sub__(self, other): return self + (-(other if isinstance(other, Node) else
                                                self.const_like(other)))
    def __rsub__(self, other): return self.const_like(other) + (-self)
    def __truediv__(self, other):
        other = other if isinstance(other, Node) else self.const_like(other)
        return self * alu(Op.RECIPROCAL, other)
    def maximum(self, other): return self._binary(Op.MAX, other)
    def lt(self, other): return self._binary(Op.CMPLT, other)
    def ne(self, other): return self._binary(Op.CMPNE, other)
    def eq(self, other): return alu(Op.NEG, self._binary(Op.CMPNE, other))  # not (a != b)
    def where(self, a, b):
        if not isinstance(a, Node):
            dtype = b.dtype if isinstance(b, Node) else dtypes.float32
            a = const(a, dtype, self.shape, self.device)
        b = b if isinstance(b, Node) else a.const_like(b)
        return alu(Op.WHERE, self, a, b)
    def cast(self, dtype: DType) -> Node: return cast(self, dtype)
    def reshape(self, shape) -> Node: return reshape(self, tuple(shape))
    def permute(self, order) -> Node: return permute(self, tuple(order))
    def expand(self, shape) -> Node: return expand(self, tuple(shape))
    def pad(self, padding) -> Node: return pad(self, tuple(map(tuple, padding)))
    def shrink(self, bounds) -> Node: return shrink(self, tuple(map(tuple, bounds)))
    def flip(self, axes) -> Node: return flip(self, tuple(axes))
    def sum(self, axes) -> Node: return reduce(Op.REDUCE_SUM, self, tuple(axes))
    def max(self, axes) -> Node: return reduce(Op.REDUCE_MAX, self, tuple(axes))


def toposort(roots, sources=None) -> list[Node]:
    """Nodes reachable from roots, sources first; `sources(node)` replaces node.src if given."""
    order: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(r, False) for r in reversed(list(roots))]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for s in reversed(node.src if sources is None else sources(node)):
            if id(s) not in seen:
                stack.append((s, False))
    return order


# ---- leaf builders ---------------------------------------------------------------------------
def normalize_const(value, dtype: DType):
    """The Python value a const of `dtype` holds (bool / int wrapped to the type / float)."""
    if dtype.is_bool:
        return bool(value)
    if dtype.is_int:
        if isinstance(value, float):
            if math.isnan(value) or math.isinf(value):
                raise ValueError(f"cannot make a {dtype.name} constant from {value}")
            value = int(value)
        value = int(value)
        lo, span = dtype.min_value(), 1 << dtype.bits
        return (value - lo) % span + lo
    if dtype.scalar == dtypes.bfloat16:  # a bfloat16 literal holds a bfloat16 value
        return round_to_bfloat16(float(value))
    return float(value)


def const(value, dtype: DType, shape: tuple = (), device: str | None = None) -> Node:
    return Node(Op.CONST, dtype.scalar, (), normalize_const(value, dtype), tuple(shape), device)


def buffer(buf, shape: tuple, dtype: DType, device: str, version: int = 0) -> Node:
    """A leaf holding `buf`, a runtimes/buffer.py Buffer (read here by duck type: its `label`
    in graph_printer.py, `numpy()` in evaluate.py; the IR never imports runtimes)."""
    return Node(Op.BUFFER, dtype, (), (buf, version), tuple(shape), device)


# ---- ALU -------------------------------------------------------------------------------------
def alu_dtype(op: Op, srcs) -> DType:
    return op.result_dtype(srcs)   # the row's dtype rule (ir/primitives/)


def alu(op: Op, *srcs: Node) -> Node:
    assert op in ALU and op not in (Op.CAST, Op.BITCAST), op
    arity = op.arity
    if len(srcs) != arity:
        raise IRError(f"{op.name} takes {arity} sources, got {len(srcs)}")
    shape = srcs[0].shape
    if any(s.shape != shape for s in srcs):
        raise ShapeError(f"{op.name}: source shapes differ: {[s.shape for s in srcs]}")
    operands = srcs[1:] if op is Op.WHERE else srcs
    if any(s.dtype != operands[0].dtype for s in operands):
        raise IRError(f"{op.name}: source dtypes differ: {[s.dtype.name for s in operands]}")
    if op is Op.WHERE and srcs[0].dtype != dtypes.bool:
        raise IRError(f"WHERE condition must be bool, got {srcs[0].dtype.name}")
    folded = _fold(op, srcs)
    if folded is not None:
        return folded
    return Node(op, alu_dtype(op, srcs), tuple(srcs), None, shape, _device(srcs))


def _fold(op: Op, srcs) -> Node | None:
    """Build-time identities that keep autograd graphs small: x+0, x*1, where(const, a, b)."""
    if op is Op.ADD:
        for a, b in ((srcs[0], srcs[1]), (srcs[1], srcs[0])):
            if b.op is Op.CONST and b.value == 0 and not (a.dtype.is_float and _neg_zero(b)):
                return a
    if op is Op.MUL:
        for a, b in ((srcs[0], srcs[1]), (srcs[1], srcs[0])):
            if b.op is Op.CONST and b.value == 1 and not b.dtype.is_bool:
                return a
    if op is Op.WHERE and srcs[0].op is Op.CONST:
        return srcs[1] if srcs[0].value else srcs[2]
    return None


def _neg_zero(node: Node) -> bool:
    return math.copysign(1.0, node.value) < 0


def cast(node: Node, dtype: DType, bitcast: bool = False) -> Node:
    if node.dtype == dtype:
        return node
    if bitcast and node.dtype.itemsize != dtype.itemsize:
        raise IRError(f"BITCAST {node.dtype.name} -> {dtype.name}: sizes differ")
    op = Op.BITCAST if bitcast else Op.CAST
    if node.op is Op.CONST and not bitcast:
        return const(node.value, dtype, node.shape, node.device)
    return Node(op, dtype, (node,), None, node.shape, node.device)


def _device(srcs) -> str | None:
    devices = {s.device for s in srcs}
    if len(devices) > 1:
        from ..errors import DeviceError
        raise DeviceError(f"sources are on different devices: {sorted(map(str, devices))}; "
                          f"move them with .to(device) first")
    return srcs[0].device


# ---- reduce ----------------------------------------------------------------------------------
def reduce(op: Op, node: Node, axes: tuple[int, ...]) -> Node:
    assert op in REDUCE
    axes = tuple(sorted(set(axes)))
    if any(not 0 <= a < node.ndim for a in axes):
        raise ShapeError(f"{op.name}: axes {axes} out of range for shape {node.shape}")
    axes = tuple(a for a in axes if node.shape[a] != 1)
    if not axes:
        return node
    shape = tuple(1 if i in axes else s for i, s in enumerate(node.shape))
    if any(node.shape[a] == 0 for a in axes):  # nothing to fold: the op's identity
        return const(reduce_identity(op, node.dtype), node.dtype, shape, node.device)
    return Node(op, node.dtype, (node,), axes, shape, node.device)


def reduce_identity(op: Op, dtype: DType):
    """The value a reduce starts from (and gives over zero elements): 0 for SUM (False for bool),
    the dtype's minimum for MAX. The one definition: frontend, linearize and here use it."""
    if op is Op.REDUCE_SUM:
        return False if dtype.is_bool else 0
    return dtype.min_value()


register("interned nodes", Node._interned, Role.LIVE)   # one Node per structure while alive


# ---- buffer ops ------------------------------------------------------------------------------
_UNIQUE = itertools.count(1)   # serial numbers of CONTIGUOUS requests


def contiguous(node: Node) -> Node:
    """A request for a buffer of its own: each call is a distinct node (arg = a serial number),
    so two tensors asking for the same value get two buffers and may be assigned separately."""
    return Node(Op.CONTIGUOUS, node.dtype, (node,), next(_UNIQUE), node.shape, node.device)


def detach(node: Node) -> Node:
    return Node(Op.DETACH, node.dtype, (node,), None, node.shape, node.device)


def copy_to(node: Node, device: str) -> Node:
    return Node(Op.COPY, node.dtype, (node,), device, node.shape, device)


def assign(target: Node, value: Node) -> Node:
    if target.shape != value.shape:
        raise ShapeError(f"ASSIGN: target shape {target.shape} != value shape {value.shape}")
    if target.dtype != value.dtype:
        raise IRError(f"ASSIGN: target dtype {target.dtype.name} != value {value.dtype.name}")
    return Node(Op.ASSIGN, target.dtype, (target, value), None, target.shape, target.device)


# the movement-op builders live in movement_ops.py; named here so `node.reshape` etc. still work
from .movement_ops import (expand, flip, inverse_permutation, movement, pad, permute,  # noqa: E402,F401
                           reshape, shrink)
