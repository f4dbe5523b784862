"""Fusion decisions: why two ops share a kernel, or why a kernel boundary sits between them.

Every producer -> consumer edge the scheduler looks at yields a `FusionDecision`: merged or cut,
a `Reason` code, and evidence (the ops, their shapes, the rule, a sentence). `SchedulerOptions`
holds the rule switches, so a counterfactual schedule ("what if this rule were off?") is one
`schedule(..., options=...)` call. Each reason's row (its sentence, check and switch) is in
fusion_rules.py. Used by schedule.py; printed at DEBUG=3; kept in the Trace.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum


class Reason(str, Enum):
    # ---- cuts: the producer is materialized into a buffer ----
    REQUESTED = "requested"                # realize()/numpy() asked for this value
    CONTIGUOUS = "contiguous"              # explicit .contiguous()
    ASSIGN = "assign"                      # written into an existing buffer
    BROADCAST_REDUCE = "broadcast_reduce"  # reduce output read back across its reduced axes
    VIEW_OF_REDUCE = "view_of_reduce"      # reduce output read through a permute/pad/shrink/flip
    REDUCE_INTO_REDUCE = "reduce_into_reduce"  # a reduce's input contains another reduce
    MULTIPLE_REDUCES = "multiple_reduces"  # a kernel holds one reduce loop; others are cut
    SHARED_REDUCE = "shared_reduce"        # several kernels read it: recomputing repeats a reduce
    TOO_MANY_BUFFERS = "too_many_buffers"  # the device's kernel-argument limit
    EXPENSIVE_RECOMPUTE = "expensive_recompute"  # broadcast read would redo a long computation
    DEVICE_COPY = "device_copy"            # the value moves to another device
    ASSIGN_HAZARD = "assign_hazard"        # the assigned value reads its target at other indices
    FUSION_OFF = "fusion_off"              # schedule(fuse=False): one kernel per op
    RULE_OFF = "rule_off"                  # a fusion rule was switched off in SchedulerOptions
    PACKED_MATMUL = "packed_matmul"        # a matmul operand copied into panels (packing.py)
    RELAYOUT = "relayout"                  # an operand copied with another axis innermost
    # ---- merges: the producer is computed inside the consumer's kernel ----
    ELEMENTWISE = "elementwise"            # elementwise into elementwise: same loop, no buffer
    INTO_REDUCE = "into_reduce"            # computed inside the reduce loop that consumes it
    AFTER_REDUCE = "after_reduce"          # the reduce result is used in the same kernel
    RECOMPUTED = "recomputed"              # cheap producer with several readers: recomputed
    VIEW = "view"                          # movement op: index arithmetic, not a kernel
    FOLDED_REDUCE = "folded_reduce"        # a sum of a (view of a) sum: one loop nest


@dataclass(frozen=True)
class SchedulerOptions:
    """Rule switches. Defaults are the real schedule; turn one off to see what it buys."""
    fuse: bool = True                # False: every compute op is its own kernel
    fuse_into_reduce: bool = True    # elementwise producers computed inside reduce loops
    fuse_after_reduce: bool = True   # elementwise consumers applied to a reduce in its kernel
    recompute_shared: bool = True    # cheap producers with several readers recomputed
    recompute_limit: int = 8         # ALU ops a broadcast producer may have before it is cut
                                     # instead of recomputed per copy (0 = no limit)
    max_buffers: int = 0             # kernel-argument limit (0 = none)
    fold_reduces: bool = True        # a sum of a view of a sum becomes one sum (rewrite.py);
                                     # off: for conv gradients the folded index math costs more
                                     # than the intermediate buffer it saves (measured)
    pack_matmuls: bool = True        # big matmuls' operands copied into panels first, where the
                                     # device's renderer declares a panel width (packing.py)
    relayout_operands: bool = True   # a big reduce whose vectors would run mostly masked reads
                                     # one operand from a copy laid out for them (relayout.py;
                                     # the engine sets it from RELAYOUT, on by default)
    rules_off: frozenset = frozenset()  # the rows of fusion_rules.py switched off by name (a rule
                                        # without an option field of its own)

    def with_(self, **changes) -> SchedulerOptions:
        return replace(self, **changes)


@dataclass
class FusionDecision:
    producer: object  # ir Node
    consumer: object  # ir Node (None for a requested output)
    merged: bool
    reason: Reason
    evidence: dict = field(default_factory=dict)

    @property
    def rule(self) -> str:
        return self.reason.value

    def describe(self) -> str:
        what = "merged" if self.merged else "CUT"
        producer = f"{self.producer.op.name}{list(self.producer.shape)}"
        consumer = (f"{self.consumer.op.name}{list(self.consumer.shape)}"
                    if self.consumer is not None else "output")
        from .fusion_rules import FUSION_RULES  # the rows read the checks, which read this module
        detail = self.evidence.get("detail") or FUSION_RULES.explanation(self.reason)
        return f"{what:<6} {producer} -> {consumer}: {self.reason.value} ({detail})"

    def __str__(self) -> str:
        return self.describe()
