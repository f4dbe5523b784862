"""What a schedule is made of: `BufferSlot` (a buffer read or written), `ScheduleItem` (one kernel
or device copy with its AST and decisions) and `Schedule` (the items in run order, every decision,
the requested outputs' slots). Built by schedule.py; read by the engine, memory planner, inspector.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from ..errors import TinylabError
from ..ir import node as ir
from ..ir.node import Node
from ..ir.symbolic import max_shape
from .fusion import FusionDecision, SchedulerOptions


@dataclass(eq=False)
class BufferSlot:
    """A buffer the schedule reads or writes: an existing one, or one a kernel will fill."""
    shape: tuple
    dtype: object
    device: str
    node: Node            # the lazy node whose value it holds
    existing: object = None  # the runtime Buffer if it already exists

    @property
    def nbytes(self) -> int:  # a symbolic size takes its maximum: one buffer serves every value
        return ir.prod(max_shape(self.shape)) * self.dtype.itemsize

    def __repr__(self):
        state = "existing" if self.existing is not None else "new"
        return f"<slot {self.dtype.name}{list(self.shape)} {state}>"


class ItemKind(StrEnum):
    """What a schedule item does (its value is the word the printers and the JSON model show)."""
    KERNEL = "kernel"   # a generated kernel computes the output
    COPY = "copy"       # a device-to-device copy of one buffer


@dataclass(eq=False)
class ScheduleItem:
    kind: ItemKind
    output: Node                   # the lazy node this item materializes
    slots: list[BufferSlot]        # buffer index -> slot; outputs first
    ast: Node | None = None        # kernel AST (SINK) of an ItemKind.KERNEL
    fused: list[Node] = field(default_factory=list)  # lazy nodes computed in this kernel
    decisions: list[FusionDecision] = field(default_factory=list)
    reads_old: set = field(default_factory=set)  # BUFFER leaves read (for assign ordering)
    reads: set = field(default_factory=set)      # lazy leaves read (cut nodes and buffers)
    var_vals: dict = field(default_factory=dict)  # symbolic variable name -> bound value
    full_shape: tuple = ()         # the kernel's iteration space as lowered, before the AST's
                                   # normal axes (schedule/axes.py) drop, move and merge them


@dataclass
class Schedule:
    items: list[ScheduleItem]
    decisions: list[FusionDecision]
    outputs: dict                  # requested node -> BufferSlot that holds it
    options: SchedulerOptions
    leaves: dict = field(default_factory=dict)  # realized nodes it read -> their BUFFER node
    graph_outputs: list = field(default_factory=list)  # the outputs after the graph rewrites
    caps: dict = field(default_factory=dict)  # device -> DeviceCaps it was scheduled for

    @property
    def kernels(self) -> list[ScheduleItem]:
        return [i for i in self.items if i.kind is ItemKind.KERNEL]

    def __len__(self):
        return len(self.items)

    def __str__(self) -> str:
        from .printer import print_schedule
        return print_schedule(self)


class ScheduleError(TinylabError, RuntimeError):
    pass


class AssignCycleError(ScheduleError):
    """A kernel would read a buffer's old value and, through other kernels, the assign that
    overwrites it: no order runs both. The engine copies the old value first and reads that."""
