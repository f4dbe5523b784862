"""Realizing and writing in place, as Tensor methods: `realize` (one engine call,
engine/ownership.py, which keeps buffer ownership, versions' snapshots and stale readers),
`assign`, and the copies and moves around them (`to`, `clone`, `contiguous`, `detach`,
`replace`). Mixed into Tensor (frontend/tensor.py).
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from ..engine import ownership
from ..engine import realize as engine
from ..engine.devices import Device
from ..engine.ownership import LiveHolders
from ..errors import JitError, ShapeError
from ..ir import node as ir
from ..ir.ops import Op
from ..memo import Role, register
from . import autograd, views

if TYPE_CHECKING:
    from .tensor import Tensor

ALL_TENSORS = LiveHolders()  # every live Tensor (engine/ownership.py keeps the order)
# Buffer -> lazy clones of it
_PENDING_COPIES = register("pending copies", weakref.WeakKeyDictionary(), Role.LIVE)


def _tensor():
    from .tensor import Tensor  # the class these methods are mixed into (a cycle at import)
    return Tensor


class RealizingMixin:
    __slots__ = ()

    def realize(self, *others):
        """Compute this tensor (and `others`) now. Also `Tensor.realize(a, b)`. The graph a value
        came from stays visible to autograd (a printed activation still trains)."""
        tensors = [t for t in (self, *others) if not views.settle(t)]  # a view stays one
        if not tensors:
            return self
        computed_outside, jit, picked = None, engine.capturer(), None
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
            old, t.node = t.node, n
            if old is not n:
                views.promote(t, old)  # views made of it while it was lazy now alias it
        return self

    def _keeps_graph(self) -> bool:
        """Whether realizing this tensor must keep its graph for autograd: not for values no
        gradient flows through (no_grad, detached, non-float, TinyJit captures) nor for assigns,
        which write a new version of a buffer outside autograd (optimizer updates)."""
        return (self.requires_grad is not False and self.dtype.is_float
                and not _tensor().no_grad
                and engine.capturer() is None and self.node.op not in (Op.ASSIGN, Op.DETACH, Op.CONST))

    def _owns_buffer(self) -> bool:
        return ownership.owns(self)

    def _check_not_capturing(self, what: str) -> None:
        if engine.capturer() is not None:
            raise JitError(f"{what} inside a TinyJit function: the value would be frozen at "
                           f"capture time. Return the tensor from the function instead.")

    def to(self, device: str) -> Tensor:
        device = Device.canonicalize(device)
        if device == self.device:
            return self
        Device[device]  # raises for unknown devices
        out = _tensor()(ir.copy_to(self.node, device))
        out.requires_grad, out.is_param = self.requires_grad, self.is_param
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
        out = _tensor()(node)
        out.requires_grad, out.is_param = self.requires_grad, self.is_param
        if self.node.op is Op.BUFFER and device == self.device:  # copied before any assign
            _PENDING_COPIES.setdefault(self.node.buffer, LiveHolders()).add(out)
        return out

    def contiguous(self) -> Tensor:
        return self._wrap(ir.contiguous(self.node))

    def detach(self) -> Tensor:
        out = _tensor()(ir.detach(self.node), requires_grad=False)
        if self.node.op in (Op.BUFFER, Op.ASSIGN) or views.is_view(self):
            views.register(out)  # shares the storage, as in PyTorch
        else:
            views.register_pending(out, self)
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
        if not isinstance(value, _tensor()):
            value = _tensor()(value, self.device, self.dtype)
        if value.shape != self.shape:
            value = value._broadcast_to(self.shape, "assign")
        if value.device != self.device:
            value = value.to(self.device)
        if value.dtype != self.dtype:
            value = value.cast(self.dtype)
        if views.is_view(self) or views.materialize(self):  # a view: write its base's elements
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
            _tensor().realize(*pending)
        self.node = ir.assign(self.node, value.node)
        views.repoint(self)  # the views of this storage read the new value, as in PyTorch
        return self


def _captured_readers(jit, readers: list) -> list:
    """The stale readers a TinyJit step realizes (a snapshot's buffer would be shared by the
    step's memory plan): those the step made, except gradients of tensors that did not ask for
    one (requires_grad None, an input batch: its gradient is a whole extra backward conv). The
    others still read the buffer's newest value."""
    before = {id(t) for t in list(jit.tensors_before)}  # by identity: a WeakSet
    unasked = {id(t.grad) for t in list(ALL_TENSORS) if t.requires_grad is None and t.grad is not None}
    return [t for t in readers if id(t) not in before and id(t) not in unasked]
