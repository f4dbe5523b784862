"""What the bridge cannot run, said before anything runs: `check_graph` finds every ATen op of
an FX graph with no row in aten_table.py and every value of a dtype tinylab lacks, and raises one
error naming each op, its input shapes and dtypes and the user's line (or, with fallback="eager",
returns the unmapped nodes to run in PyTorch). `node_line` reads an FX node's user line.
"""
from __future__ import annotations

import re
from types import MappingProxyType

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


def _reason(node) -> str:
    declines = DECLINES.get(node.target)
    reason = declines(node) if declines else None
    return f" ({reason})" if reason else ""


def _bad_dtype(node) -> str | None:
    values = node.meta.get("val")
    for value in values if isinstance(values, (list, tuple)) else [values]:
        if isinstance(value, torch.Tensor) and value.dtype not in TINYLAB_OF:
            return str(value.dtype).removeprefix("torch.")
    return None


def _as_strided_declines(node) -> str | None:
    """as_strided reads its input's storage; a row can only see values, read in row-major order.
    So it is mapped where that order is the storage's (a contiguous input), and an as_strided
    that re-states a non-contiguous input's own layout becomes an alias of it (in place)."""
    source = node.args[0].meta.get("val")
    if not isinstance(source, torch.Tensor) or source.is_contiguous():
        return None
    size, stride = list(node.args[1]), list(node.args[2])
    offset = node.args[3] if len(node.args) > 3 and node.args[3] is not None else \
        source.storage_offset()
    if (size, stride, offset) == (list(source.shape), list(source.stride()),
                                  source.storage_offset()):
        node.target, node.args, node.kwargs = torch.ops.aten.alias.default, node.args[:1], {}
        return None
    return "as_strided of a non-contiguous tensor (its storage order is not its values' order)"


DECLINES = MappingProxyType({torch.ops.aten.as_strided.default: _as_strided_declines})   # op -> why a row is
# not used for a node, from its metadata (None: the row is right for it)


def check_graph(gm, allow_eager: bool) -> set:
    """The FX nodes to run in PyTorch (unmapped ops, when allowed); raises otherwise."""
    missing, eager = [], set()
    for node in gm.graph.nodes:
        declines = DECLINES.get(node.target)
        reason = declines(node) if declines and node.op == "call_function" else None
        dtype = _bad_dtype(node)
        if dtype is not None:
            where = describe(node) if node.op == "call_function" else f"input {node.name}"
            raise DTypeError(f"tinylab has no {dtype} dtype: {where} (nothing is cast silently;"
                             f" run this model in PyTorch, or in a dtype tinylab computes)")
        if node.op == "call_function" and (lookup(node.target) is None or reason):
            (eager.add if allow_eager else missing.append)(node)
    if missing:
        ops = "\n  ".join(dict.fromkeys(describe(n) + _reason(n) for n in missing))
        raise UnsupportedOpError(
            f"the tinylab backend has no mapping for {len(missing)} ATen op call(s):\n  {ops}\n"
            f"options={{'fallback': 'eager'}} runs them in PyTorch (marked in the inspector)")
    return eager
