"""Choosing what to materialize: the nodes that must get a buffer (requested, contiguous, assign,
copy, switched-off rules), then regions walked again and again, each violation cut, until every
kernel is legal: one reduce per kernel (the walk), then the cut checks of the rule rows in order
(fusion_rules.py: shared reduces, costly recomputes, the buffer limit, assign hazards, ...).
`choose_cuts(graph, outputs, realized, options) -> (cut, regions)`.
"""
from __future__ import annotations

from ..ir.node import Node
from ..ir.ops import ALU, MOVEMENT, Op
from .cut_checks import CutPass
from .fusion import Reason
from .graph import SNAPSHOT, buffer_leaf, consumers_of, is_alias, is_leaf, kernel_root
from .items import ScheduleError
from .fusion_rules import FUSION_RULES
from .regions import CutContext, Region, walk_region


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
    for rule in FUSION_RULES.switched_off(options):   # a merge rule off: what it merged is cut
        for node in graph:
            if node not in realized and node.op not in (Op.BUFFER, Op.CONST):
                target = rule.cut_when_off(node, consumers, realized)
                if target is not None:
                    cut.setdefault(target, (Reason.RULE_OFF, f"{rule.switch} is off"))
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
            violations = _checked(CutPass(regions, walks.kernels, context))
        if not violations:
            return cut, regions
        newly_cut = [node for node in violations if node not in cut]
        for node, why in violations.items():
            cut.setdefault(node, why)
    raise ScheduleError("scheduler did not converge")  # pragma: no cover


def _checked(step: CutPass) -> dict:
    """The cuts asked for by the first rule row whose check finds any (fusion_rules.py order)."""
    for rule in FUSION_RULES.cut_checks(step.context.options):
        found = rule.check(step)
        if found:
            return {node: (rule.reason, detail) for node, detail in found.items()}
    return {}


