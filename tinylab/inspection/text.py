"""The model as plain text: `summary_text` (what a notebook's text/plain shows: kernel count,
names, ops, why each boundary exists) and `to_text` (the full report: reads, cost, every
decision, what-if answers, optionally loop IR and source). No timings or ids: same text each run.
"""
from __future__ import annotations

from collections import Counter

from ..schedule.fusion_rules import FUSION_RULES
from ..schedule.items import ItemKind
from .kernel_graph import ops_summary
from .model import shape_text, variables_text
from .passes import pass_lines
from .provenance import annotated_source, kernel_user_lines, user_code

MAX_SUMMARY_KERNELS = 30


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def size_text(nbytes: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(nbytes) < 1024 or unit == "GB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return ""  # pragma: no cover


def _cut_sources(model: dict, kernel: dict) -> str:
    """'<- r_5_4: broadcast_reduce' for the kernel boundaries this kernel reads across."""
    kernels = {k["id"]: k for k in model["kernels"]}
    parts = []
    for link in model["graph"]["links"]:
        if link["target"] == kernel["id"] and link["cut"] and link["source"] in kernels:
            parts.append(f"{kernels[link['source']]['name']}: {link['reason'] or 'buffer'}")
    return ("<- " + "; ".join(dict.fromkeys(parts))) if parts else ""


def _boundary_counts(model: dict, realize: dict) -> Counter:
    return Counter(d["reason"] for d in model["decisions"]
                   if d["realize"] == realize["index"] and not d["merged"])


def elsewhere_lines(model: dict) -> list[str]:
    """'ran in PyTorch: aten.erfinv  ← line 4  y = torch.erfinv(x)', once per op and line."""
    ran = dict.fromkeys((e["where"], e["op"], e["line"]) for e in model.get("ran_elsewhere", ()))
    return [f"ran in {where} (not a tinylab kernel): {op}  ← {user_code(line)}"
            for where, op, line in ran]


def summary_text(model: dict) -> str:
    kernels = {k["id"]: k for k in model["kernels"]}
    count = sum(1 for k in model["kernels"] if k["kind"] == ItemKind.KERNEL)
    lines = [f"tinylab: {plural(len(model['realizes']), 'realize')}, {plural(count, 'kernel')}"]
    shown = 0
    for realize in model["realizes"]:
        mine = [kernels[k] for k in realize["kernels"]]
        lines.append(f"{realize['forced_code']}: {plural(len(mine), 'kernel')}")
        width = max((len(k["name"]) for k in mine), default=0)
        for kernel in mine:
            shown += 1
            if shown > MAX_SUMMARY_KERNELS:
                continue
            bound = f"  {variables_text(kernel)}" if kernel.get("variables") else ""
            line = (f"  {kernel['name']:<{width}}  {shape_text(kernel['shape'])}{bound}  "
                    f"{ops_summary(kernel['ops'], limit=8)}  {_cut_sources(model, kernel)}")
            lines.append(line.rstrip())
            lines += [f"    ← {code}" for code in kernel_user_lines(model, kernel)]
        counts = _boundary_counts(model, realize)
        if counts:
            lines.append("  boundaries: " + ", ".join(f"{reason} ×{n}"
                                                      for reason, n in sorted(counts.items())))
    if shown > MAX_SUMMARY_KERNELS:
        lines.append(f"... and {shown - MAX_SUMMARY_KERNELS} more kernels")
    lines += elsewhere_lines(model)
    if model.get("omitted_realizes"):
        lines.append(f"... and {plural(model['omitted_realizes'], 'more realize')} not shown")
    reasons = sorted({d["reason"] for d in model["decisions"] if not d["merged"]})
    for reason in reasons:
        lines.append(f"{reason}: {FUSION_RULES.explanation(reason)}")
    return "\n".join(lines)


def what_if_lines(realize: dict) -> list[str]:
    lines = []
    for answer in realize.get("what_if", []):
        if "error" in answer:
            lines.append(f"    {answer['title']}: not schedulable ({answer['error']})")
            continue
        if answer.get("compile_only"):
            lines.append(f"    {answer['title']}: the same kernels, compiled differently "
                         "(run it to measure)")
            continue
        if not answer["delta_kernels"] and not answer["new_cut_count"]:
            lines.append(f"    {answer['title']}: no change (the rule does not fire here)")
            continue
        lines.append(f"    {answer['title']}: {plural(answer['kernels'], 'kernel')} "
                     f"({answer['delta_kernels']:+d}), {size_text(answer['bytes'])} moved "
                     f"({'+' if answer['delta_bytes'] >= 0 else '-'}"
                     f"{size_text(abs(answer['delta_bytes']))}), "
                     f"{plural(answer['new_cut_count'], 'new cut')}")
    return lines


def _kernel_block(model: dict, kernel: dict, source: bool) -> list[str]:
    nodes = {n["id"]: n for n in model["nodes"]}
    decisions = {d["id"]: d for d in model["decisions"]}
    reads = ", ".join(f"{nodes[r]['op']}{nodes[r]['shape']}" for r in kernel["reads"]) or "-"
    lines = [f"  [{kernel['position']}] {kernel['name']}  {kernel['kind']} {shape_text(kernel['shape'])}",
             f"      ops: {' '.join(kernel['ops']) or '-'}", f"      reads: {reads}",
             f"      cost: {kernel['flops']} FLOPs, {size_text(kernel['bytes'])} moved"]
    lines += [f"      ← {code}" for code in kernel_user_lines(model, kernel)]
    if kernel.get("variables"):  # a symbolic kernel: the values this launch passed
        lines.append(f"      variables: {variables_text(kernel)}")
    if kernel["opts"]:
        lines.append(f"      actions: {', '.join(kernel['opts'])}")
    if kernel.get("calibration"):
        lines.append(f"      calibration: {kernel['calibration']}")
    if kernel.get("build"):
        lines.append(f"      build: {kernel['build']['text']}")
    for text in dict.fromkeys(decisions[d]["text"] for d in kernel["decisions"]):
        lines.append(f"      {text}")
    program = model["programs"].get(kernel["name"])
    launch = (program or {}).get("launch") or {}
    if launch.get("grid"):   # a GPU kernel: the dimensions the runtime launched, from its record
        lines.append(f"      launch: {launch['text']}")
    if source and program is not None:
        lines.append("      loop IR:")
        lines += ["        " + line for line in program["passes"].get("plan", "").splitlines()]
        language = program["language"]
        lines.append(f"      source ({language}), each line with the ops it computes and "
                     "the user lines that built them:")
        lines += ["        " + line for line in
                  annotated_source(model, kernel["id"], language).splitlines()]
        lines += pass_lines(program)
    return lines


def to_text(model: dict, source: bool = False) -> str:
    kernels = {k["id"]: k for k in model["kernels"]}
    lines = [summary_text(model).splitlines()[0]] + elsewhere_lines(model)
    for realize in model["realizes"]:
        lines.append(f"realize {realize['index']}: forced by {realize['forced_code']}"
                     f"  (scheduler options: {realize['options']})")
        for kernel_id in realize["kernels"]:
            lines += _kernel_block(model, kernels[kernel_id], source)
        if realize.get("what_if"):
            lines.append("  what if:")
            lines += what_if_lines(realize)
    return "\n".join(lines) + "\n"
