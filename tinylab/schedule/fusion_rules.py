"""Fusion rules as rows: each row names its Reason, the sentence the inspector shows, where it is
decided (a cut check run on every pass, a merge test, or the walk / rewrite that records it), and
the switch that turns it off with the what-if scenario offering that. A new rule is one row:
cuts.py runs the cut checks in row order and cuts what a switched-off merge row would merge,
decisions.py reports the first merge test that holds, what_if.py offers the scenarios, and the
inspector explains every decision from here.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Callable

from ..ir.ops import MOVEMENT, REDUCE
from .cut_checks import assign_hazards, buffer_limit, shared_expensive, shared_reduces
from .fusion import Reason, SchedulerOptions
from .graph import is_leaf, through_movement

SWITCHES = frozenset(f.name for f in fields(SchedulerOptions))


@dataclass(frozen=True)
class Scenario:
    """A what-if: its key, title, what it shows; `changes` to the options (default: the rule's
    switch off)."""
    key: str
    title: str
    description: str
    changes: dict | None = None


@dataclass(frozen=True)
class Edge:
    """A producer -> consumer edge fused into one kernel, as a merge test sees it: the kernel's
    Region, the graph's readers of each node, and how many kernels compute each node."""
    producer: object
    consumer: object
    region: object
    consumers: dict
    in_regions: dict


@dataclass(frozen=True)
class FusionRule:
    """One fusion rule: its reason and sentence, where it is decided (`check`, `merges`, or the
    walk / rewrite that records it when both are None), and its switch and what-if."""
    reason: Enum                    # the code its decisions carry (a Reason, or a str Enum)
    explanation: str                # the sentence the inspector shows beside it
    check: Callable | None = None   # a cut: (cut_checks.CutPass) -> {node to cut: detail}
    merges: Callable | None = None  # a merge: (Edge) -> bool; the first that holds names it
    cut_when_off: Callable | None = None  # switched off, the node it would have merged:
                                          # (node, its readers, realized) -> node to cut or None
    switch: str = ""                # a SchedulerOptions field that turns it off when falsy, or
                                    # a name for options.rules_off ("": always on)
    scenario: Scenario | None = None
    rewrite: bool = False           # a rewrite's copy: its scenario only where it fired

    def on(self, options: SchedulerOptions) -> bool:
        if not self.switch:
            return True
        if self.switch in SWITCHES:
            return bool(getattr(options, self.switch))
        return self.switch not in options.rules_off

    def changes(self, options: SchedulerOptions | None = None) -> dict:
        """The option changes of this rule's what-if scenario."""
        if self.scenario.changes is not None:
            return dict(self.scenario.changes)
        if self.switch in SWITCHES:
            return {self.switch: False}
        off = options.rules_off if options is not None else frozenset()
        return {"rules_off": off | {self.switch}}


def _view(edge: Edge) -> bool:
    return edge.producer.op in MOVEMENT or edge.consumer.op in MOVEMENT


def _after_reduce(edge: Edge) -> bool:
    return edge.producer.op in REDUCE


def _into_reduce(edge: Edge) -> bool:
    pre = edge.region.pre
    return edge.consumer.op in REDUCE or (edge.producer in pre and edge.consumer in pre)


def _recomputed(edge: Edge) -> bool:
    return (len(edge.consumers.get(edge.producer, ())) > 1
            or edge.in_regions.get(edge.producer, 0) > 1)


def _the_reduce(node, consumers, realized):
    return node if node.op in REDUCE else None


def _what_a_reduce_sums(node, consumers, realized):
    if node.op not in REDUCE:
        return None
    producer = through_movement(node.src[0])
    return None if is_leaf(producer, realized) else producer


def _read_twice(node, consumers, realized):
    return node if node.op not in MOVEMENT and len(consumers.get(node, ())) > 1 else None


R = Reason
ROWS = (
    # ---- cuts recorded by cuts._initial_cuts (the node itself asks for a buffer) ----
    FusionRule(R.REQUESTED, "the value was asked for (realize / numpy / item)"),
    FusionRule(R.CONTIGUOUS, "explicit .contiguous() asks for a buffer"),
    FusionRule(R.ASSIGN, "assign() writes into an existing buffer"),
    FusionRule(R.DEVICE_COPY, "the value is copied to another device"),
    FusionRule(R.FUSION_OFF, "fusion is switched off (fuse=False)", switch="fuse", scenario=Scenario(
        "fuse_off", "fusion off", "every op in its own kernel (schedule(fuse=False))")),
    FusionRule(R.RULE_OFF, "the fusion rule that would merge these is switched off"),
    # ---- cuts recorded by the region walk (regions.walk_region) ----
    FusionRule(R.BROADCAST_REDUCE, "the reduce result is read back across the axes it reduced "
                                   "(expand), so every output needs the whole reduce first"),
    FusionRule(R.VIEW_OF_REDUCE, "the reduce result is read through a view that reorders or pads it"),
    FusionRule(R.REDUCE_INTO_REDUCE, "a reduce feeds another reduce: one reduce loop per kernel"),
    FusionRule(R.MULTIPLE_REDUCES, "a second reduce in one kernel: one reduce loop per kernel"),
    # ---- cuts checked over every kernel after each pass, in this order (cut_checks.py) ----
    FusionRule(R.SHARED_REDUCE, "several kernels read this reduce; recomputing it repeats the "
                                "reduce", check=shared_reduces),
    FusionRule(R.EXPENSIVE_RECOMPUTE, "read through a broadcast, this long computation would be "
                                      "redone for every copy; computing it once into a buffer is "
                                      "cheaper", check=shared_expensive, switch="recompute_limit"),
    FusionRule(R.TOO_MANY_BUFFERS, "the kernel would read more buffers than the device allows",
               check=buffer_limit, switch="max_buffers"),
    FusionRule(R.ASSIGN_HAZARD, "the assigned value reads its own target at other indices",
               check=assign_hazards),
    # ---- copies added by the rewrites before the cut (packing.py, relayout.py, rewrite.py) ----
    FusionRule(R.PACKED_MATMUL, "the device's renderer declares a matmul panel width: the operand "
                                "is first copied into panels, so the matmul reads whole cache lines",
               switch="pack_matmuls", rewrite=True, scenario=Scenario(
                   "no_pack", "matmul not packed", "big matmuls read their operands in place, "
                   "without the panel copies the device's renderer asks for")),
    FusionRule(R.RELAYOUT, "no output axis of this sum is contiguous for the vector lanes: the "
                           "operand is first copied with the summed product's vector axis innermost",
               switch="relayout_operands", rewrite=True, scenario=Scenario(
                   "no_relayout", "operands not relaid out", "big reduces read their operands in "
                   "place, without the copies that put a vector's lanes on consecutive values")),
    FusionRule(R.FOLDED_REDUCE, "a sum over a view of another sum: both sums run in one loop nest, "
                                "so the intermediate never gets a buffer", switch="fold_reduces"),
    # ---- merges: the first whose test holds names the edge (decisions.py) ----
    FusionRule(R.VIEW, "movement op: becomes index arithmetic on the loads", merges=_view),
    FusionRule(R.AFTER_REDUCE, "applied to the reduce result in the same kernel",
               merges=_after_reduce, cut_when_off=_the_reduce, switch="fuse_after_reduce",
               scenario=Scenario("no_fuse_after_reduce", "no fusing after a reduce",
                                 "ops applied to a reduce result get their own kernel")),
    FusionRule(R.INTO_REDUCE, "computed inside the reduce loop that consumes it",
               merges=_into_reduce, cut_when_off=_what_a_reduce_sums, switch="fuse_into_reduce",
               scenario=Scenario("no_fuse_into_reduce", "no fusing into a reduce",
                                 "the values a reduce sums are materialized first")),
    FusionRule(R.RECOMPUTED, "cheap producer with several readers: recomputed where it is read",
               merges=_recomputed, cut_when_off=_read_twice, switch="recompute_shared",
               scenario=Scenario("no_recompute", "no recomputing shared producers",
                                 "a value read by several ops is stored once instead of "
                                 "recomputed")),
    FusionRule(R.ELEMENTWISE, "elementwise into elementwise: one loop, no buffer in between",
               merges=lambda edge: True),
)


@dataclass
class RuleTable:
    """The rows, read at call time (a test may add a row for its own duration)."""
    rows: tuple = field(default=ROWS)

    def cut_checks(self, options: SchedulerOptions) -> list:
        return [row for row in self.rows if row.check is not None and row.on(options)]

    def switched_off(self, options: SchedulerOptions) -> list:
        """The merge rules `options` switch off (each cuts what it would have merged)."""
        return [row for row in self.rows if row.cut_when_off is not None and not row.on(options)]

    def merge_reason(self, edge: Edge):
        return next(row.reason for row in self.rows if row.merges is not None
                    and row.merges(edge))

    def explanation(self, reason) -> str:
        """The sentence of `reason` (a member or its value)."""
        value = reason.value if isinstance(reason, Enum) else reason
        return next(row.explanation for row in self.rows if row.reason.value == value)

    def scenarios(self, rewrites: bool) -> list:
        """The rows offering a what-if (`rewrites`: the rewrite rows, else the others)."""
        return [row for row in self.rows if row.scenario is not None and row.rewrite == rewrites]


FUSION_RULES = RuleTable()
