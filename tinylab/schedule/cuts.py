"""Choosing what to materialize: the nodes that must get a buffer (requested, contiguous, assign,
copy, switched-off rules), then regions walked again and again, each violation cut, until every
kernel is legal: one reduce per kernel, shared reduces, costly recomputes, the buffer limit and
assign hazards. `choose_cuts(graph, outputs, realized, options) -> (cut, regions)`.
"""
from __future__ import annotations

from ..ir.node import Node, toposort
from ..ir.ops import ALU, MOVEMENT, REDUCE, Op
from ..ir.view import ViewStack
from .fusion import Reason
from .graph import (SNAPSHOT, MovementTable, buffer_leaf, consumers_of, is_alias, is_leaf,
                    kernel_root, through_movement)
from .items import ScheduleError
from .regions import CutContext, Region, fused_ops, walk_region


def _initial_cuts(graph, outputs, realized, options) -> dict:
    cut: dict[Node, tuple] = {}
    consumers = consumers_of(graph, realized)
    for node in graph:
        if node in realized or node.op in (Op.BUFFER, Op.CONST):
            continue
        if node.op is Op.CONTIGUOUS:
            cut[node] = (Reason.CONTIGUOUS, None)
        elif node.op is Op.ASSIGN:
            cut[node] = (Reason.ASSIGN, None)
        elif node.op is Op.COPY:
            cut[node] = (Reason.DEVICE_COPY, f"copy to {node.arg}")
            if not is_leaf(node.src[0], realized):
                cut.setdefault(node.src[0], (Reason.DEVICE_COPY, f"copied to {node.arg}"))
        elif not options.fuse and node.op not in MOVEMENT and node.op is not Op.DETACH:
            cut[node] = (Reason.FUSION_OFF, None)
        elif node.op in REDUCE and not options.fuse_after_reduce:
            cut[node] = (Reason.RULE_OFF, "fuse_after_reduce is off")
        elif (not options.recompute_shared and node.op not in MOVEMENT
              and len(consumers.get(node, ())) > 1):
            cut[node] = (Reason.RULE_OFF, "recompute_shared is off")
    if not options.fuse_into_reduce:
        for node in graph:
            if node.op in REDUCE and node not in realized:
                producer = through_movement(node.src[0])
                if not is_leaf(producer, realized):
                    cut.setdefault(producer, (Reason.RULE_OFF, "fuse_into_reduce is off"))
    for out in outputs:
        if not is_leaf(out, realized) or out.op is Op.CONST:
            cut.setdefault(out, (Reason.REQUESTED, None))
    _snapshots(graph, realized, cut)
    return cut


def _snapshots(graph, realized, cut: dict) -> None:
    """A contiguous() of a buffer that an assign of this schedule overwrites is a copy, not an
    alias: the value was built before the write and keeps what it read, even where it is
    asked for, or read by a kernel that also reads the new value, in the same realize."""
    targets = {buffer_leaf(n.src[0], realized) for n in graph
               if n.op is Op.ASSIGN and n not in realized}
    if not targets:
        return
    for node in graph:
        if node.op is Op.CONTIGUOUS and node not in realized and \
                buffer_leaf(node.src[0], realized) in targets:
            cut[node] = (Reason.CONTIGUOUS, SNAPSHOT)


class _Regions:
    """The regions of every cut node, kept from pass to pass: a region is walked again only when
    a node its walk checked has been cut since (cut only grows), so a pass costs the regions it
    changes, not every region again. Also notes, per ALU node, the kernels that compute it."""

    def __init__(self):
        self.walked: dict = {}    # cut node -> its Region, as last walked
        self.checkers: dict = {}  # node -> the cut nodes whose last walk checked it
        self.kernels: dict = {}   # ALU node -> the regions (cut nodes) that compute it

    def update(self, context: CutContext, newly_cut) -> tuple[dict, dict]:
        """(cut node -> Region for every kernel, violations the new walks found)."""
        for node in newly_cut:
            for out in self.checkers.pop(node, ()):
                self._forget(out)
        violations: dict = {}
        regions = {}
        for out in context.cut:
            if out.op is Op.COPY or is_alias(out, context.cut, context.realized):
                self._forget(out)
                continue
            if out not in self.walked:
                self._remember(out, walk_region(out, context, violations))
            regions[out] = self.walked[out]
        return regions, violations

    def _remember(self, out: Node, region: Region) -> None:
        self.walked[out] = region
        for node in region.checked:
            self.checkers.setdefault(node, set()).add(out)
        for node in _computed(region):
            self.kernels.setdefault(node, set()).add(out)

    def _forget(self, out: Node) -> None:
        region = self.walked.pop(out, None)
        if region is None:
            return
        for node in region.checked:
            self.checkers.get(node, set()).discard(out)
        for node in _computed(region):
            readers = self.kernels[node]
            readers.discard(out)
            if not readers:
                del self.kernels[node]


def _computed(region: Region):
    """The ALU nodes a region's kernel computes besides its own value."""
    root = kernel_root(region.root)
    return (node for node in region.nodes if node.op in ALU and node is not root)


def choose_cuts(graph, outputs, realized, options) -> tuple[dict, dict]:
    """(node -> (reason, detail) for every node that gets a buffer, node -> its Region)."""
    cut = _initial_cuts(graph, outputs, realized, options)
    walks, newly_cut = _Regions(), ()
    for _ in range(len(graph) + 1):
        context = CutContext(cut, realized, options)  # cut only grows between passes
        regions, violations = walks.update(context, newly_cut)
        if not violations:
            violations = (_shared_reduces(regions) or
                          _shared_expensive(regions, walks.kernels, context) or
                          _buffer_limit(regions, options) or
                          _assign_hazards(regions, context))
        if not violations:
            return cut, regions
        newly_cut = [node for node in violations if node not in cut]
        for node, why in violations.items():
            cut.setdefault(node, why)
    raise ScheduleError("scheduler did not converge")  # pragma: no cover


def _shared_reduces(regions) -> dict:
    owners: dict[Node, list] = {}
    for region in regions.values():
        if region.reduce is not None:
            owners.setdefault(region.reduce, []).append(region.root)
    return {r: (Reason.SHARED_REDUCE, f"read by {len(roots)} kernels")
            for r, roots in owners.items() if len(roots) > 1}


def _shared_expensive(regions, kernels: dict, context: CutContext) -> dict:
    """Long elementwise computations that several kernels would each redo (a random-number hash
    read by every kernel of a softmax, say) get a buffer instead. `kernels`: ALU node -> the
    regions that compute it."""
    options = context.options
    if not options.recompute_limit:
        return {}
    limit = 2 * options.recompute_limit
    shared = [n for n, outs in kernels.items() if len(outs) > 1
              and fused_ops(n, context, stop_at=limit) >= limit]
    # below another shared node: one walk from all their sources, not one per node
    inside = set(toposort([src for n in shared for src in n.src]))
    chosen = _in_region_order([n for n in shared if n not in inside], regions, kernels)
    return {n: (Reason.EXPENSIVE_RECOMPUTE, f"{fused_ops(n, context)} ops would be "
                f"recomputed in {len(kernels[n])} kernels")
            for n in chosen}


def _in_region_order(nodes: list, regions: dict, kernels: dict) -> list:
    """`nodes` in the order a walk over the regions (in cut order) and their nodes meets them:
    the order they are cut in, and so the order of the regions and decisions that follow."""
    if len(nodes) < 2:
        return nodes
    wanted, found = set(nodes), []
    rank = {out: i for i, out in enumerate(regions)}
    for out in sorted({out for n in nodes for out in kernels[n]}, key=rank.__getitem__):
        for node in regions[out].nodes:
            if node in wanted:
                wanted.discard(node)
                found.append(node)
    return found


def _buffer_limit(regions, options) -> dict:
    if not options.max_buffers:
        return {}
    for region in regions.values():
        if len(region.leaves) + 1 <= options.max_buffers:
            continue
        # cut the fused source of the root that reads the most buffers
        best, best_count = None, 0
        for node in region.nodes:
            if node is region.root or node.op in MOVEMENT:
                continue
            count = len(_leaves_under(node, region))
            if count > best_count and count < len(region.leaves):
                best, best_count = node, count
        if best is not None:
            return {best: (Reason.TOO_MANY_BUFFERS,
                           f"{len(region.leaves) + 1} buffers > limit {options.max_buffers}")}
    return {}


def _leaves_under(node: Node, region: Region) -> set:
    out, stack, seen = set(), [node], set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n in region.leaves:
            out.add(n)
        elif n in region.nodes:
            stack.extend(n.src)
    return out


def _assign_hazards(regions, context: CutContext) -> dict:
    """An assign whose kernel would read its own target at other indices than it writes
    (x.assign(x.flip(0)) reads x[7] while x[0] is already overwritten, or not yet) gets its
    value computed into a buffer of its own first; the assign then copies it. So do assigns
    whose kernels read each other's targets: each would have to run before the other (an SGD
    step's updates of a BatchNorm weight and bias, whose gradients read both)."""
    cut, realized = context.cut, context.realized
    assigns = {}  # ASSIGN node -> (value, target buffer, {buffer read: its views})
    for node, region in regions.items():
        value = node.src[1] if node.op is Op.ASSIGN else None
        if value is not None and value not in cut and not is_leaf(value, realized):
            assigns[node] = (value, _buffer_of(node.src[0], realized, cut),
                             _buffer_reads(value, region, realized, cut))
    out = {}
    for node, (value, target, reads) in assigns.items():
        written = ViewStack.contiguous(node.shape)
        bad = [view for view in reads.get(target, ()) if view != written]
        if bad:
            how = "inside a reduce loop" if None in bad else f"through {bad[0]}"
            if None not in bad and any(v.top.mask is not None for v in bad):
                how += " (a slice of it overlapping the written elements elsewhere)"
            out[value] = (Reason.ASSIGN_HAZARD, f"the value reads the target {how}; it is "
                                                f"written to {written}")
    for node in _assigns_in_cycles(assigns):
        out.setdefault(assigns[node][0], (
            Reason.ASSIGN_HAZARD, "the value reads the old value of another assign's target, "
                                  "and that assign's value reads this one's: neither can go first"))
    return out


def _assigns_in_cycles(assigns: dict) -> list:
    """Assigns on a cycle of 'reads the old value of the target of' (each must run first)."""
    owner = {target: node for node, (_, target, _) in assigns.items() if target is not None}
    first = {node: {owner[b] for b in reads if b in owner and owner[b] is not node}
             for node, (_, _, reads) in assigns.items()}
    on_cycle = []
    for start, later in first.items():
        seen, stack = set(), list(later)
        while stack:
            node = stack.pop()
            if node is start:
                on_cycle.append(start)
                break
            if node not in seen:
                seen.add(node)
                stack.extend(first[node])
    return on_cycle


def _buffer_of(node: Node, realized, cut=None):
    leaf = buffer_leaf(node, realized, cut)
    return leaf.buffer if leaf.op is Op.BUFFER else None


def _buffer_reads(value: Node, region: Region, realized, cut=None) -> dict:
    """{buffer: the views through which `value`'s kernel reads it (None: in a reduce loop)}."""
    reads: dict = {}
    seen: set = set()
    movements = MovementTable()  # interned chains: a long chain's keys hash in O(1)
    stack = [(value, None, False)]
    while stack:
        node, movs, in_reduce = stack.pop()
        if (node, movs, in_reduce) in seen:
            continue
        seen.add((node, movs, in_reduce))
        if node in region.leaves or is_leaf(node, realized):
            buffer = _buffer_of(node, realized, cut)
            if buffer is not None:
                view = None if in_reduce else movements.view(node.shape, movs)
                reads.setdefault(buffer, []).append(view)
        elif node in region.nodes:
            if node.op in MOVEMENT:
                stack.append((node.src[0], movements.push(node.op, node.arg, movs), in_reduce))
            elif node.op in REDUCE:
                stack.append((node.src[0], None, True))
            else:
                stack.extend((src, movs, in_reduce) for src in node.src)
    return reads
