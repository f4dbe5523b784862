"""The scheduler: cut a lazy graph into kernels and record why each boundary exists.

`schedule(outputs, options) -> Schedule`. First the graph is rewritten: nested sums folded, then
the rewrites the device capabilities ask for (packing.py: matmul panels; relayout.py: an operand
copied so a reduce's vectors run full), chosen from the graph before cutting (placement.py says
where a node will sit). Then the one cut: it picks the set of nodes that must live in buffers
(requested outputs, contiguous/assign/copy, and reduces the rules cannot fuse), fuses everything
else into the kernel of the buffer that consumes it, and lowers each kernel once to a kernel AST:
a SINK of STOREs whose values are ALU trees over LOADs, where every movement op has become a
view (ir/view.py) on a LOAD. Each producer -> consumer edge yields a FusionDecision, and each
copy a rewrite added the decision that explains it. The cut is the same for every device.
Called by the engine (realize) and by the inspector for "what if" schedules.

The stages, one file each: rewrite.py (nested sums folded), packing.py and relayout.py (target
rewrites, before the cut), regions.py + cuts.py (what gets a buffer, and why), decisions.py (a
decision per edge), lowering.py (kernel ASTs), ordering.py (run order); items.py holds what a
Schedule is made of.
"""
from __future__ import annotations


from ..ir.node import Node
from ..ir.ops import REDUCE, Op
from . import packing, relayout
from .cuts import choose_cuts
from .decisions import fusion_decisions
from .fusion import SchedulerOptions
from .graph import buffer_leaf, graph_order, is_alias, is_leaf
from .items import BufferSlot, ItemKind, Schedule, ScheduleError, ScheduleItem
from .lowering import lower_region
from .ordering import order_items
from .packing import pack_matmuls
from .placement import Placement
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
    realized = realized if isinstance(realized, dict) else LookedUp(realized or {})
    caps = dict(caps or {})
    requested = list(dict.fromkeys(outputs))
    graph = graph_order(requested, realized)
    reduces = [node for node in graph if node.op in REDUCE]
    if not reduces:  # every rewrite before the cut is of a reduce
        return _cut_and_lower(requested, requested, [], [], options, realized, caps, graph)
    outputs, folds, copies = rewrite_before_cut(requested, options, realized, caps, reduces)
    return _cut_and_lower(requested, outputs, folds, copies, options, realized, caps,
                          graph if outputs == requested else None)


class LookedUp:
    """The engine's realized table as one schedule() call sees it: each node looked up once. The
    table does not change while a graph is cut (nothing runs), and its lookups (weak references,
    buffer versions) are what the cut, the folds and the lowering ask about most."""

    def __init__(self, table):
        self.table, self.seen = table, {}

    def get(self, node, default=None):
        try:
            found = self.seen[node]
        except KeyError:
            found = self.seen[node] = self.table.get(node)
        return default if found is None else found

    def __contains__(self, node) -> bool:
        return self.get(node) is not None

    def __getitem__(self, node):
        found = self.get(node)
        if found is None:
            raise KeyError(node)
        return found


def rewrite_before_cut(requested: list, options: SchedulerOptions, realized, caps: dict,
                       reduces: list | None = None) -> tuple[list, list, list]:
    """(the outputs after the rewrites, the folds' decisions, [{copy a target rewrite added: its
    decision}, one dict per rewrite that added any, the last first]): nested sums folded, then,
    where the caps declare them, matmuls packed and operands relaid out (each rewrite's copies
    in graph order), each rewrite followed by the folds it makes possible. `reduces`, the
    graph's reduces when known: a target rewrite is tried only if one is big enough for it."""
    def wanted(rewrite) -> bool:
        return reduces is None or any(map(rewrite.big_enough, reduces))
    outputs, folds, copies = requested, [], []

    def fold(nodes: list) -> list:
        if not (options.fold_reduces and options.fuse):
            return nodes
        nodes, found = fold_nested_reduces(nodes, realized)
        folds.extend(found)
        return nodes

    outputs = fold(outputs)
    rewrites = []
    if caps and options.pack_matmuls and wanted(packing):
        rewrites.append(lambda p: pack_matmuls(p, caps))
    if caps and options.relayout_operands and wanted(relayout):
        rewrites.append(lambda p: relayout_operands(p, caps))
    placement = None
    for target_rewrite in rewrites:
        if placement is None or placement.outputs != outputs:  # one walk while nothing changes
            placement = Placement(outputs, realized, options)
        outputs, added = target_rewrite(placement)
        if added:  # the last rewrite's copies are explained first
            copies.insert(0, added)
            outputs = fold(outputs)
    return outputs, folds, copies


def _cut_and_lower(requested: list, outputs: list, folds: list, copies: list,
                   options: SchedulerOptions, realized, caps: dict,
                   graph: list | None = None) -> Schedule:
    """The one cut of the rewritten graph under `outputs` (`graph`: its walk, when known),
    each kernel lowered once."""
    graph = graph_order(outputs, realized) if graph is None else graph
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
            leaf = buffer_leaf(source, realized, cut)
            items.append(ScheduleItem(ItemKind.COPY, node, [slot_of(node), slot_of(source)],
                                      reads={source},
                                      reads_old={leaf} if leaf.op is Op.BUFFER else set()))
            continue
        if node.op is Op.ASSIGN and not is_leaf(node.src[0], realized):
            raise ScheduleError("assign target must be a realized buffer; realize it first")
        item = lower_region(regions[node], node, slot_of(node), cut, realized, slot_of)
        item.decisions = per_region.get(node, [])
        item.decisions[:0] = [added[node] for added in copies if node in added]
        items.append(item)
    items = order_items(items, realized)
    leaves = {n: realized[n] for n in graph if n in realized}
    slots_out = {r: slot_of(o) for r, o in zip(requested, outputs)}
    explained = [decision for added in copies for decision in added.values()]
    return Schedule(items, explained + folds + decisions, slots_out, options, leaves, outputs,
                    caps)

