"""What the bridge cannot run, said before anything runs: `check_graph` finds every ATen op of
an FX graph with no row in aten_table.py and every value of a dtype tinylab lacks, and raises one
error naming each op, its input shapes and dtypes and the user's line (or, with fallback="eager",
returns the unmapped nodes to run in PyTorch). `node_line` reads an FX node's user line.
"""
from __future__ import annotations

import re

import torch

from ..errors import DTypeError, UnsupportedOpError
from .aten_table import lookup
from .interop import TINYLAB_OF

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


def node_line(node) -> str | None:
    """'file.py:12  code' of the innermost user frame that made an FX node (its stack trace;
    Dynamo keeps the model's frames, not torch's), or None when the graph kept none."""
    trace = node.meta.get("stack_trace")
    frames = _FRAME.findall(trace) if trace else []
    if not frames:
        return None
    path, number, _, code = frames[-1]
    return f"{path.rsplit('/', 1)[-1]}:{number}  {code.strip()}"


def graph_line(gm, kind: str) -> str:
    """'model.py:8  forward (compiled, backward graph)': where a graph's realize is attributed
    to (the outermost user frame of its first node with a stack trace)."""
    for node in gm.graph.nodes:
        frames = _FRAME.findall(node.meta.get("stack_trace") or "")
        if frames:
            path, number, function, _ = frames[0]
            return f"{path.rsplit('/', 1)[-1]}:{number}  {function} (compiled, {kind} graph)"
    return f"?  torch.compile {kind} graph"


def op_name(target) -> str:
    """'convolution' for aten.convolution.default, 'add.Tensor' for another overload; a Python
    function's own name (getitem)."""
    if isinstance(target, torch._ops.OpOverload):
        packet = target.overloadpacket.__name__
        return packet if target._overloadname == "default" else f"{packet}.{target._overloadname}"
    return getattr(target, "__name__", str(target))


def _value_text(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value_text(v) for v in value) + "]"
    return repr(value)


def describe(node) -> str:
    """'aten.foo(float32[2, 3], 4) at model.py:12  y = foo(x)': an op with its inputs."""
    values = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: n.meta.get("val"))
    inputs = ", ".join([_value_text(v) for v in values[0]] +
                       [f"{k}={_value_text(v)}" for k, v in values[1].items()])
    line = node_line(node)
    return f"aten.{op_name(node.target)}({inputs})" + (f" at {line}" if line else "")


def _bad_dtype(node) -> str | None:
    values = node.meta.get("val")
    for value in values if isinstance(values, (list, tuple)) else [values]:
        if isinstance(value, torch.Tensor) and value.dtype not in TINYLAB_OF:
            return str(value.dtype).removeprefix("torch.")
    return None


def check_graph(gm, allow_eager: bool) -> set:
    """The FX nodes to run in PyTorch (unmapped ops, when allowed); raises otherwise."""
    missing, eager = [], set()
    for node in gm.graph.nodes:
        dtype = _bad_dtype(node)
        if dtype is not None:
            where = describe(node) if node.op == "call_function" else f"input {node.name}"
            raise DTypeError(f"tinylab has no {dtype} dtype: {where} (nothing is cast silently;"
                             f" run this model in PyTorch, or in a dtype tinylab computes)")
        if node.op == "call_function" and lookup(node.target) is None:
            (eager.add if allow_eager else missing.append)(node)
    if missing:
        ops = "\n  ".join(dict.fromkeys(describe(n) for n in missing))
        raise UnsupportedOpError(
            f"the tinylab backend has no mapping for {len(missing)} ATen op call(s):\n  {ops}\n"
            f"options={{'fallback': 'eager'}} runs them in PyTorch (marked in the inspector)")
    return eager
