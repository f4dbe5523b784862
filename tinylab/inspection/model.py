"""Trace -> inspection model: plain JSON-ready data (nodes, kernels, fusion decisions, the graph
collapsed by kernel, what-if counterfactuals). Every renderer in inspection/ and the widgets read
this model, never the Trace. Called by `build_model(trace)`; deterministic for the same program,
timings only with `timings=True`.
"""
from __future__ import annotations

from ..engine import trace as tracing
from ..frontend.traced import TRANSFORM_OF
from ..ir.ops import MOVEMENT, Op
from ..ir.graph_printer import format_arg
from ..schedule.fusion_rules import FUSION_RULES
from ..schedule.graph import graph_order
from ..schedule.items import ItemKind
from .kernel_graph import collapsed_graph, shape_text  # noqa: F401 (shape_text: text.py, html.py)
from .memory_timeline import realize_memory
from .roofline import add_roofline
from .provenance import kernel_ast_nodes, user_location
from .sources import program_entry
from .what_if import what_if

HIDDEN_OPS = (Op.CONST,)  # folded into the kernels that use them: not drawn


MAX_REALIZES = 50        # a long training cell: the first realizes tell the story
MAX_RENDERED = 200       # distinct kernels whose other-backend source is rendered
MAX_WHAT_IF = 20         # realizes re-scheduled for the what-if answers


def build_model(trace, timings: bool = True, backends: tuple = (), counterfactuals: bool = True,
                max_realizes: int = MAX_REALIZES) -> dict:
    """The whole trace as data. `backends` adds source rendered for other devices ("CL",
    "CUDA"); `counterfactuals` adds the what-if schedules."""
    builder = _Builder(timings)
    realizes = trace.realizes[:max_realizes]
    for index, record in enumerate(realizes):
        builder.add_realize(index, record)
    model = {"version": 1, "realizes": builder.realizes, "nodes": builder.nodes,
             "kernels": builder.kernels, "decisions": builder.decisions,
             "programs": {}, "timings": timings,
             "omitted_realizes": len(trace.realizes) - len(realizes)}
    for kernel, record in zip(builder.kernels, builder.kernel_records):
        if record is not None and kernel["name"] not in model["programs"]:
            rendered = len(model["programs"]) < MAX_RENDERED
            model["programs"][kernel["name"]] = program_entry(record, backends if rendered else ())
    if trace.external:   # ops that ran outside tinylab (a PyTorch node sent to eager fallback)
        model["ran_elsewhere"] = [{"op": name, "line": line, "where": "PyTorch"}
                                  for name, line in trace.external]
    model["graph"] = collapsed_graph(model)
    add_roofline(model)
    if counterfactuals:
        for index, record in enumerate(realizes[:MAX_WHAT_IF]):
            model["realizes"][index]["what_if"] = what_if(record, builder.node_ids)
    return model


class _Builder:
    def __init__(self, timings: bool):
        self.timings = timings
        self.realizes: list = []
        self.nodes: list = []
        self.kernels: list = []
        self.kernel_records: list = []
        self.decisions: list = []
        self.node_ids: dict = {}     # lazy node -> "n<i>"
        self.producer: dict = {}     # lazy node -> id of the kernel that wrote it

    def node_id(self, node, record, realize: int) -> str:
        if node not in self.node_ids:
            self.node_ids[node] = f"n{len(self.nodes)}"
            self.nodes.append(_node_entry(node, self.node_ids[node], record, realize))
        return self.node_ids[node]

    def add_realize(self, index: int, record) -> None:
        schedule = record.schedule
        for node in graph_order(list(record.outputs), schedule.leaves):
            if node.op not in HIDDEN_OPS:
                self.node_id(node, record, index)
        runs = {k.schedule_index: k for k in record.kernels}
        decision_ids = self.add_decisions(index, schedule)
        kernel_ids = []
        for position, item in enumerate(schedule.items):
            kernel_ids.append(self.add_kernel(index, position, item, runs.get(position),
                                              decision_ids, record))
        outputs = [self.node_ids[n] for n in record.outputs if n in self.node_ids]
        self.realizes.append({"index": index, "forced_by": record.forced_by,
                              "forced_code": forced_code(record.forced_by),
                              "outputs": outputs, "kernels": kernel_ids,
                              "options": _options_text(schedule.options),
                              "memory": realize_memory(record, kernel_ids, self.node_ids,
                                                       f"m{index}.")})

    def add_decisions(self, realize: int, schedule) -> dict:
        ids = {}
        for decision in schedule.decisions:
            ids[id(decision)] = f"d{len(self.decisions)}"
            consumer = decision.consumer
            self.decisions.append({
                "id": ids[id(decision)], "realize": realize,
                "producer": self.node_ids.get(decision.producer),
                "consumer": self.node_ids.get(consumer) if consumer is not None else None,
                "merged": decision.merged, "reason": decision.reason.value,
                "explanation": FUSION_RULES.explanation(decision.reason),
                "detail": decision.evidence.get("detail", ""),
                "text": decision.describe(), "edge": edge_text(decision),
                "kernels": [], "from_kernel": None})
        return ids

    def add_kernel(self, realize: int, position: int, item, run, decision_ids, record) -> str:
        kernel_id = f"k{len(self.kernels)}"
        fused = _in_order(item.fused, self.node_ids)
        for node in fused:
            self.nodes[_index(self.node_ids[node])]["kernels"].append(kernel_id)
        mine = list(dict.fromkeys(decision_ids[id(d)] for d in item.decisions
                                  if id(d) in decision_ids))
        for decision_id in mine:
            self.decisions[_index(decision_id)]["kernels"].append(kernel_id)
        entry = {"id": kernel_id, "realize": realize, "position": position, "kind": item.kind,
                 "name": run.name if run is not None else _unrun_name(item),
                 "device": run.device if run is not None else str(item.slots[0].device),
                 "shape": json_shape(item.full_shape if item.kind is ItemKind.KERNEL
                                     else item.output.shape),
                 "output": self.node_ids.get(item.output), "ops": _op_names(fused),
                 "fused": [self.node_ids[n] for n in fused],
                 "reads": sorted((self.node_ids[n] for n in item.reads if n in self.node_ids),
                                 key=_index),
                 "decisions": mine, "edges": self.kernel_edges(fused, item, decision_ids, record),
                 "bytes_slots": sum(slot.nbytes for slot in item.slots)}
        entry.update(_cost(run, self.timings))
        values = run.var_vals if run is not None else item.var_vals
        if values:  # a symbolic kernel: the values this launch passed
            entry["variables"] = dict(values)
        if run is not None:   # per kernel AST node, the graph nodes it computes (provenance)
            entry["ast_nodes"] = kernel_ast_nodes(item, run.ast, self.node_ids)
        self.producer[item.output] = kernel_id
        for decision in item.decisions:
            if not decision.merged and decision.producer in self.producer:
                self.decisions[_index(decision_ids[id(decision)])]["from_kernel"] = \
                    self.producer[decision.producer]
        self.kernels.append(entry)
        self.kernel_records.append(run)
        return kernel_id

    def kernel_edges(self, fused, item, decision_ids, record) -> list:
        """[source node, target node, decision id or None] for every edge into a fused node."""
        by_pair = {(d.producer, d.consumer): decision_ids.get(id(d))
                   for d in record.schedule.decisions}
        edges = []
        for consumer in fused:
            for producer in dict.fromkeys(consumer.src):
                if producer.op in HIDDEN_OPS or producer not in self.node_ids:
                    continue
                edges.append([self.node_ids[producer], self.node_ids[consumer],
                              by_pair.get((producer, consumer))])
        return edges


def _index(identifier: str) -> int:
    return int(identifier[1:])


def _in_order(nodes, node_ids: dict) -> list:
    """Nodes in graph order (sets of nodes iterate in memory order)."""
    return sorted((n for n in nodes if n in node_ids), key=lambda n: _index(node_ids[n]))


def _node_entry(node, node_id: str, record, realize: int) -> dict:
    leaf = node.op is Op.BUFFER or node in record.schedule.leaves
    role = "input" if leaf else "view" if node.op in MOVEMENT else "op"
    made = TRANSFORM_OF.get(node)  # a tinylab.func transform's node: its colour in the graph
    entry = {"id": node_id, "op": node.op.name, "shape": json_shape(node.shape),
            "dtype": node.dtype.name, "arg": format_arg(node) if node.op is not Op.BUFFER else "",
            "line": record.source_lines.get(node, ""), "role": role, "realize": realize,
            "kernels": []}
    came_from = tracing.origin(node)  # the ATen op of a compiled PyTorch model that made it
    if came_from:
        entry["origin"] = came_from
    return entry if made is None else {**entry, "transform": made}


def json_shape(shape) -> list:
    """A shape as JSON: ints, and a symbolic size as its text (`<i[1-64]=5>`)."""
    return [s if isinstance(s, int) else repr(s) for s in shape]


def variables_text(kernel: dict) -> str:
    """'i=5' for a launch of a symbolic kernel (its bound values), '' otherwise."""
    return " ".join(f"{name}={value}" for name, value in sorted(kernel.get("variables", {}).items()))


def _op_names(fused) -> list[str]:
    return [n.op.name for n in fused if n.op not in MOVEMENT and n.op is not Op.DETACH]


def _unrun_name(item) -> str:
    return str(item.kind)   # "kernel" or "copy"


def _options_text(options) -> str:
    changed = [f"{name}={value}" for name, value in vars(options).items()
               if value != getattr(type(options)(), name)]
    return ", ".join(changed) or "default"


def _cost(run, timings: bool) -> dict:
    if run is None:
        return {"flops": 0, "bytes": 0, "opts": [], "language": ""}
    cost = {"flops": run.flops, "bytes": run.bytes_moved, "opts": [str(o) for o in run.opts],
            "language": run.language}
    if run.calibration:  # a calibrated CPU target: what it measured (kept in the record)
        cost["calibration"] = run.calibration
    if timings:
        cost.update(compile_s=run.compile_s, run_s=run.run_s, gflops=run.gflops, gbps=run.gbps,
                    cache_hit=run.cache_hit)
        build = run.compiled.build if run.compiled is not None else None
        if build is not None:  # how it was built, as its compile record says
            cost["build"] = {"how": build.how, "tier": build.tier,
                             "unit_kernels": build.unit_kernels, "plan_s": build.plan_s,
                             "render_s": build.render_s, "compile_s": build.compile_s,
                             "load_s": build.load_s, "text": build.describe()}
    return cost


def edge_text(decision) -> str:
    """'MUL[8, 8, 8] -> REDUCE_SUM[8, 8, 1]' (or '-> output' for a requested value)."""
    producer = f"{decision.producer.op.name}{list(decision.producer.shape)}"
    consumer = decision.consumer
    return f"{producer} -> " + (f"{consumer.op.name}{list(consumer.shape)}"
                                if consumer is not None else "output")


def forced_code(forced_by: str) -> str:
    """'y.numpy()  (line 12)' from 'file.py:12  y.numpy()'; notebook cells lose their temp
    file name, scripts keep it, so the text is the same on every run."""
    code = forced_by.partition("  ")[2]
    return f"{code}  ({user_location(forced_by)})" if code else forced_by
