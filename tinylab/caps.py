"""What a device can do, as one immutable value the engine hands down (`DeviceCaps`): the
scheduler's target-dependent rewrites (matmul packing, operand relayout) and the planner read it;
nobody below the engine asks the engine for a fact. Made by engine/devices.py from a backend's
renderer declarations (`Device.caps()`). Layer 0: plain data, imports nothing of tinylab.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceCaps:
    device: str                        # canonical device name ("CPU", "NULL:CL", ...)
    panel_width: int | None = None     # pack big matmul operands into panels this wide (None: no)
    relayout_lanes: int | None = None  # float32 lanes a reduce's operand is relaid out for
    vector_widths: tuple = ()          # lane counts one native vector variable can hold
    plan_family: str = "cpu"           # "cpu": codegen/heuristic.py; "gpu": heuristic_gpu.py
    supported_actions: tuple = ()      # plan actions (codegen/plan.py) the backend renders
    max_work_group: int = 1            # work-items per work-group (1: no work-groups)
    target: object = None              # the CPUTarget a C backend plans for (None elsewhere)


def panel_width_of(caps: dict | None, device: str) -> int | None:
    """The panel width `device` packs matmuls into, from a {device: DeviceCaps} table."""
    found = (caps or {}).get(device)
    return None if found is None else found.panel_width


def relayout_lanes_of(caps: dict | None, device: str) -> int | None:
    """The float32 lanes `device` relays a reduce's operand out for, from the same table."""
    found = (caps or {}).get(device)
    return None if found is None else found.relayout_lanes
