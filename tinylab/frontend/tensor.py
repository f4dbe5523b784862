"""The Tensor: a lazy value on a device, with PyTorch/tinygrad names and semantics.

A Tensor holds an IR node; every method builds new nodes (nothing runs) until `.realize()`,
`.numpy()`, `.item()` or `.tolist()` asks for a value, which hands the graph to the engine.
This file holds the core (construction, dtype/broadcast helpers, realizing, autograd, operator
dunders); the method families live in mixins: creation.py, movement.py, elementwise.py,
reduce.py, nn_ops.py, sorting.py, pooling.py, matrix.py. User errors are raised here, when an op
is built, naming op and shapes.
"""
from __future__ import annotations

import weakref
from contextlib import ContextDecorator
from typing import Sequence

import numpy as np

from .. import config
from ..dtype import DType, dtypes, promote, result_dtype
from ..engine import realize as engine
from ..engine import trace as tracing
from ..engine.devices import Device
from ..engine import ownership
from ..engine.ownership import LiveHolders
from ..errors import DTypeError, JitError, ShapeError
from ..ir.node import prod
from ..ir.symbolic import Variable, any_symbolic, bound_shape, max_shape
from ..ir import node as ir
from ..ir.node import Node
from ..ir.ops import Op
from ..runtimes.buffer import Buffer
from . import autograd, traced, views
from .activations import ActivationMixin
from .creation import CreationMixin
from .elementwise import ElementwiseMixin
from .indexing import IndexingMixin
from .matrix import MatrixMixin
from .movement import MovementMixin
from .nn_ops import NNMixin
from .pooling import PoolingMixin
from .reduce import ReduceMixin
from .sorting import SortingMixin


ALL_TENSORS = LiveHolders()  # every live Tensor (engine/ownership.py keeps the order)
_BACKWARD_ROOTS: list = []  # weakrefs to tensors backward() ran on, for the next optimizer step
FOLDED_BY_BUILDERS = (Op.CONST, Op.RESHAPE, Op.PERMUTE, Op.EXPAND)
_PENDING_COPIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Buffer -> lazy clones


class _TensorMeta(type):
    """`Tensor.training` / `Tensor.no_grad` as class-level flags that Context(TRAINING=1) also sets."""

    @property
    def training(cls) -> bool:
        return cls._training or bool(config.TRAINING.value)

    @training.setter
    def training(cls, value: bool) -> None:
        cls._training = bool(value)


def _to_numpy(data) -> np.ndarray:
    """A numpy array from nested lists/tuples, checking for ragged or non-numeric data."""
    def shape_of(x, path):
        if isinstance(x, (list, tuple)):
            shapes = [shape_of(item, f"{path}[{i}]") for i, item in enumerate(x)]
            if any(s != shapes[0] for s in shapes[1:]):
                bad = next(i for i, s in enumerate(shapes) if s != shapes[0])
                raise ValueError(f"Tensor(data): ragged nested sequence at {path}: element 0 has "
                                 f"shape {shapes[0]} but element {bad} has shape {shapes[bad]}")
            return (len(x),) + (shapes[0] if shapes else ())
        if isinstance(x, Tensor):
            return tuple(x.shape)
        if not isinstance(x, (bool, int, float, np.generic)):
            raise TypeError(f"Tensor(data): {path} is {type(x).__name__} {x!r}, "
                            f"not a number")
        return ()
    shape_of(data, "data")
    flat = _flatten(data)
    if any(isinstance(v, float) for v in flat):
        return np.array(flat, dtype=np.float32).reshape(_shape(data))
    if flat and all(isinstance(v, (bool, np.bool_)) for v in flat):
        return np.array(flat, dtype=np.bool_).reshape(_shape(data))
    if any(isinstance(v, (np.floating,)) for v in flat):
        return np.array(flat, dtype=np.float32).reshape(_shape(data))
    if not flat:
        return np.zeros(_shape(data), dtype=np.float32)
    return np.array(flat, dtype=dtypes.default_int.np).reshape(_shape(data))


def _flatten(x) -> list:
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in _flatten(item)]
    if isinstance(x, Tensor):
        return x.numpy().reshape(-1).tolist()
    return [x]


def _shape(x) -> tuple:
    if isinstance(x, (list, tuple)):
        return (len(x),) + (_shape(x[0]) if x else ())
    if isinstance(x, Tensor):
        return tuple(x.shape)
    return ()



def _symbolic_value(size: Variable, device: str) -> Tensor:
    """A symbolic size used as a number (x.sum(axis) / count in a mean over a symbolic axis):
    an int32 0-d tensor a kernel computes by summing ones over the symbolic length, so the value
    follows the bound variable in every launch (and in TinyJit replays)."""
    if size.min < 0:
        raise ValueError(f"cannot use the symbolic value {size!r} as a number: it may be "
                         f"negative")
    return Tensor.ones(size, dtype=dtypes.int32, device=device).sum()


class Tensor(CreationMixin, MovementMixin, IndexingMixin, ElementwiseMixin, ActivationMixin,
             ReduceMixin, NNMixin, SortingMixin, PoolingMixin, MatrixMixin, metaclass=_TensorMeta):
    __slots__ = ("node", "_requires_grad", "grad", "__weakref__")
    _training = False
    no_grad = False
    __array_priority__ = 1000  # numpy scalars defer to our operators

    def __init__(self, data, device: str | None = None, dtype: DType | str | None = None,
                 requires_grad: bool | None = None):
        dtype = dtypes.from_any(dtype) if dtype is not None else None
        device = Device.canonicalize(device)
        if isinstance(data, Node):
            node = data
            if Tensor.no_grad and node.op not in (Op.BUFFER, Op.CONST, Op.DETACH):
                node = ir.detach(node)  # built under no_grad: no gradient flows through it
        elif isinstance(data, Variable):  # a bound symbolic size's value, counted by a kernel
            value = _symbolic_value(data, device)
            node = (value if dtype is None else value.cast(dtype)).node
        elif isinstance(data, Tensor):
            node = data.node if device == data.device else ir.copy_to(data.node, device)
            if dtype is not None:
                node = ir.cast(node, dtype)
        elif isinstance(data, (bool, int, float, np.generic)) and not isinstance(data, np.ndarray):
            value_dtype = dtype or (dtypes.from_numpy(np.asarray(data).dtype)
                                    if isinstance(data, np.generic) else dtypes.of_python(data))
            node = ir.const(data.item() if isinstance(data, np.generic) else data, value_dtype,
                            (), device)
        else:
            if isinstance(data, (bytes, bytearray, memoryview)):
                array = np.frombuffer(bytes(data), dtype=np.uint8)
            elif isinstance(data, np.ndarray):
                array = data
            elif isinstance(data, (list, tuple)):
                array = _to_numpy(data)
            else:
                raise TypeError(f"Tensor(data): cannot make a tensor from {type(data).__name__}; "
                                f"pass a number, a (nested) list, a numpy array or bytes")
            if array.dtype == np.float64 and dtype is None and not isinstance(data, np.ndarray):
                array = array.astype(np.float32)
            if dtype is not None:
                array = array.astype(dtype.np)
            node = _buffer_node(array, device)
            ownership.claim(node.buffer, self)
        self.node: Node = node
        self.requires_grad = requires_grad
        self.grad: Tensor | None = None
        ALL_TENSORS.add(self)
        if tracing.active():
            tracing.note_source(node)

    # ---- properties ----
    @property
    def requires_grad(self) -> bool | None:
        """True: backward fills .grad; None (default): also, when the tensor is a float tensor in
        the graph (tinygrad); False: never."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool | None) -> None:
        self._requires_grad = value
        if value and self.node.op in FOLDED_BY_BUILDERS:
            # builders fold consts and chains of reshapes/permutes/expands, which would skip this
            # node in graphs built on it: give it a buffer of its own, like a PyTorch leaf
            self.node = ir.contiguous(self.node)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.node.shape

    @property
    def dtype(self) -> DType:
        return self.node.dtype

    @property
    def device(self) -> str:
        return self.node.device

    @property
    def ndim(self) -> int:
        return len(self.node.shape)

    def numel(self) -> int:
        return self.node.numel

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[self._axis(dim, "size")]

    def element_size(self) -> int:
        return self.dtype.itemsize

    def nbytes(self) -> int:
        return self.numel() * self.element_size()

    def is_floating_point(self) -> bool:
        return self.dtype.is_float

    @property
    def lazydata(self) -> Node:  # tinygrad's old name, for people reading old examples
        return self.node

    def __repr__(self) -> str:  # a symbolic size prints as <i[1-64]=5>
        state = "realized" if self.node.op is Op.BUFFER else "lazy"
        grad = f", requires_grad={self.requires_grad}" if self.requires_grad else ""
        return (f"<Tensor {state} {self.dtype.name}{list(self.shape)} on {self.device}{grad}>")

    def __hash__(self):
        return id(self)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __bool__(self):
        traced.check_concrete(self.node, "bool")
        if self.numel() != 1:
            raise ValueError(f"the truth value of a tensor with {self.numel()} elements is "
                             f"ambiguous; use .any() or .all()")
        return bool(self.item())

    def __int__(self):
        return int(self.item())

    def __float__(self):
        return float(self.item())

    def __index__(self):
        if self.dtype.is_float or self.numel() != 1:
            raise TypeError("only single-element integer tensors can be used as an index")
        return int(self.item())

    # ---- making values ----
    def _wrap(self, node: Node) -> Tensor:
        if node is self.node and node.op is Op.BUFFER:  # a view that changes nothing (t[:3] of
            return self  # 3 rows) is the tensor: a write to it is a write to the storage
        return Tensor(node, requires_grad=None)

    def _view(self, node: Node) -> Tensor:
        """A movement op's result: a view of the storage (writes go through, frontend/views.py)
        when self is realized or itself a view; otherwise a value like any other."""
        out = self._wrap(node)
        if out is not self and (self.node.op in (Op.BUFFER, Op.ASSIGN) or views.is_view(self)):
            views.register(out)
        return out

    def realize(self, *others: Tensor) -> Tensor:
        """Compute this tensor (and `others`) now. Also `Tensor.realize(a, b)`. The graph a value
        came from stays visible to autograd (a printed activation still trains)."""
        tensors, computed_outside, jit = [self, *others], None, engine.capturer()
        picked = None
        if jit is not None:  # values made before the step are computed once, not per replay
            computed_outside = jit.realize_closure(tensors)
            picked = lambda readers: _captured_readers(jit, readers)  # noqa: E731
        keeps = [t._keeps_graph() for t in tensors]
        tensors, nodes = ownership.realize_holders(tensors, ALL_TENSORS, keeps, computed_outside,
                                                   picked)   # versions, ownership: the engine's
        keeps += [False] * (len(tensors) - len(keeps))
        for t, n, keep in zip(tensors, nodes, keeps):
            if keep and t.node is not n:
                autograd.realized_from(n, t.node)
            t.node = n
        return self

    def _keeps_graph(self) -> bool:
        """Whether realizing this tensor must keep its graph for autograd: not for values no
        gradient flows through (no_grad, detached, non-float, TinyJit captures) nor for assigns,
        which write a new version of a buffer outside autograd (optimizer updates)."""
        return (self.requires_grad is not False and self.dtype.is_float and not Tensor.no_grad
                and engine.capturer() is None and self.node.op not in (Op.ASSIGN, Op.DETACH, Op.CONST))

    def _owns_buffer(self) -> bool:
        return ownership.owns(self)

    def _check_not_capturing(self, what: str) -> None:
        if engine.capturer() is not None:
            raise JitError(f"{what} inside a TinyJit function: the value would be frozen at "
                           f"capture time. Return the tensor from the function instead.")

    def numpy(self) -> np.ndarray:
        """The value as a numpy array (a copy), with the numpy dtype PyTorch would use."""
        self._check_not_capturing(".numpy()")
        traced.check_concrete(self.node, ".numpy()")
        if self.numel() == 0:
            return np.zeros(self.shape, dtype=self.dtype.np)
        spec = Device[self.device]
        if spec.render_only:
            from ..errors import DeviceError
            raise DeviceError(f"{self.device} only renders source; there is no value to read. "
                              f"Use a real device (e.g. DEV=CPU) to get numbers.")
        self.realize()
        if any_symbolic(self.shape):  # laid out at the variables' maxima: read the bound part
            full = self.node.buffer.numpy()[:prod(max_shape(self.shape))]
            return full.reshape(max_shape(self.shape))[
                tuple(slice(0, n) for n in bound_shape(self.shape))].copy()
        return self.node.buffer.numpy().reshape(self.shape)

    def item(self):
        self._check_not_capturing(".item()")
        traced.check_concrete(self.node, ".item()")
        if self.numel() != 1:
            raise ValueError(f"item() needs a tensor with one element, this one has shape "
                             f"{self.shape}")
        return self.numpy().reshape(()).item()

    def tolist(self):
        self._check_not_capturing(".tolist()")
        return self.numpy().tolist()

    def data(self) -> memoryview:
        return memoryview(self.numpy())

    def to(self, device: str) -> Tensor:
        device = Device.canonicalize(device)
        if device == self.device:
            return self
        Device[device]  # raises for unknown devices
        out = Tensor(ir.copy_to(self.node, device))
        out.requires_grad = self.requires_grad
        return out

    def to_(self, device: str) -> Tensor:
        self.node = self.to(device).node
        return self

    def clone(self, device: str | None = None) -> Tensor:
        """A copy with its own buffer (a later assign to self does not change it)."""
        device = Device.canonicalize(device) if device else self.device
        node = self.node
        if node.op is Op.BUFFER or device != self.device:
            node = ir.copy_to(node, device)
        elif node.op is not Op.CONST:
            node = ir.contiguous(node)
        out = Tensor(node)
        out.requires_grad = self.requires_grad
        if self.node.op is Op.BUFFER and device == self.device:  # copied before any assign
            _PENDING_COPIES.setdefault(self.node.buffer, LiveHolders()).add(out)
        return out

    def contiguous(self) -> Tensor:
        return self._wrap(ir.contiguous(self.node))

    def detach(self) -> Tensor:
        out = Tensor(ir.detach(self.node), requires_grad=False)
        if self.node.op in (Op.BUFFER, Op.ASSIGN) or views.is_view(self):
            views.register(out)  # shares the storage, as in PyTorch
        return out

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        self.requires_grad = requires_grad
        return self

    def replace(self, other: Tensor) -> Tensor:
        """Make this tensor hold `other`'s value (same shape); no gradient link."""
        if other.shape != self.shape:
            raise ShapeError(f"replace: shape {other.shape} does not match {self.shape}")
        self.node = other.node
        return self

    def assign(self, value) -> Tensor:
        """Write `value` into this tensor's buffer (in place, like an optimizer update); a view of
        a realized tensor writes its base's elements (frontend/views.py)."""
        value = value if isinstance(value, Tensor) else Tensor(value, self.device, self.dtype)
        if value.shape != self.shape:
            value = value._broadcast_to(self.shape, "assign")
        if value.device != self.device:
            value = value.to(self.device)
        if value.dtype != self.dtype:
            value = value.cast(self.dtype)
        if views.is_view(self):  # a view: write its base's elements
            views.write(self, value)
            return self
        if self.node.op is not Op.BUFFER:
            self.realize()
        if not self._owns_buffer():
            # equal lazy values share one buffer (Tensor.ones(32) made twice is one node); the
            # tensor written in place gets a copy of its own first
            self.node = ir.copy_to(self.node, self.device)
            self.realize()
        pending = [t for t in _PENDING_COPIES.pop(self.node.buffer, ()) if t.node.op is Op.COPY
                   and t.node.src[0] is self.node]
        if pending:  # lazy clones of the old value copy it now, before it is overwritten
            Tensor.realize(*pending)
        self.node = ir.assign(self.node, value.node)
        views.repoint(self)  # the views of this storage read the new value, as in PyTorch
        return self

    # ---- autograd ----
    def gradient(self, *targets: Tensor, gradient: Tensor | None = None) -> list[Tensor]:
        """d self / d target for each target (zeros where self does not depend on it)."""
        root_grad = self._root_grad(gradient)
        grads = autograd.gradients(self.node, root_grad, [t.node for t in targets])
        out = []
        for t in targets:
            g = grads.get(t.node)
            out.append(Tensor(g) if g is not None else Tensor.zeros(*t.shape, device=t.device,
                                                                   dtype=t.dtype))
        return out

    def _root_grad(self, gradient: Tensor | None) -> Node:
        if gradient is None:
            if self.numel() != 1:
                raise ShapeError(f"backward: the gradient can only be implied for a tensor with "
                                 f"one element, this one has shape {self.shape}; pass gradient=")
            return autograd.ones_like(self.node)
        if gradient.shape != self.shape:
            raise ShapeError(f"backward: gradient shape {gradient.shape} != tensor shape "
                             f"{self.shape}")
        return gradient.node

    def backward(self, gradient: Tensor | None = None) -> Tensor:
        """Add d self / d t to `t.grad` for every live float tensor t this depends on."""
        if not self.dtype.is_float:
            raise DTypeError(f"backward needs a float tensor, this one is {self.dtype.name}")
        root_grad = self._root_grad(gradient)
        root = self.node
        in_graph = set(autograd.graph(root))
        targets = [t for t in list(ALL_TENSORS) if t.requires_grad is not False
                   and t.node in in_graph and t.dtype.is_float and t.node.op is not Op.CONST]
        grads = autograd.gradients(root, root_grad, [t.node for t in targets])
        for t in targets:
            g = grads.get(t.node)
            if g is None:
                continue
            t.grad = Tensor(g) if t.grad is None else t.grad + Tensor(g)
        if self.node.op is not Op.BUFFER:
            _BACKWARD_ROOTS.append(weakref.ref(self))
        return self

    @staticmethod
    def pending_backward_roots() -> list[Tensor]:
        """Unrealized tensors backward() was called on since the last call (then forgotten).
        Optimizers realize them with their update, so `loss.backward(); opt.step();
        loss.item()` gives the loss before the update and computes the forward pass once."""
        roots = [t for t in (ref() for ref in _BACKWARD_ROOTS)
                 if t is not None and t.node.op is not Op.BUFFER]
        _BACKWARD_ROOTS.clear()
        return roots

    # ---- helpers the mixins share ----
    def _axis(self, axis: int, op: str, ndim: int | None = None) -> int:
        ndim = self.ndim if ndim is None else ndim
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
            raise TypeError(f"{op}: axis must be an int, got {axis!r}")
        bound = max(ndim, 1)
        if not -bound <= axis < bound:
            raise IndexError(f"{op}: axis {axis} is out of range for a tensor of {ndim} "
                             f"dimension(s) (shape {self.shape})")
        return int(axis) % bound if ndim else 0

    def _const(self, value, dtype: DType | None = None, shape: tuple | None = None) -> Tensor:
        return Tensor(ir.const(value, dtype or self.dtype, self.shape if shape is None else shape,
                               self.device))

    def _broadcast_to(self, shape: tuple, op: str) -> Tensor:
        if self.shape == tuple(shape):
            return self
        if len(shape) < self.ndim:
            raise ShapeError(f"{op}: cannot broadcast shape {self.shape} to {tuple(shape)}")
        padded = (1,) * (len(shape) - self.ndim) + self.shape
        if any(s != n and s != 1 for s, n in zip(padded, shape)):
            raise ShapeError(f"{op}: cannot broadcast shape {self.shape} to {tuple(shape)}")
        return self._wrap(self.node.reshape(padded).expand(tuple(shape)))

    def _operands(self, other, op: str, reverse: bool = False) -> tuple[Tensor, Tensor]:
        """Both operands of a binary op, broadcast to one shape and promoted to one dtype."""
        if isinstance(other, Variable):  # a symbolic size as a value: counted by a kernel
            other = _symbolic_value(other, self.device)
        if isinstance(other, Tensor):
            if other.device != self.device:
                from ..errors import DeviceError
                raise DeviceError(f"{op}: operands are on different devices ({self.device} and "
                                  f"{other.device}); move one with .to()")
            dtype = promote(self.dtype, other.dtype)
            b = other
        elif isinstance(other, (bool, int, float, np.generic)):
            if isinstance(other, np.generic):
                other = other.item()
            dtype = result_dtype(self.dtype, other)
            if dtype.is_int and isinstance(other, int) and not isinstance(other, bool):
                if not dtype.min_value() <= other <= dtype.max_value():
                    other = ir.normalize_const(other, dtype)
            b = Tensor(ir.const(other, dtype, (), self.device))
        else:
            raise TypeError(f"{op}: unsupported operand type {type(other).__name__}")
        a = self if self.dtype == dtype else self.cast(dtype)
        b = b if b.dtype == dtype else b.cast(dtype)
        shape = _broadcast_shape(a.shape, b.shape, op)
        a, b = a._broadcast_to(shape, op), b._broadcast_to(shape, op)
        return (b, a) if reverse else (a, b)

    def _or_equal(self, other, name: str, reverse: bool) -> Tensor:
        """a <= b (or a >= b when reverse): for floats (a < b) | (a == b), so a NaN compares
        False as in PyTorch (not (a > b) would be True)."""
        a, b = self._operands(other, name)
        a, b = (b, a) if reverse else (a, b)
        if a.dtype.is_float:
            return (a < b) | (a == b)
        return (b < a).logical_not()

    def _binary(self, op: Op, other, name: str, reverse: bool = False) -> Tensor:
        a, b = self._operands(other, name, reverse)
        return Tensor(ir.alu(op, a.node, b.node))

    # ---- operators ----
    def __add__(self, other): return self.add(other)
    def __radd__(self, other): return self.add(other, reverse=True)
    def __sub__(self, other): return self.sub(other)
    def __rsub__(self, other): return self.sub(other, reverse=True)
    def __mul__(self, other): return self.mul(other)
    def __rmul__(self, other): return self.mul(other, reverse=True)
    def __truediv__(self, other): return self.div(other)
    def __rtruediv__(self, other): return self.div(other, reverse=True)
    def __floordiv__(self, other): return self.floordiv(other)
    def __rfloordiv__(self, other): return self.floordiv(other, reverse=True)
    def __mod__(self, other): return self.mod(other)
    def __rmod__(self, other): return self.mod(other, reverse=True)
    def __pow__(self, other): return self.pow(other)
    def __rpow__(self, other): return self.pow(other, reverse=True)
    def __matmul__(self, other): return self.matmul(other)
    def __rmatmul__(self, other): return self.matmul(other, reverse=True)
    def __neg__(self): return self.neg()
    def __abs__(self): return self.abs()
    def __invert__(self): return self.bitwise_not()
    def __and__(self, other): return self.bitwise_and(other)
    def __rand__(self, other): return self.bitwise_and(other, reverse=True)
    def __or__(self, other): return self.bitwise_or(other)
    def __ror__(self, other): return self.bitwise_or(other, reverse=True)
    def __xor__(self, other): return self.bitwise_xor(other)
    def __rxor__(self, other): return self.bitwise_xor(other, reverse=True)
    def __lshift__(self, other): return self.lshift(other)
    def __rshift__(self, other): return self.rshift(other)
    def __lt__(self, other): return self._binary(Op.CMPLT, other, "lt")
    def __gt__(self, other): return self._binary(Op.CMPLT, other, "gt", reverse=True)
    def __le__(self, other): return self._or_equal(other, "le", reverse=False)
    def __ge__(self, other): return self._or_equal(other, "ge", reverse=True)
    def __ne__(self, other): return self._binary(Op.CMPNE, other, "ne")  # type: ignore[override]
    def __eq__(self, other): return self.__ne__(other).logical_not()  # type: ignore[override]
    def __iadd__(self, other): return self.assign(self + other)
    def __isub__(self, other): return self.assign(self - other)
    def __imul__(self, other): return self.assign(self * other)
    def __itruediv__(self, other): return self.assign(self / other)

    # ---- training switches ----
    class train(ContextDecorator):  # noqa: N801 - tinygrad's spelling
        """`with Tensor.train():` (or as a decorator) sets Tensor.training."""

        def __init__(self, mode: bool = True):
            self.mode = mode

        def __enter__(self):
            self.previous = Tensor._training
            Tensor._training = self.mode

        def __exit__(self, *exc):
            Tensor._training = self.previous

    class test(ContextDecorator):  # noqa: N801
        """`with Tensor.test():` inference mode: training off, no gradients."""

        def __enter__(self):
            self.previous = (Tensor._training, Tensor.no_grad)
            Tensor._training, Tensor.no_grad = False, True

        def __exit__(self, *exc):
            Tensor._training, Tensor.no_grad = self.previous


def _broadcast_shape(a: Sequence[int], b: Sequence[int], op: str) -> tuple[int, ...]:
    ndim = max(len(a), len(b))
    pa = (1,) * (ndim - len(a)) + tuple(a)
    pb = (1,) * (ndim - len(b)) + tuple(b)
    out = []
    for x, y in zip(pa, pb):
        if x != y and x != 1 and y != 1:
            raise ShapeError(f"{op}: shapes {tuple(a)} and {tuple(b)} cannot be broadcast "
                             f"together")
        out.append(y if x == 1 else x)
    return tuple(out)


def broadcast_shape(*shapes, op: str = "broadcast") -> tuple[int, ...]:
    out: tuple = ()
    for s in shapes:
        out = _broadcast_shape(out, s, op)
    return out


def _captured_readers(jit, readers: list) -> list:
    """The stale readers a TinyJit step realizes (a snapshot's buffer would be shared by the
    step's memory plan): those the step made, except gradients of tensors that did not ask for
    one (requires_grad None, an input batch: its gradient is a whole extra backward conv). The
    others still read the buffer's newest value."""
    before = {id(t) for t in list(jit.tensors_before)}  # by identity: a WeakSet
    unasked = {id(t.grad) for t in list(ALL_TENSORS) if t.requires_grad is None and t.grad is not None}
    return [t for t in readers if id(t) not in before and id(t) not in unasked]


def _buffer_node(array: np.ndarray, device: str) -> Node:
    dtype = dtypes.from_numpy(array.dtype)
    spec = Device[device]
    buf = Buffer(spec.name, int(array.size), dtype, spec.allocator)
    buf.copyin(array)
    return ir.buffer(buf, tuple(int(s) for s in array.shape), dtype, spec.name)

