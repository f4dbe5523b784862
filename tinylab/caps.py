"""What a device can do, as one immutable value the engine hands down (`DeviceCaps`): the
scheduler's target-dependent rewrites (matmul packing, operand relayout) and the planner read it;
nobody below the engine asks the engine for a fact. Made by engine/devices.py from a backend's
renderer declarations (`Device.caps()`). Layer 0: plain data, imports nothing of tinylab.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class PlanFamily(str, Enum):
    """Which heuristic plans a backend's kernels (a fact of its renderer, not of the hardware)."""
    CPU = "cpu"  # codegen/heuristic.py: vectors, unrolls, threads over a C loop nest
    GPU = "gpu"  # codegen/heuristic_gpu.py: work-groups and per-thread tiles


@dataclass(frozen=True)
class DeviceCaps:
    device: str                        # canonical device name ("CPU", "NULL:CL", ...)
    panel_width: int | None = None     # pack big matmul operands into panels this wide (None: no)
    pack_rows: bool = True             # the rows operand too (False: its kernel reads it in place)
    relayout_lanes: int | None = None  # float32 lanes a reduce's operand is relaid out for
    vector_widths: tuple = ()          # lane counts one native vector variable can hold
    plan_family: PlanFamily = PlanFamily.CPU  # which heuristic plans its kernels
    supported_actions: tuple = ()      # plan actions (codegen/plan.py) the backend renders
    max_work_group: int = 1            # work-items per work-group (1: no work-groups)
    target: object = None              # the CPUTarget a C backend plans for (None elsewhere)


def caps_for(caps: dict | None, device: str | None) -> DeviceCaps:
    """`device`'s capabilities from a {device: DeviceCaps} table; a device the table does not
    hold declares nothing (no packing, no relayout)."""
    found = (caps or {}).get(device)
    return DeviceCaps(device or "") if found is None else found
