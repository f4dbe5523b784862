"""The graph collapsed by kernel: one box per kernel (labelled with its fused ops), one per input
buffer and one per line that forced a realize; links between them are the kernel boundaries,
labelled with the reasons of their cuts. `collapsed_graph(model)` gives boxes + links (model.py
stores them for the widget); `to_dot(model)` writes Graphviz DOT, collapsed or expanded to ops.
"""
from __future__ import annotations

COLORS = {"kernel": "#dbeafe", "copy": "#fef3c7", "input": "#f1f5f9", "output": "#dcfce7",
          "op": "#ffffff", "view": "#f8fafc"}
# nodes a tinylab.func transform made (frontend/traced.TRANSFORM_OF): fill colour, legend order
TRANSFORM_COLORS = {"jvp tangent": "#fde68a", "vjp cotangent": "#fbcfe8",
                    "vmap batch axis": "#ddd6fe"}
CUT_COLOR, MERGE_COLOR, PLAIN_COLOR = "#dc2626", "#94a3b8", "#475569"


def shape_text(shape: list) -> str:
    """[4, 5] as a list prints; a symbolic size without quotes: [4, <i[1-8]>]."""
    return "[" + ", ".join(str(s) for s in shape) + "]"


def ops_summary(ops: list[str], limit: int = 5) -> str:
    """'MUL REDUCE_SUM' or 'EXP2×2 MUL … +3': repeats folded, long lists cut short."""
    runs: list[list] = []
    for op in ops:
        if runs and runs[-1][0] == op:
            runs[-1][1] += 1
        else:
            runs.append([op, 1])
    words = [op if count == 1 else f"{op}×{count}" for op, count in runs]
    if len(words) > limit:
        words = words[:limit] + [f"+{len(words) - limit} more"]
    return " ".join(words) or "(copy)"


def collapsed_graph(model: dict) -> dict:
    boxes, links = [], []
    nodes = {n["id"]: n for n in model["nodes"]}
    decisions = {d["id"]: d for d in model["decisions"]}
    producer: dict[str, str] = {}   # node id -> kernel that wrote it
    inputs: dict[str, dict] = {}
    for kernel in model["kernels"]:
        box = {"id": kernel["id"], "kind": kernel["kind"], "label": kernel["name"],
               "detail": ops_summary(kernel["ops"]), "shape": kernel["shape"]}
        made = _transform(kernel, nodes)
        boxes.append({**box, "transform": made} if made else box)
        for read in kernel["reads"]:
            source = producer.get(read)
            if source is None:
                if read not in inputs:
                    node = nodes[read]
                    inputs[read] = {"id": read, "kind": "input", "label": "input",
                                    "detail": f"{node['dtype']}{shape_text(node['shape'])}",
                                    "shape": node["shape"]}
                    boxes.append(inputs[read])
                links.append({"source": read, "target": kernel["id"], "cut": False,
                              "reason": "", "decisions": []})
                continue
            cuts = [decisions[d] for d in kernel["decisions"]
                    if decisions[d]["producer"] == read and not decisions[d]["merged"]]
            reasons = sorted({d["reason"] for d in cuts})
            links.append({"source": source, "target": kernel["id"], "cut": True,
                          "reason": ", ".join(reasons), "decisions": [d["id"] for d in cuts]})
        if kernel["output"] is not None:
            producer[kernel["output"]] = kernel["id"]
    for realize in model["realizes"]:
        mine = set(realize["kernels"])
        box_id = f"r{realize['index']}"
        boxes.append({"id": box_id, "kind": "output", "label": realize["forced_code"],
                      "detail": "forced the realize", "shape": []})
        for output in realize["outputs"]:
            kernel = producer.get(output)
            if kernel is None or kernel not in mine:
                continue
            requested = [d["id"] for d in model["decisions"]
                         if d["producer"] == output and d["consumer"] is None
                         and d["realize"] == realize["index"]]
            links.append({"source": kernel, "target": box_id, "cut": True,
                          "reason": "requested", "decisions": requested})
    return {"boxes": boxes, "links": links}


def _transform(kernel: dict, nodes: dict) -> str:
    """The transform that made most of a kernel's fused nodes ("" if none did)."""
    made = [nodes[n].get("transform", "") for n in kernel.get("fused", ()) if n in nodes]
    made = [m for m in made if m]
    return max(TRANSFORM_COLORS, key=made.count) if made else ""


def fill_of(kind: str, transform: str = "") -> str:
    return TRANSFORM_COLORS.get(transform, COLORS[kind])


def _quote(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attributes(**values) -> str:
    return "[" + ", ".join(f"{key}={_quote(value)}" for key, value in values.items()) + "]"


def _box_line(box: dict) -> str:
    shape = {"input": "ellipse", "output": "note"}.get(box["kind"], "box")
    label = f"{box['label']}\n{box['detail']}" if box["detail"] else box["label"]
    return (f"  {_quote(box['id'])} "
            + _attributes(label=label, shape=shape,
                             fillcolor=fill_of(box["kind"], box.get("transform", ""))) + ";")


def _link_line(source: str, target: str, link: dict) -> str:
    color = CUT_COLOR if link["cut"] and link["reason"] != "requested" else PLAIN_COLOR
    values = {"color": color, "fontcolor": color}
    if link["reason"]:
        values["label"] = link["reason"]
    return f"  {_quote(source)} -> {_quote(target)} " + _attributes(**values) + ";"


HEADER = ["digraph tinylab {", '  graph [rankdir="TB", nodesep="0.3", ranksep="0.45"];',
          '  node [style="rounded,filled", fontname="Helvetica", fontsize="10"];',
          '  edge [fontname="Helvetica", fontsize="9"];']


def to_dot(model: dict, expand: bool = False) -> str:
    """Graphviz DOT of the collapsed graph; `expand=True` draws each kernel as a cluster of its
    ops (a node recomputed in two kernels appears in both)."""
    graph = model["graph"]
    lines = list(HEADER)
    if not expand:
        lines += [_box_line(box) for box in graph["boxes"]]
        lines += [_link_line(link["source"], link["target"], link) for link in graph["links"]]
        return "\n".join(lines + ["}"]) + "\n"
    return "\n".join(lines + _expanded_lines(model) + ["}"]) + "\n"


def _expanded_lines(model: dict) -> list[str]:
    nodes = {n["id"]: n for n in model["nodes"]}
    decisions = {d["id"]: d for d in model["decisions"]}
    lines, written = [], {}   # node id -> instance id of the kernel that wrote it
    for box in model["graph"]["boxes"]:
        if box["kind"] in ("input", "output"):
            lines.append(_box_line(box))
    for kernel in model["kernels"]:
        lines.append(f"  subgraph {_quote('cluster_' + kernel['id'])} {{")
        lines.append(f"    label={_quote(kernel['name'])}; style=\"rounded\"; color=\"#2563eb\";")
        for node_id in kernel["fused"]:
            node = nodes[node_id]
            text = f"{node['op']} {node['arg']}".strip() + f"\n{node['dtype']}{shape_text(node['shape'])}"
            fill = fill_of("view" if node["role"] == "view" else "op", node.get("transform", ""))
            lines.append(f"    {_quote(kernel['id'] + ':' + node_id)} "
                         + _attributes(label=text, shape="box", fillcolor=fill) + ";")
        lines.append("  }")
        fused = set(kernel["fused"])
        for source, target, decision in kernel["edges"]:
            origin = f"{kernel['id']}:{source}" if source in fused else written.get(source, source)
            link = {"cut": source not in fused, "reason": ""}
            if decision is not None:
                link["reason"] = decisions[decision]["reason"]
                link["cut"] = not decisions[decision]["merged"]
            lines.append(_link_line(origin, f"{kernel['id']}:{target}", link))
        if kernel["output"] is not None:
            written[kernel["output"]] = f"{kernel['id']}:{kernel['output']}"
    return lines
