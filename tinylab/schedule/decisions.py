"""The FusionDecision of every producer -> consumer edge inside the kernels: a cut with the reason
cuts.py recorded, or a merge named by the first merge row of fusion_rules.py whose test holds
(view, after / into a reduce, recomputed, elementwise), plus one per requested output. Called by
schedule.py after the cuts are chosen.
"""
from __future__ import annotations

from ..ir.node import Node
from ..ir.ops import Op
from .fusion import FusionDecision, Reason
from .fusion_rules import FUSION_RULES, Edge
from .graph import consumers_of


def fusion_decisions(regions, cut, graph, realized, outputs) -> tuple[list, dict]:
    consumers = consumers_of(graph, realized)
    in_regions: dict[Node, int] = {}
    for region in regions.values():
        for n in region.nodes:
            in_regions[n] = in_regions.get(n, 0) + 1
    seen: dict = {}
    per_region: dict[Node, list] = {}
    position = {n: i for i, n in enumerate(graph)}  # built once: sorting is per region
    for out, region in regions.items():
        mine = per_region.setdefault(out, [])
        consumers_here = sorted(region.nodes, key=lambda n: position.get(n, -1))
        if out.op is Op.ASSIGN and cut.get(out.src[1], (None,))[0] is Reason.ASSIGN_HAZARD:
            consumers_here.append(out)  # the value got a buffer of its own: say why
        for consumer in consumers_here:
            for producer in consumer.src:
                if producer.op in (Op.BUFFER, Op.CONST) or producer in realized:
                    continue
                key = (producer, consumer)
                if key not in seen:
                    seen[key] = _decide(producer, consumer, region, cut, consumers, in_regions)
                mine.append(seen[key])
    decisions = list(seen.values())
    for out in outputs:
        if out in cut and cut[out][0] is Reason.REQUESTED:
            decisions.append(FusionDecision(out, None, False, Reason.REQUESTED,
                                            _evidence(out, None, Reason.REQUESTED, None)))
    return decisions, per_region


def _decide(producer, consumer, region, cut, consumers, in_regions) -> FusionDecision:
    """A cut node reports the (reason, detail) cuts.py recorded; a fused edge the first merge
    row of fusion_rules.py whose test holds."""
    if producer in cut and producer is not region.root:
        reason, detail = cut[producer]
        return FusionDecision(producer, consumer, False, reason,
                              _evidence(producer, consumer, reason, detail))
    reason = FUSION_RULES.merge_reason(Edge(producer, consumer, region, consumers, in_regions))
    return FusionDecision(producer, consumer, True, reason,
                          _evidence(producer, consumer, reason, None))


def _evidence(producer, consumer, reason, detail) -> dict:
    evidence = {"producer_op": producer.op.name, "producer_shape": producer.shape,
                "rule": reason.value}
    if consumer is not None:
        evidence.update(consumer_op=consumer.op.name, consumer_shape=consumer.shape)
    if detail:
        evidence["detail"] = detail
    return evidence
