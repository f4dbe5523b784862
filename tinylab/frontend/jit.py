"""TinyJit: run a step function normally once, capture its kernels on the second call, and
replay them on later calls with the new inputs' buffers, without running the Python body.

Rules (each enforced with a JitError): inputs must keep their shapes, dtypes and devices;
`.item()` / `.numpy()` / `.tolist()` inside the function raise (the value would be frozen);
Python branches and constants are frozen at capture; the returned tensors are overwritten by
the next call (copy them with .clone() to keep them). Lazy tensors made before the capture
that the step reads (parameters never realized) are realized once, at capture, outside it.
Uses engine/capture.py for capture/replay.
"""
from __future__ import annotations

import functools
import weakref

from .. import config
from ..engine import capture as engine_capture
from ..engine.counters import GlobalCounters
from ..errors import JitError
from ..ir import node as ir
from ..ir.ops import Op
from ..ir.symbolic import Variable, rebind, unbind_args
from . import views
from .tensor import ALL_TENSORS, Tensor


def _found_in(value, kind) -> list:
    """Every `kind` object in an argument, inside lists, tuples and dict values."""
    if isinstance(value, kind):
        return [value]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _found_in(v, kind)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _found_in(v, kind)]
    return []


def _variables_in(value) -> list[Variable]:
    """Bound Variables passed as arguments (tinygrad's `step(x, v.bind(n))`)."""
    return _found_in(value, Variable)


def _call_values(inputs, args, kwargs) -> tuple[list, dict]:
    """(signature with every shape unbound, {variable name: value}) of one call: the symbolic
    sizes of input shapes and the Variables passed as arguments."""
    var_vals: dict = {}
    signature = [(unbind_args(t.shape, var_vals), t.dtype, t.device) for t in inputs]
    variables = _variables_in(list(args)) + _variables_in(kwargs)
    for v in variables:
        if not v.is_plain or not v.values:
            raise JitError(f"TinyJit: Variable argument {v!r} must be a bound variable "
                           f"(Variable(name, min, max).bind(value))")
        unbind_args(v, var_vals)
    signature.append(tuple(v.unbound() for v in variables))
    return signature, var_vals


def _tensors_in(value) -> list[Tensor]:
    return _found_in(value, Tensor)


def _copied_views(value):
    """The arguments with each view of realized storage replaced by a realized copy: a step reads
    its inputs' own buffers, which each replay swaps for the next call's."""
    if isinstance(value, Tensor):
        return Tensor(ir.contiguous(value.node)).realize() if value.node.op is not Op.BUFFER \
            else value
    if isinstance(value, list):
        return [_copied_views(v) for v in value]
    if isinstance(value, tuple):
        items = [_copied_views(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, dict):
        return {k: _copied_views(v) for k, v in value.items()}
    return value


def _run_step(fn, args, kwargs):
    """Call the step and realize what it returns together with the assigns it left pending
    (`cache.assign(cache + x)` whose tensor nothing returned realizes): a step is the unit that
    is captured and replayed, so its writes land in it, as in tinygrad."""
    before = {id(t): t.node for t in list(ALL_TENSORS) if t.node.op is Op.ASSIGN}
    result = fn(*args, **kwargs)
    pending = [t for t in list(ALL_TENSORS)
               if t.node.op is Op.ASSIGN and before.get(id(t)) is not t.node]
    outs = _tensors_in(result) + pending
    for t in outs:  # a returned view gets a buffer of its own, which each replay rewrites
        if views.is_view(t):
            t.node = ir.contiguous(t.node)
    if outs:
        Tensor.realize(*outs)
    return result


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
        self.step: engine_capture.CapturedStep | None = None
        self.signature: list = []
        self.var_vals: dict = {}  # symbolic sizes' values at capture
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
        if any(t.node.op is not Op.BUFFER for t in inputs):  # views of realized storage
            args, kwargs = _copied_views(args), _copied_views(kwargs)
            inputs = _tensors_in(list(args)) + _tensors_in(kwargs)
        if not config.JIT.value:
            return self.fn(*args, **kwargs)
        if self.step is not None:
            return self._replay(inputs, args, kwargs)
        self.calls += 1
        if self.calls == 1:
            return _run_step(self.fn, args, kwargs)
        return self._capture(inputs, args, kwargs)

    def _capture(self, inputs, args, kwargs):
        shared_in_schedules = GlobalCounters.bytes_saved
        self.tensors_before = weakref.WeakSet(ALL_TENSORS)  # Tensor.realize reads it
        self.closure_values: dict = {}  # lazy node -> BUFFER node, by realize_closure
        self.lazy_before = [(weakref.ref(t), t.node) for t in list(ALL_TENSORS)
                            if t.node.op not in (Op.BUFFER, Op.CONST)]
        with engine_capture.capture(self) as launches:
            result = _run_step(self.fn, args, kwargs)
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
        step = engine_capture.CapturedStep(launches)
        # bytes saved: buffers shared inside each captured schedule, then across the whole step
        step.bytes_saved = GlobalCounters.bytes_saved - shared_in_schedules + \
            engine_capture.plan_buffers(launches, keep)
        step.prepare(input_buffers)
        self.step, self.result = step, result
        self.signature, self.var_vals = _call_values(inputs, args, kwargs)
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
        with engine_capture.paused():   # no capturer meanwhile: Tensor.realize computes them once
            Tensor.realize(*closure)
        self.closure_values.update(zip(lazy, (t.node for t in closure)))

    def _replay(self, inputs, args=(), kwargs=None):
        signature, var_vals = _call_values(inputs, args, kwargs or {})
        if signature != self.signature:
            raise JitError(_mismatch(self.signature, signature))
        self.step.replay([t.node.buffer for t in inputs], var_vals)
        values = {**self.var_vals, **var_vals}
        for ref, buf in self.written:  # new content: new BUFFER nodes, so no stale graph reuse
            tensor = ref()
            if tensor is not None and tensor.node.op is Op.BUFFER and tensor.node.buffer is buf:
                buf.version += 1  # a symbolic output takes this call's values in its shape
                tensor.node = ir.buffer(buf, rebind(tensor.shape, values), tensor.dtype,
                                        tensor.device, buf.version)
        return self.result


def _mismatch(expected, got) -> str:
    if len(expected) != len(got):
        return (f"TinyJit: the function was captured with {len(expected) - 1} tensor inputs, "
                f"now called with {len(got) - 1}")
    if expected[-1] != got[-1]:
        return (f"TinyJit: the function was captured with Variable arguments {list(expected[-1])}, "
                f"now called with {list(got[-1])}")
    for i, (e, g) in enumerate(zip(expected[:-1], got[:-1])):
        if e != g:
            return (f"TinyJit: input {i} was captured as shape {e[0]} {e[1].name} on {e[2]}, "
                    f"now it is shape {g[0]} {g[1].name} on {g[2]}; inputs must keep their "
                    f"shapes, dtypes and devices (call .reset() to capture again)")
    return "TinyJit: inputs changed"
