"""The checks cuts.py runs over every kernel after each pass of region walks, each the `check` of
a fusion rule's row (fusion_rules.py): it takes the pass (`CutPass`: the regions, which kernels
compute each ALU node, the cut so far) and returns {node to cut: detail}. One reduce's kernel per reader
set (shared reduces), costly recomputes, the buffer limit and assign hazards.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.node import Node, toposort
from ..ir.ops import MOVEMENT, REDUCE, Op
from ..ir.view import ViewStack
from .graph import MovementTable, buffer_leaf, is_leaf
from .regions import CutContext, Region, fused_ops


@dataclass(frozen=True)
class CutPass:
    """What one pass over the regions found: cut node -> its Region, ALU node -> the regions
    (cut nodes) that compute it, and the pass's CutContext (the cut so far, the options)."""
    regions: dict
    kernels: dict
    context: CutContext


def shared_reduces(step: CutPass) -> dict:
    """A reduce that several kernels would each compute gets a buffer of its own."""
    owners: dict[Node, list] = {}
    for region in step.regions.values():
        if region.reduce is not None:
            owners.setdefault(region.reduce, []).append(region.root)
    return {r: f"read by {len(roots)} kernels" for r, roots in owners.items() if len(roots) > 1}


def shared_expensive(step: CutPass) -> dict:
    """Long elementwise computations that several kernels would each redo (a random-number hash
    read by every kernel of a softmax, say) get a buffer instead."""
    regions, kernels, context = step.regions, step.kernels, step.context
    options = context.options
    if not options.recompute_limit:
        return {}
    limit = 2 * options.recompute_limit
    shared = [n for n, outs in kernels.items() if len(outs) > 1
              and fused_ops(n, context, stop_at=limit) >= limit]
    # below another shared node: one walk from all their sources, not one per node
    inside = set(toposort([src for n in shared for src in n.src]))
    chosen = _in_region_order([n for n in shared if n not in inside], regions, kernels)
    return {n: f"{fused_ops(n, context)} ops would be recomputed in {len(kernels[n])} kernels"
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


def buffer_limit(step: CutPass) -> dict:
    """The fused source that reads the most buffers, in a kernel over the argument limit."""
    options = step.context.options
    if not options.max_buffers:
        return {}
    for region in step.regions.values():
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
            return {best: f"{len(region.leaves) + 1} buffers > limit {options.max_buffers}"}
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


def assign_hazards(step: CutPass) -> dict:
    """An assign whose kernel would read its own target at other indices than it writes
    (x.assign(x.flip(0)) reads x[7] while x[0] is already overwritten, or not yet) gets its
    value computed into a buffer of its own first; the assign then copies it. So do assigns
    whose kernels read each other's targets: each would have to run before the other (an SGD
    step's updates of a BatchNorm weight and bias, whose gradients read both)."""
    regions, cut, realized = step.regions, step.context.cut, step.context.realized
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
            out[value] = f"the value reads the target {how}; it is written to {written}"
    for node in _assigns_in_cycles(assigns):
        out.setdefault(assigns[node][0], "the value reads the old value of another assign's "
                                         "target, and that assign's value reads this one's: "
                                         "neither can go first")
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
