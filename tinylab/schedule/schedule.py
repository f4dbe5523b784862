"""The scheduler: cut a lazy graph into kernels and record why each boundary exists.

`schedule(outputs, options) -> Schedule`. It picks the set of nodes that must live in buffers
(requested outputs, contiguous/assign/copy, and reduces the rules cannot fuse), fuses everything
else into the kernel of the buffer that consumes it, and lowers each kernel to a kernel AST:
a SINK of STOREs whose values are ALU trees over LOADs, where every movement op has become a
view (ir/view.py) on a LOAD. Each producer -> consumer edge yields a FusionDecision. The cut is
the same for every device; then target-dependent rewrites run (packing.py: matmul panels;
relayout.py: an operand copied so a reduce's vectors run full).
Called by the engine (realize) and by the inspector for "what if" schedules.

The stages, one file each: rewrite.py (nested sums folded), regions.py + cuts.py (what gets a
buffer, and why), decisions.py (a decision per edge), lowering.py (kernel ASTs), ordering.py (run
order), packing.py and relayout.py (after the cut); items.py holds what a Schedule is made of.
"""
from __future__ import annotations


from ..caps import panel_width_of, relayout_lanes_of
from ..ir.node import Node
from ..ir.ops import Op
from .cuts import choose_cuts
from .decisions import fusion_decisions
from .fusion import SchedulerOptions
from .graph import graph_order, is_alias, is_leaf
from .items import BufferSlot, Schedule, ScheduleError, ScheduleItem
from .lowering import lower_region
from .ordering import order_items
from .packing import pack_matmuls
from .relayout import relayout_operands
from .rewrite import fold_nested_reduces

__all__ = ["schedule", "Schedule", "ScheduleItem", "BufferSlot", "ScheduleError"]


def schedule(outputs, options: SchedulerOptions | None = None, realized=None,
             fuse: bool | None = None, caps: dict | None = None) -> Schedule:
    """Cut the graph under `outputs` into kernels. `realized` maps nodes that already have a
    buffer to their BUFFER node; `fuse=False` is a shortcut for options.fuse; `caps` maps each
    device name to its DeviceCaps (tinylab/caps.py): the panel width packing.py packs matmuls
    into and the lanes relayout.py lays operands out for (no entry: neither rewrite)."""
    options = options or SchedulerOptions()
    if fuse is not None:
        options = options.with_(fuse=fuse)
    realized = realized or {}
    caps = dict(caps or {})
    requested = list(dict.fromkeys(outputs))

    def cut_and_lower(graph_outputs: list) -> Schedule:
        return _schedule(requested, graph_outputs, options, realized, caps)

    sched = cut_and_lower(requested)
    if caps and options.pack_matmuls:
        sched = pack_matmuls(sched, lambda device: panel_width_of(caps, device), cut_and_lower)
    if caps and options.relayout_operands:
        sched = relayout_operands(sched, lambda device: relayout_lanes_of(caps, device),
                                  cut_and_lower)
    return sched


def _schedule(requested: list, outputs: list, options: SchedulerOptions, realized,
              caps: dict) -> Schedule:
    """The device-free schedule of `outputs` (the requested nodes, or a rewrite of them)."""
    folds = []
    if options.fold_reduces and options.fuse:
        outputs, folds = fold_nested_reduces(outputs, realized)
    graph = graph_order(outputs, realized)
    cut, regions = choose_cuts(graph, outputs, realized, options)
    decisions, per_region = fusion_decisions(regions, cut, graph, realized, outputs)

    slots: dict = {}

    def slot_of(node: Node) -> BufferSlot:
        if node in realized:
            node = realized[node]
        if node.op is Op.BUFFER:
            key = id(node.buffer)
            if key not in slots:
                slots[key] = BufferSlot(node.shape, node.dtype, node.device, node, node.buffer)
            return slots[key]
        if node.op is Op.ASSIGN:
            return slot_of(node.src[0])
        if is_alias(node, cut, realized):
            return slot_of(node.src[0])
        if node not in slots:
            slots[node] = BufferSlot(node.shape, node.dtype, node.device, node)
        return slots[node]

    items = []
    for node in graph:
        if node not in cut or is_alias(node, cut, realized):
            continue
        if node.op is Op.COPY:
            source = node.src[0]
            leaf = realized.get(source, source)
            items.append(ScheduleItem("copy", node, [slot_of(node), slot_of(source)],
                                      reads={source},
                                      reads_old={leaf} if leaf.op is Op.BUFFER else set()))
            continue
        if node.op is Op.ASSIGN and not is_leaf(node.src[0], realized):
            raise ScheduleError("assign target must be a realized buffer; realize it first")
        item = lower_region(regions[node], node, slot_of(node), cut, realized, slot_of)
        item.decisions = per_region.get(node, [])
        items.append(item)
    items = order_items(items, realized)
    leaves = {n: realized[n] for n in graph if n in realized}
    slots_out = {r: slot_of(o) for r, o in zip(requested, outputs)}
    return Schedule(items, folds + decisions, slots_out, options, leaves, outputs, caps)
