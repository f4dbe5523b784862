"""Print an IR graph as a small program, one line per node, sources before users:

    %0 = BUFFER                       : float32[3,3] CPU
    %1 = RESHAPE     %0 (1,3,3)       : float32[1,3,3]
    %2 = REDUCE_SUM  %1 axes=(2,)     : float32[1,3,1]

Used by DEBUG=5, the verifier's error messages, golden-file tests and the inspector.
"""
from __future__ import annotations

from .node import Node, toposort
from .ops import Op


def format_arg(node: Node) -> str:
    op, arg = node.op, node.arg
    if arg is None:
        return ""
    if op is Op.CONST:
        return repr(arg)
    if op is Op.BUFFER:
        version = f" v{arg[1]}" if arg[1] else ""
        return f"<{arg[0].label}{version}>"
    if op in (Op.REDUCE_SUM, Op.REDUCE_MAX, Op.FLIP):
        return f"axes={arg}"
    if op is Op.COPY:
        return f"to={arg}"
    if op is Op.CONTIGUOUS:
        return ""
    if op in (Op.LOAD, Op.STORE):
        return f"buf{arg[0]} {arg[1]}"
    if op is Op.VALID:
        return str(arg)
    return str(tuple(arg)) if isinstance(arg, tuple) else str(arg)


def format_node(node: Node, names: dict[Node, str]) -> str:
    srcs = " ".join(names.get(s, "?") for s in node.src)
    body = f"{node.op.name:<11} {srcs} {format_arg(node)}".rstrip()
    shape = ",".join(map(str, node.shape))
    device = f" {node.device}" if node.op in (Op.BUFFER, Op.COPY) and node.device else ""
    return f"{body:<48} : {node.dtype.name}[{shape}]{device}"


def print_graph(roots, names: dict | None = None) -> str:
    """The whole graph under `roots` as text; `names` may pre-name nodes (e.g. inputs)."""
    roots = [roots] if isinstance(roots, Node) else list(roots)
    names = dict(names or {})
    lines = []
    for node in toposort(roots):
        if node in names:
            continue
        names[node] = f"%{len(lines)}"
        lines.append(f"{names[node]:<4} = {format_node(node, names)}")
    return "\n".join(lines)
