"""Print a Schedule: one block per kernel with its output, inputs and the fusion decisions that
shaped it. This is what DEBUG=3 shows and what the schedule golden files hold.
"""
from __future__ import annotations

from collections import Counter


def _slot_text(slot) -> str:
    return f"{slot.dtype.name}{list(slot.shape)}"


def print_schedule(schedule, names: list[str] | None = None) -> str:
    lines = [f"schedule: {len(schedule.kernels)} kernel(s), {len(schedule.items)} item(s)"]
    for i, item in enumerate(schedule.items):
        name = names[i] if names else item.kind
        out = item.output
        ins = ", ".join(_slot_text(s) for s in item.slots[1:]) or "-"
        lines.append(f"[{i}] {name}: {out.op.name} -> {_slot_text(item.slots[0])}  reads {ins}")
        seen = set()
        for decision in item.decisions:
            text = decision.describe()
            if text not in seen:
                seen.add(text)
                lines.append(f"      {text}")
    counts = Counter(d.reason.value for d in schedule.decisions if not d.merged)
    if counts:
        lines.append("cuts: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    return "\n".join(lines)
