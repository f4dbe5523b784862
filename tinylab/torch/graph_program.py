"""One ATen graph (a forward or backward graph from AOTAutograd) compiled for tinylab.

`GraphProgram(gm, kind, options)` checks every node against aten_table.py before anything runs
(an op with no row is an error naming it, its inputs and the user's line, or runs in PyTorch with
fallback="eager"); calling it with the graph's torch inputs evaluates the nodes as tinylab Tensor
ops, each built under its FX node's source line (so the inspector names the model's line),
realizes the outputs and hands them back as torch tensors. From the third call a graph with no
PyTorch nodes replays its captured kernels (TinyJit), unless a trace or DEBUG >= 2 is watching.
"""
from __future__ import annotations

import warnings
from contextlib import nullcontext
from dataclasses import dataclass

import torch

from .. import config
from ..engine import trace as tracing
from ..errors import JitError
from ..frontend.jit import TinyJit
from ..frontend.tensor import Tensor
from .aten_table import lookup
from .unsupported import check_graph, graph_line, node_line, op_name
from .interop import InputSlot, tinylab_dtype, to_tinylab, to_torch
from .symbolic_sizes import SymbolicSizes

aten = torch.ops.aten
# ops that only re-describe their input's memory: an output made of these from a graph input is
# the input's view, built by PyTorch (metadata, no kernel), as AOTAutograd's own aliasing does
VIEW_OPS = frozenset({aten.view.default, aten._unsafe_view.default, aten.t.default, aten.detach.default,
                      aten.alias.default, aten.transpose.int, aten.permute.default, aten.expand.default,
                      aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default,
                      aten.slice.Tensor, aten.select.int, aten.reshape.default})


@dataclass
class Options:
    """What `torch.compile(..., options={...})` may set for the tinylab backend."""
    fallback: str = "error"   # "error": an unmapped op is refused; "eager": it runs in PyTorch
    jit: bool = True          # replay captured kernels from the third call

    @classmethod
    def parse(cls, options: dict | None) -> "Options":
        options = dict(options or {})
        unknown = set(options) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"torch.compile(backend='tinylab'): unknown options {sorted(unknown)}"
                             f"; known: {sorted(cls.__dataclass_fields__)}")
        made = cls(**options)
        if made.fallback not in ("error", "eager"):
            raise ValueError(f"torch.compile(backend='tinylab'): fallback must be 'error' or "
                             f"'eager', got {made.fallback!r}")
        return made


class GraphProgram:
    def __init__(self, gm: torch.fx.GraphModule, kind: str, options: Options):
        self.kind, self.options = kind, options
        self.nodes = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")]
        self.placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.output = next(n for n in gm.graph.nodes if n.op == "output")
        self.eager = check_graph(gm, options.fallback == "eager")   # nodes sent to PyTorch
        # a get_attr node is a constant tensor of the graph module: copied in at the first call
        # (the compiler runs under AOTAutograd's fake-tensor mode, where it cannot be read)
        self.constants = {n: _attribute(gm, n.target) for n in self.nodes if n.op == "get_attr"}
        self.rows = {n: lookup(n.target) for n in self.nodes
                     if n not in self.eager and n not in self.constants}
        self.lines = {n: node_line(n) for n in self.nodes}
        self.labels = {n: op_name(n.target) for n in self.nodes}
        self.forced_line = graph_line(gm, kind)
        self.input_views = _input_views(self.placeholders, self.nodes)
        outputs = self.output.args[0]
        self.outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        # outputs computed by tinylab: tensors that are not views of an input (a size output of
        # a dynamic graph is arithmetic on the inputs' sizes, worked out like a view)
        self.computed = [o for o in self.outputs if isinstance(o, torch.fx.Node)
                         and o not in self.input_views
                         and isinstance(o.meta.get("val"), torch.Tensor)]
        needed = _ancestors(self.computed)
        self.steps = [n for n in self.nodes if n in needed]   # what tinylab evaluates
        self.sizes = SymbolicSizes(self.placeholders)
        # a graph of ints that are not sizes, or whose dims are expressions: one graph per call
        plain = all(isinstance(n.meta.get("val"), torch.Tensor) or i in self.sizes.scalars
                    for i, n in enumerate(self.placeholders))
        self.specialized = not self.sizes.expressible   # sizes as ints: kernels per size
        self.replays = options.jit and not self.eager and plain and bool(self.computed)
        self.calls, self.symbolic_calls = 0, 0
        self._start_over()

    def _start_over(self) -> None:
        """New input buffers and a new capture (a symbolic size outgrew its bound)."""
        self.slots = [InputSlot() for _ in self.placeholders]
        self.jit = TinyJit(self._compute) if self.replays else None

    # ---- one call ----
    def __call__(self, args: list) -> list:
        """The graph's outputs as torch values, for the graph's inputs `args` (torch tensors
        and ints); AOTAutograd's boxed calling convention (it may clear `args`)."""
        args = list(args)
        self.calls += 1
        if self.sizes.any and not self.specialized:
            computed = self._symbolic_call(args)
        else:
            values = [slot.load(a) if isinstance(a, torch.Tensor) else a
                      for slot, a in zip(self.slots, args)]
            computed = self._run(values, {})
        results = dict(zip(self.computed, (to_torch(v) for v in computed)))
        torch_inputs = dict(zip(self.placeholders, args))
        return [o if not isinstance(o, torch.fx.Node) else results[o] if o in results
                else _from_inputs(o, torch_inputs) for o in self.outputs]

    def _run(self, values: list, variables: dict) -> list:
        if self.jit is None or self._watched():
            return self._compute(*values, variables=variables)
        try:
            return self.jit(*values, variables=variables)
        except JitError:   # a graph the JIT cannot replay (a symbolic arange): run it each call
            self.jit = None
            return self._compute(*values, variables=variables)

    def _symbolic_call(self, args: list) -> list:
        """Inputs laid out at the bounds of the symbolic sizes, the sizes bound Variables. If the
        graph cannot take a symbolic size (a reshape that merges one into another dim), it
        falls back to one graph per size, with a warning that says why (never silently)."""
        values = self.sizes.values(args)
        if self.sizes.grow(values):
            self._start_over()
        variables = self.sizes.variables(values)
        inputs = [variables[self.sizes.scalars[i]] if i in self.sizes.scalars else
                  slot.load(a, self.sizes.laid_out(i, a.shape)) if isinstance(a, torch.Tensor)
                  else a for i, (slot, a) in enumerate(zip(self.slots, args))]
        try:
            computed = self._run(inputs, variables)
        except Exception as error:  # noqa: BLE001 - retried with ints: a real error raises again
            if self.symbolic_calls:
                raise
            self.specialized = True
            self._start_over()
            computed = self._run([slot.load(a) if isinstance(a, torch.Tensor) else a
                                  for slot, a in zip(self.slots, args)], {})
            warnings.warn(f"tinylab: the {self.kind} graph ({self.forced_line.split('  ')[0]}) "
                          f"compiles its kernels once per size of {', '.join(self.sizes.names)}: "
                          f"{type(error).__name__}: {str(error).splitlines()[0]}", stacklevel=2)
            return computed
        self.symbolic_calls += 1
        return computed

    def _watched(self) -> bool:
        """A trace or DEBUG >= 2 sees every kernel launch: a replay would hide them."""
        return bool(tracing.active()) or int(config.DEBUG.value) >= 2

    def _compute(self, *inputs, variables: dict) -> list[Tensor]:
        """Evaluate the graph's computed outputs as tinylab values, realized together."""
        if variables:   # inputs laid out at the bounds: shrunk to this call's sizes
            inputs = [self.sizes.view(i, x, variables) for i, x in enumerate(inputs)]
        env = dict(zip(self.placeholders, inputs))
        watched = bool(tracing.active())
        for node in self.steps:
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), env.__getitem__)
            with tracing.attributed_to(self.lines[node], self.labels[node]) if watched \
                    else nullcontext():
                env[node] = self._evaluate(node, args, kwargs)
        values = [_conform(env[o], o) for o in self.computed]
        if values:
            with tracing.attributed_to(self.forced_line) if watched else nullcontext():
                Tensor.realize(*values)
        return values

    def _evaluate(self, node, args, kwargs):
        if node in self.constants:
            if isinstance(self.constants[node], torch.Tensor):
                self.constants[node] = to_tinylab(self.constants[node])
            return self.constants[node]
        if node in self.eager:
            return _in_pytorch(node, args, kwargs)
        return self.rows[node](*args, **kwargs)


def _attribute(gm, target: str):
    for name in target.split("."):
        gm = getattr(gm, name)
    return gm


def _ancestors(nodes: list) -> set:
    """The graph nodes `nodes` depend on, themselves included (placeholders excluded)."""
    found, todo = set(), list(nodes)
    while todo:
        node = todo.pop()
        if node not in found and node.op != "placeholder":
            found.add(node)
            todo += node.all_input_nodes
    return found


def _input_views(placeholders: list, nodes: list) -> set:
    """Nodes that are views of a graph input through VIEW_OPS only (the inputs themselves too)."""
    views = set(placeholders)
    for node in nodes:
        if node.target in VIEW_OPS and node.args and node.args[0] in views:
            views.add(node)
    return views


def _from_inputs(node, torch_inputs: dict):
    """A graph output made from the inputs without a kernel (a view of an input, or arithmetic
    on the inputs' sizes), built in PyTorch from the inputs themselves."""
    if node.op == "placeholder":
        return torch_inputs[node]
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs),
                                         lambda n: _from_inputs(n, torch_inputs))
    return node.target(*args, **kwargs)


def _conform(value, node):
    """A computed output with the dtype the graph declares (PyTorch's promotion decides it)."""
    expected = node.meta.get("val")
    if isinstance(value, Tensor) and isinstance(expected, torch.Tensor):
        dtype = tinylab_dtype(expected.dtype)
        if value.dtype != dtype:
            value = value.cast(dtype)
    return value


def _in_pytorch(node, args, kwargs):
    """Run one node in PyTorch (fallback="eager"): tinylab inputs are realized and copied."""
    def to_torch_value(v):
        return to_torch(v) if isinstance(v, Tensor) else v
    args = [_mapped(a, to_torch_value) for a in args]
    kwargs = {k: _mapped(v, to_torch_value) for k, v in kwargs.items()}
    tracing.note_external(f"aten.{op_name(node.target)}", node_line(node))
    result = node.target(*args, **kwargs)
    return _mapped(result, lambda v: to_tinylab(v) if isinstance(v, torch.Tensor) else v)


def _mapped(value, fn):
    if isinstance(value, (list, tuple)):
        return type(value)(_mapped(v, fn) for v in value)
    return fn(value)

