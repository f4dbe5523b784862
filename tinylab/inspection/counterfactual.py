"""The schedule a what-if scenario would run: the recorded realize re-scheduled with scheduler
options changed, or with big matmuls left unpacked; compile-only changes (NOOPT, BEAM) keep the
actual schedule. `counterfactual(record, changes)` is called by what_if.py (counts and bytes) and
what_if_run.py (measured time).
"""
from __future__ import annotations

from ..ir.node import Node
from ..ir.ops import Op
from ..schedule.schedule import Schedule, schedule

COMPILE_CHANGES = ("noopt", "beam")   # passed to compile_kernel, not to the scheduler
UNPACK = "unpack"


def counterfactual(record, changes: dict) -> Schedule:
    actual = record.schedule
    scheduling = {k: v for k, v in changes.items() if k not in COMPILE_CHANGES + (UNPACK,)}
    if not scheduling and not changes.get(UNPACK):
        return actual
    outputs = unpacked(record.outputs) if changes.get(UNPACK) else record.outputs
    return schedule(outputs, actual.options.with_(**scheduling), realized=actual.leaves)


def is_panel_copy(node: Node) -> bool:
    """One of the two operand copies Tensor.matmul makes to pack a big matmul into panels
    (frontend/nn_ops.py: a contiguous 3-D permute of a reshaped operand). Until packing is a
    named rewrite after scheduling (issue 19), this pattern is how "not packed" finds them."""
    if node.op is not Op.CONTIGUOUS or len(node.shape) != 3:
        return False
    permuted = node.src[0]
    return permuted.op is Op.PERMUTE and permuted.arg in ((0, 2, 1), (1, 0, 2)) and \
        permuted.src[0].op is Op.RESHAPE


def unpacked(outputs) -> list:
    """`outputs` rebuilt with every panel copy replaced by the view it copied (read in place)."""
    rebuilt: dict = {}
    order, seen, stack = [], set(), list(outputs)
    while stack:                              # sources before users, without recursion
        node = stack[-1]
        pending = [s for s in node.src if s not in seen]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        if node not in seen:
            seen.add(node)
            order.append(node)
    for node in order:
        if is_panel_copy(node):
            rebuilt[node] = rebuilt[node.src[0]]
            continue
        sources = tuple(rebuilt[s] for s in node.src)
        rebuilt[node] = node if sources == node.src else \
            Node(node.op, node.dtype, sources, node.arg, node.shape, node.device)
    return [rebuilt[node] for node in outputs]
