"""TinyJit: run a step function normally once, capture its kernels on the second call, and
replay them on later calls with the new inputs' buffers, without running the Python body.

Rules (each enforced with a JitError): inputs must keep their shapes, dtypes and devices;
`.item()` / `.numpy()` / `.tolist()` inside the function raise (the value would be frozen);
Python branches and constants are frozen at capture; the returned tensors are overwritten by
the next call (copy them with .clone() to keep them). Lazy tensors made before the capture
that the step reads (parameters never realized) are realized once, at capture, outside it.
Uses engine/jit.py for capture/replay.
"""
from __future__ import annotations

import functools
import weakref

from .. import config
from ..engine import jit as engine_jit
from ..engine.counters import GlobalCounters
from ..errors import JitError
from ..ir import node as ir
from ..ir.ops import Op
from .tensor import _JIT_CAPTURING, ALL_TENSORS, Tensor


def _tensors_in(value) -> list[Tensor]:
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors_in(v)]
    return []


class TinyJit:
    def __init__(self, fn):
        if not callable(fn):
            raise TypeError(f"TinyJit: needs the step function to capture, got "
                            f"{type(fn).__name__} {fn!r}")
        self.fn = fn
        functools.update_wrapper(self, fn)
        self.reset()

    def reset(self) -> None:
        self.calls = 0
        self.step: engine_jit.CapturedStep | None = None
        self.signature: list = []
        self.result = None
        self.written: list = []   # (weakref to tensor, buffer) refreshed after each replay

    def __get__(self, obj, objtype=None):  # decorating a method binds like a function
        return self if obj is None else functools.partial(self.__call__, obj)

    @property
    def bytes_saved(self) -> int:
        return self.step.bytes_saved if self.step else 0

    @property
    def kernel_count(self) -> int:
        return sum(1 for launch in self.step.launches if launch.runner) if self.step else 0

    def __call__(self, *args, **kwargs):
        inputs = _tensors_in(list(args)) + _tensors_in(kwargs)
        lazy = [t for t in inputs if t.node.op is not Op.BUFFER]
        if lazy:
            Tensor.realize(*lazy)
        if not config.JIT.value:
            return self.fn(*args, **kwargs)
        if self.step is not None:
            return self._replay(inputs)
        self.calls += 1
        if self.calls == 1:
            result = self.fn(*args, **kwargs)
            outs = _tensors_in(result)
            if outs:
                Tensor.realize(*outs)
            return result
        return self._capture(inputs, args, kwargs)

    def _capture(self, inputs, args, kwargs):
        shared_in_schedules = GlobalCounters.bytes_saved
        self.tensors_before = weakref.WeakSet(ALL_TENSORS)  # Tensor.realize reads it
        self.closure_values: dict = {}  # lazy node -> BUFFER node, by realize_closure
        self.lazy_before = [(weakref.ref(t), t.node) for t in list(ALL_TENSORS)
                            if t.node.op not in (Op.BUFFER, Op.CONST)]
        with engine_jit.capture() as launches:
            _JIT_CAPTURING.append(self)
            try:
                result = self.fn(*args, **kwargs)
                outs = _tensors_in(result)
                if outs:
                    Tensor.realize(*outs)
            finally:
                _JIT_CAPTURING.pop()
        self.closure_values, self.lazy_before = {}, []
        if not launches:
            raise JitError("TinyJit captured no kernels: the function must compute and return "
                           "tensors (or assign to them)")
        input_buffers = [t.node.buffer for t in inputs]
        written = {id(launch.buffers[0]) for launch in launches}
        live = {}
        for t in list(ALL_TENSORS):
            if t.node.op is Op.BUFFER:
                live.setdefault(id(t.node.buffer), []).append(t)
        # buffers the step reads but never writes hold data from outside it (a random key that
        # only a lazy graph holds): never shared with the step's intermediates
        read_only = {id(b) for launch in launches for b in launch.buffers} - written
        keep = {id(b) for b in input_buffers} | set(live) | read_only
        step = engine_jit.CapturedStep(launches)
        # bytes saved: buffers shared inside each captured schedule, then across the whole step
        step.bytes_saved = GlobalCounters.bytes_saved - shared_in_schedules + \
            engine_jit.plan_buffers(launches, keep)
        step.prepare(input_buffers)
        self.step, self.result = step, result
        self.signature = [(t.shape, t.dtype, t.device) for t in inputs]
        self.written = [(weakref.ref(t), t.node.buffer) for key in written if key in live
                        for t in live[key]]
        return result

    def realize_closure(self, tensors: list[Tensor]) -> dict:
        """Lazy tensors made before the capture that `tensors` read, as they were then (a
        model's parameters never realized; not a value the step assigns), are computed now,
        outside the capture: replays read their buffers, which an optimizer updates in place,
        instead of recomputing them from their initializers."""
        graph = set(ir.toposort([t.node for t in tensors]))
        closure = [t for t, node in ((ref(), node) for ref, node in self.lazy_before)
                   if t is not None and t.node is node and node in graph]
        if closure:
            self._realize_outside(closure)
        return self.closure_values

    def _realize_outside(self, closure: list[Tensor]) -> None:
        lazy = [t.node for t in closure]
        _JIT_CAPTURING.remove(self)
        try:
            with engine_jit.paused():
                Tensor.realize(*closure)
        finally:
            _JIT_CAPTURING.append(self)
        self.closure_values.update(zip(lazy, (t.node for t in closure)))

    def _replay(self, inputs):
        signature = [(t.shape, t.dtype, t.device) for t in inputs]
        if signature != self.signature:
            raise JitError(_mismatch(self.signature, signature))
        self.step.replay([t.node.buffer for t in inputs])
        for ref, buf in self.written:  # new content: new BUFFER nodes, so no stale graph reuse
            tensor = ref()
            if tensor is not None and tensor.node.op is Op.BUFFER and tensor.node.buffer is buf:
                buf.version += 1
                tensor.node = ir.buffer(buf, tensor.shape, tensor.dtype, tensor.device,
                                        buf.version)
        return self.result


def _mismatch(expected, got) -> str:
    if len(expected) != len(got):
        return (f"TinyJit: the function was captured with {len(expected)} tensor inputs, "
                f"now called with {len(got)}")
    for i, (e, g) in enumerate(zip(expected, got)):
        if e != g:
            return (f"TinyJit: input {i} was captured as shape {e[0]} {e[1].name} on {e[2]}, "
                    f"now it is shape {g[0]} {g[1].name} on {g[2]}; inputs must keep their "
                    f"shapes, dtypes and devices (call .reset() to capture again)")
    return "TinyJit: inputs changed"
