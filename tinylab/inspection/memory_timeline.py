"""Memory of one realize as data: each buffer's lifetime across the kernel order, which buffers the
memory planner (schedule/memory.py) made share storage, and the bytes allocated with and without
it. `realize_memory(record, kernel_ids, node_ids)` is called by model.build_model; `memory_svg`
draws the timeline for the static HTML (the widget draws its own, clickable, from the same data).
"""
from __future__ import annotations

from html import escape

from ..engine.trace import KernelNames
from .roofline import add_roofline

MAX_LARGEST = 8        # buffers listed as "largest", each clickable to its kernels
MAX_ROWS = 60          # timeline rows drawn (the largest buffers when there are more)
ROLE_COLORS = {"input": "#94a3b8", "assigned": "#a78bfa", "output": "#2563eb"}
SHARED_COLORS = ("#f59e0b", "#10b981", "#ef4444", "#06b6d4", "#d946ef", "#84cc16", "#f97316")
PLAIN_INTERMEDIATE = "#64748b"


def realize_memory(record, kernel_ids: list, node_ids: dict, prefix: str) -> dict:
    """The buffers of one traced realize (`record`, an engine RealizeRecord) in kernel order.
    `kernel_ids` are the model's ids of the schedule's items by position; buffer ids are
    `prefix` + index. Lifetimes are item positions (first and last use; a requested output
    lives to the end); sharing is the plan the engine recorded while it allocated."""
    schedule = record.schedule
    order, uses = _slots_in_order(schedule.items)
    requested = {id(slot) for slot in schedule.outputs.values()}
    ids = {id(slot): f"{prefix}{index}" for index, slot in enumerate(order)}
    plan = {id(slot): id(rep) for slot, rep in record.memory_plan.items()}
    steps = len(schedule.items)
    buffers = []
    for slot in order:
        writers = [kernel_ids[p] for p, position in uses[id(slot)] if position == 0]
        readers = [kernel_ids[p] for p, position in uses[id(slot)] if position > 0]
        positions = [p for p, _ in uses[id(slot)]]
        role = _role(slot, bool(writers), id(slot) in requested)
        first, last = min(positions), max(positions)
        if role in ("input", "assigned"):
            first, last = 0, steps - 1      # existed before the realize and after it
        elif role == "output":
            last = steps - 1                # the caller keeps it
        buffers.append({"id": ids[id(slot)], "node": node_ids.get(slot.node),
                        "label": f"{slot.node.op.name} {slot.dtype.name}{list(slot.shape)}",
                        "shape": list(slot.shape), "dtype": slot.dtype.name,
                        "bytes": slot.nbytes, "role": role, "first": first, "last": last,
                        "writers": list(dict.fromkeys(writers)),
                        "readers": list(dict.fromkeys(readers)),
                        "storage": ids[plan.get(id(slot), id(slot))]})
    _mark_sharing(buffers)
    return {"steps": steps, "kernels": list(kernel_ids), "buffers": buffers,
            **_totals(buffers, steps),
            "largest": [b["id"] for b in sorted(buffers, key=lambda b: (-b["bytes"], b["id"]))
                        if b["role"] != "input"][:MAX_LARGEST]}


def _slots_in_order(items) -> tuple[list, dict]:
    """Distinct slots in order of first use, and id(slot) -> [(item position, argument index)]."""
    order, uses = [], {}
    for position, item in enumerate(items):
        for argument, slot in enumerate(item.slots):
            if id(slot) not in uses:
                uses[id(slot)] = []
                order.append(slot)
            uses[id(slot)].append((position, argument))
    return order, uses


def _role(slot, written: bool, requested: bool) -> str:
    if slot.existing is not None:
        return "assigned" if written else "input"
    return "output" if requested else "intermediate"


def _mark_sharing(buffers: list) -> None:
    """Each buffer gets the others that share its storage (empty when it has its own)."""
    groups: dict = {}
    for buffer in buffers:
        groups.setdefault(buffer["storage"], []).append(buffer["id"])
    for buffer in buffers:
        buffer["shares_with"] = [b for b in groups[buffer["storage"]] if b != buffer["id"]]


def _totals(buffers: list, steps: int) -> dict:
    """Bytes this realize allocates (inputs existed before it): every new buffer on its own,
    with the planner's sharing, and the most that is live at any one kernel (the floor any
    planner could reach). The engine allocates a realize's buffers before its first kernel,
    so the allocation is also the peak."""
    new = [b for b in buffers if b["role"] in ("output", "intermediate")]
    storages = {b["storage"]: b["bytes"] for b in new if b["storage"] == b["id"]}
    change = [0] * (steps + 1)          # bytes that become live (+) or dead (-) at each kernel
    for buffer in new:
        change[buffer["first"]] += buffer["bytes"]
        change[buffer["last"] + 1] -= buffer["bytes"]
    live, peak = 0, 0
    for delta in change:
        live += delta
        peak = max(peak, live)
    return {"bytes_without_plan": sum(b["bytes"] for b in new),
            "bytes_with_plan": sum(storages.values()),
            "peak_live": peak,
            "input_bytes": sum(b["bytes"] for b in buffers if b["role"] in ("input", "assigned"))}


def buffer_color(buffer: dict, palette: dict) -> str:
    """Role colours; buffers that share storage get one colour per storage (`palette`)."""
    if buffer["shares_with"]:
        if buffer["storage"] not in palette:
            palette[buffer["storage"]] = SHARED_COLORS[len(palette) % len(SHARED_COLORS)]
        return palette[buffer["storage"]]
    return ROLE_COLORS.get(buffer["role"], PLAIN_INTERMEDIATE)


def shown_rows(memory: dict) -> list:
    """The buffers the timeline draws: all, or the MAX_ROWS largest, in order of first use."""
    buffers = memory["buffers"]
    if len(buffers) <= MAX_ROWS:
        return buffers
    keep = {b["id"] for b in sorted(buffers, key=lambda b: -b["bytes"])[:MAX_ROWS]}
    return [b for b in buffers if b["id"] in keep]


def memory_svg(memory: dict, size_text) -> str:
    """The lifetime timeline as inline SVG: one row per buffer, one column per kernel."""
    rows = shown_rows(memory)
    label_width, column, row_height = 260, max(8, min(28, 560 // max(1, memory["steps"]))), 16
    width = label_width + column * memory["steps"] + 10
    height = row_height * len(rows) + 24
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             'font-family="ui-monospace,Menlo,monospace" font-size="11">']
    for step in range(memory["steps"]):
        x = label_width + step * column
        parts.append(f'<text x="{x + column / 2:.0f}" y="11" text-anchor="middle" '
                     f'fill="#475569">{step + 1}</text>')
    palette: dict = {}
    for row, buffer in enumerate(rows):
        y = 16 + row * row_height
        x = label_width + buffer["first"] * column
        span = (buffer["last"] - buffer["first"] + 1) * column
        shared = f" = {buffer['storage']}" if buffer["storage"] != buffer["id"] else ""
        text = f"{buffer['id']} {buffer['label']} {size_text(buffer['bytes'])}{shared}"
        parts.append(f'<text x="2" y="{y + 11}">{escape(text[:40])}</text>'
                     f'<rect x="{x}" y="{y + 2}" width="{span}" height="{row_height - 4}" '
                     f'rx="2" fill="{buffer_color(buffer, palette)}"/>')
    parts.append("</svg>")
    return "".join(parts)


def jit_step_memory(jit, prefix: str = "m0.") -> dict:
    """The memory of a captured TinyJit step, in the shape realize_memory gives. Its launches
    keep each argument's buffer before the step's memory plan; each realize's own planner had
    already shared buffers inside the realize, so a buffer the step does not keep holds one value
    per write: each write starts a new entry, and entries on one storage share it. Buffers kept
    beyond the step are "input" (only read) or "assigned" (written in place)."""
    launches = jit.step.launches if jit.step is not None else []
    kernel_ids = [f"k{position}" for position in range(len(launches))]
    entries: list[dict] = []
    current: dict = {}      # planned buffer key -> its entry now (the value last written)
    for position, launch in enumerate(launches):
        for argument, (key, nbytes, kept) in enumerate(launch.planned):
            buffer = launch.buffers[argument]
            if key not in current or (argument == 0 and not kept and entries[current[key]]["uses"]):
                current[key] = len(entries)
                entries.append({"nbytes": nbytes, "kept": kept, "storage": id(buffer),
                                "label": f"{buffer.dtype.name}[{buffer.size}]", "uses": []})
            entries[current[key]]["uses"].append((position, argument))
    first_of_storage: dict = {}
    for index, entry in enumerate(entries):
        first_of_storage.setdefault(entry["storage"], index)
    steps, buffers = len(launches), []
    for index, entry in enumerate(entries):
        writers = [kernel_ids[p] for p, argument in entry["uses"] if argument == 0]
        readers = [kernel_ids[p] for p, argument in entry["uses"] if argument > 0]
        positions = [p for p, _ in entry["uses"]]
        kept = entry["kept"]
        role = ("assigned" if writers else "input") if kept else "intermediate"
        first, last = (0, steps - 1) if kept else (min(positions), max(positions))
        buffers.append({"id": f"{prefix}{index}", "node": None, "label": entry["label"],
                        "shape": [], "dtype": entry["label"].split("[")[0],
                        "bytes": entry["nbytes"], "role": role, "first": first, "last": last,
                        "writers": list(dict.fromkeys(writers)),
                        "readers": list(dict.fromkeys(readers)),
                        "storage": f"{prefix}{first_of_storage[entry['storage']]}"})
    _mark_sharing(buffers)
    return {"steps": steps, "kernels": kernel_ids, "buffers": buffers, **_totals(buffers, steps),
            "largest": [b["id"] for b in sorted(buffers, key=lambda b: (-b["bytes"], b["id"]))
                        if b["role"] != "input"][:MAX_LARGEST]}


def jit_step_model(jit) -> dict:
    """An inspection model of one captured TinyJit step for the memory and kernels views: one
    pseudo-realize ("TinyJit step") whose kernels are the captured launches."""
    memory = jit_step_memory(jit)
    kernels, names = [], KernelNames()
    for position, launch in enumerate(jit.step.launches if jit.step is not None else []):
        runner = launch.runner
        kernels.append({"id": f"k{position}", "realize": 0, "position": position,
                        "kind": "kernel" if runner is not None else "copy",
                        "name": names.name_of(runner) if runner is not None else "copy",
                        "device": runner.device if runner is not None else "",
                        "shape": [], "output": None, "fused": [], "reads": [],
                        "ops": ["launch" if runner is not None else "copy"],
                        "decisions": [], "edges": [], "opts": [], "language": "",
                        "flops": runner.flops if runner is not None else 0,
                        "bytes": runner.bytes_moved if runner is not None else 0})
    realize = {"index": 0, "forced_by": "TinyJit step", "forced_code": "one TinyJit step",
               "outputs": [], "kernels": [k["id"] for k in kernels], "options": "default",
               "memory": memory, "what_if": []}
    model = {"version": 1, "realizes": [realize], "nodes": [], "kernels": kernels,
             "decisions": [], "programs": {}, "timings": False, "omitted_realizes": 0,
             "graph": {"boxes": [], "links": []}}
    add_roofline(model)
    return model
