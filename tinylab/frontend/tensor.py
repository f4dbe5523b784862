"""The Tensor: a lazy value on a device, with PyTorch/tinygrad names and semantics.

A Tensor holds an IR node; every method builds new nodes (nothing runs) until `.realize()`,
`.numpy()`, `.item()` or `.tolist()` asks for a value, which hands the graph to the engine.
This file holds the core (construction, properties, reading values back, autograd, the helpers
the mixins share); list ingestion is ingest.py, realizing and in-place writes realizing.py
(ownership and versions: engine/ownership.py), operands and operator dunders operators.py; the
method families live in mixins: creation.py, random.py, movement.py, elementwise.py, reduce.py,
scans.py, nn_ops.py, sorting.py, pooling.py, resampling.py, matrix.py. User errors are raised
when an op is built, naming op and shapes.
"""
from __future__ import annotations

import weakref
from contextlib import ContextDecorator

import numpy as np

from .. import config
from ..dtype import DType, dtypes
from ..engine import trace as tracing
from ..engine.devices import Device
from ..engine import ownership
from ..errors import ArgumentError, DTypeError, ShapeError
from ..ir.node import prod
from ..ir.symbolic import Variable, any_symbolic, bound_shape, max_shape
from ..ir import node as ir
from ..ir.node import Node
from ..ir.ops import Op
from ..memo import Role, register
from . import autograd, traced, views
from .activations import ActivationMixin
from .creation import CreationMixin
from .random import RandomMixin
from .elementwise import ElementwiseMixin
from .indexing import IndexingMixin
from .ingest import buffer_node, to_numpy
from .matrix import MatrixMixin
from .movement import MovementMixin
from .narrow_floats import round_once
from .nn_ops import NNMixin
from .operators import OperatorMixin, broadcast_shape, symbolic_value
from .pooling import PoolingMixin
from .realizing import ALL_TENSORS, RealizingMixin
from .reduce import ReduceMixin
from .resampling import ResamplingMixin
from .scans import ScanMixin
from .sorting import SortingMixin
from .windows import WindowMixin

__all__ = ["ALL_TENSORS", "Tensor", "broadcast_shape"]   # (the last two: other modules' names)

# weakrefs to tensors backward() ran on, for the next optimizer step
_BACKWARD_ROOTS = register("backward roots", [], Role.LIVE)
FOLDED_BY_BUILDERS = (Op.CONST, Op.RESHAPE, Op.PERMUTE, Op.EXPAND)


class _TensorMeta(type):
    """`Tensor.training` / `Tensor.no_grad` as class-level flags that Context(TRAINING=1) also sets."""

    @property
    def training(cls) -> bool:
        return cls._training or bool(config.TRAINING.value)

    @training.setter
    def training(cls, value: bool) -> None:
        cls._training = bool(value)



class Tensor(RealizingMixin, OperatorMixin, CreationMixin, RandomMixin, MovementMixin, WindowMixin,
             IndexingMixin, ElementwiseMixin, ActivationMixin, ReduceMixin, ScanMixin, NNMixin, SortingMixin,
             PoolingMixin, ResamplingMixin, MatrixMixin, metaclass=_TensorMeta):
    __slots__ = ("node", "_requires_grad", "grad", "is_param", "__weakref__")
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
            value = symbolic_value(data, device)
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
                array = to_numpy(data)
            else:
                raise TypeError(f"Tensor(data): cannot make a tensor from {type(data).__name__}; "
                                f"pass a number, a (nested) list, a numpy array or bytes")
            if array.dtype == np.float64 and dtype is None and not isinstance(data, np.ndarray):
                array = array.astype(np.float32)
            narrow = dtype == dtypes.bfloat16  # numpy has none: in as float32, a kernel rounds
            if dtype is not None:
                array = array.astype(np.float32 if narrow else dtype.np)
            node = buffer_node(array, device)
            ownership.claim(node.buffer, self)
            if narrow:
                node = ir.cast(node, dtype)
        self.node: Node = node
        self.requires_grad = requires_grad
        self.grad: Tensor | None = None
        self.is_param = True  # tinygrad's: optimizers update it (False: a buffer they realize)
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

    def is_param_(self, is_param: bool = True) -> Tensor:
        """tinygrad's flag: whether an optimizer given this tensor updates it (a parameter) or
        only realizes it with each step (a buffer: running stats, a cache). Returns self."""
        self.is_param = bool(is_param)
        return self

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
        elif out is not self and (out.node.op in views.VIEW_OPS or out.node is self.node):
            views.register_pending(out, self)  # a view of a lazy value: a write realizes it
        return out

    def numpy(self) -> np.ndarray:
        """The value as a numpy array (a copy), with the numpy dtype PyTorch would use."""
        self._check_not_capturing(".numpy()")
        traced.check_concrete(self.node, ".numpy()")
        if self.dtype == dtypes.bfloat16:  # numpy has no bfloat16: its float32 values (exact)
            return self.float().numpy()
        if self.numel() == 0:
            return np.zeros(self.shape, dtype=self.dtype.np)
        spec = Device[self.device]
        if spec.render_only:
            from ..errors import DeviceError
            raise DeviceError(f"{self.device} only renders source; there is no value to read. "
                              f"Use a real device (e.g. DEV=CPU) to get numbers.")
        self.realize()
        if self.node.op is not Op.BUFFER:  # a view of realized storage: read it through a copy
            return Tensor(ir.contiguous(self.node)).numpy()
        if any_symbolic(self.shape):  # laid out at the variables' maxima: read the bound part
            full = self.node.buffer.numpy()[:prod(max_shape(self.shape))]
            return full.reshape(max_shape(self.shape))[
                tuple(slice(0, n) for n in bound_shape(self.shape))].copy()
        return self.node.buffer.numpy().reshape(self.shape)

    def item(self):
        self._check_not_capturing(".item()")
        traced.check_concrete(self.node, ".item()")
        if self.numel() != 1:
            raise ShapeError(f"item() needs a tensor with one element, this one has shape "
                             f"{self.shape}")
        return self.numpy().reshape(()).item()

    def tolist(self):
        self._check_not_capturing(".tolist()")
        return self.numpy().tolist()

    def data(self) -> memoryview:
        return memoryview(self.numpy())

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
        if self.requires_grad is False:   # PyTorch's RuntimeError (None: "may need one" here)
            raise ArgumentError("backward: this tensor does not require grad (requires_grad="
                                "False, or made by detach()), so no gradient flows from it")
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


round_once(Tensor)  # bfloat16 composites in float32, rounded once (narrow_floats.py)
