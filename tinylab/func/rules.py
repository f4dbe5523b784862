"""The transform table: each primitive's forward-mode (jvp), reverse (vjp) and batching rules, read
from its row in ir/primitives/ (where they sit side by side with their math). Composite Tensor ops
get no row: they are transformed through the primitives they lower to.

jvp(node, tangents) -> the output's tangent (tangents: one per source, None for zero).
vjp: the row's reverse rule (grad, node) -> one cotangent per source; the same functions
     Tensor.backward uses, built of ordinary differentiable nodes (create_graph).
batch(node, sources, batched, size) -> the node over a leading batch axis of `size`; `sources`
     are the already batched sources, `batched[i]` says whether source i carries the axis.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from ..errors import IRError
from ..ir.ops import Op
from ..ir.primitives.row_parts import lift  # noqa: F401  (vmap.py lifts unbatched values)


class Rule(NamedTuple):
    jvp: Callable | None
    vjp: Callable | None
    batch: Callable | None


class RuleTable:
    """TABLE[op] is the Rule of op's row; assigning a Rule writes it into the row (notebook 09's
    exercises swap one in and put the saved one back: reading it then gives that same object)."""

    def __init__(self):
        self._given: dict[Op, Rule] = {}

    def __getitem__(self, op: Op) -> Rule:
        rule = Rule(op.jvp, op.reverse, op.batch)
        given = self._given.get(op)
        if given != rule:   # the row changed (or was never read): this Rule from now on
            self._given[op] = given = rule
        return given

    def __setitem__(self, op: Op, rule: Rule) -> None:
        op.jvp, op.reverse, op.batch = rule
        self._given[op] = rule

    def get(self, op: Op, default=None):
        return self[op] if op in self else default

    def __contains__(self, op) -> bool:
        return isinstance(op, Op) and any(r is not None for r in (op.jvp, op.reverse, op.batch))

    def __iter__(self):
        return (op for op in Op if op in self)

    def values(self):
        return [self[op] for op in self]


TABLE = RuleTable()


def rule(op: Op, transform: str) -> Callable:
    """The `transform` ("jvp", "vjp", "batch") rule of `op`, or an error naming both."""
    found = {"jvp": op.jvp, "vjp": op.reverse, "batch": op.batch}[transform]
    if found is None:
        transformer, kind = {"jvp": ("jvp", "jvp"), "vjp": ("vjp", "vjp"),
                             "batch": ("vmap", "batching")}[transform]
        raise IRError(f"{transformer}: no {kind} rule for {op.name}; {transformer} never falls "
                      f"back to a loop (or to running the op)")
    return found


def coverage() -> dict[str, int]:
    """How many rows have each of the three rules."""
    return {name: sum(1 for row in TABLE.values() if row._asdict()[name] is not None)
            for name in ("jvp", "vjp", "batch")}
