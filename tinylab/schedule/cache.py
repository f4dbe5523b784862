"""Schedules cached by graph structure: a graph seen before skips cutting, lowering and rewrites.

`structure_key(outputs, realized)` -> (key, leaves): the key is the lazy graph's structure with
its buffers (and realized values) as numbered slots; `leaves` are those nodes in walk order.
`reuse(cached, old_leaves, new_leaves)` -> the cached Schedule re-made for the new graph: every
node rebuilt over the new leaves (hash-consing returns the new graph's own nodes), fresh slots,
the same kernel ASTs and decisions. Used by engine/realize.py, which keeps the table.
"""
from __future__ import annotations

from ..ir.node import Node, _arg_key, buffer
from ..ir.ops import Op
from .fusion import FusionDecision
from .graph import graph_order, toposort
from .items import BufferSlot, Schedule, ScheduleItem


def structure_key(outputs: list, realized) -> tuple[tuple, list, list]:
    """One row per node of the walk: a leaf (a BUFFER or a realized value) by its kind, type,
    shape, device and which distinct buffer it is; an inner node by (op, dtype, arg, shape,
    device, its sources' row numbers). Two graphs with equal keys schedule alike."""
    order = graph_order(outputs, realized)
    row_of: dict = {}
    buffer_number: dict = {}
    rows, leaves = [], []
    for node in order:
        stored = _stored(node, realized)
        if stored is not None:
            number = buffer_number.setdefault(id(stored.buffer), len(buffer_number))
            fresh = stored.version == stored.buffer.version
            # a realized CONST is still inlined by its value (schedule/lowering.py): keyed by it
            value = _arg_key(node.op, node.arg) if node.op is Op.CONST else None
            rows.append(("leaf", node.op, node.dtype, node.shape, node.device, number, fresh,
                         stored is node, value))
            leaves.append(node)
        else:
            rows.append((node.op, node.dtype, _structural_arg(node), node.shape,
                         node.device, tuple(row_of[s] for s in node.src)))
        row_of[node] = len(rows) - 1
    return (tuple(rows), tuple(row_of[n] for n in outputs)), leaves, order


def _structural_arg(node):
    """A node's arg as far as the schedule depends on it. A CONTIGUOUS node's arg is a serial
    number (ir/node.py: each request is its own node); which number it is only tells nodes
    apart, and the rows already do (one row per distinct node), so every serial keys alike.
    Without this a step that asks for a contiguous copy (a conv's weight relayout) would key
    anew every time and be cut and lowered again each call."""
    if node.op is Op.CONTIGUOUS:
        return None
    return _arg_key(node.op, node.arg)


def _stored(node, realized):
    """The BUFFER node the schedule reads for a leaf (None for an inner node): a realized
    value's buffer, or a BUFFER's own node, or the snapshot an old version of it was copied
    to before a write (FreshRealized maps a stale BUFFER node to it)."""
    stored = realized.get(node)
    if stored is None and node.op is Op.BUFFER:
        return node
    return stored


class _Substitution:
    """Old graph node -> the same node over the new leaves (memoized; rebuilt by interning)."""

    def __init__(self, old_leaves: list, new_leaves: list, old_realized, new_realized,
                 known: dict | None = None):
        self.mapped: dict = dict(known or {})  # old node -> new node, where already known
        self.mapped.update(zip(old_leaves, new_leaves))
        for old, new in zip(old_leaves, new_leaves):  # the BUFFER nodes realized values hold
            stored = old_realized.get(old)
            if stored is not None and stored is not old:
                self.mapped[stored] = new_realized.get(new)

    def __call__(self, node):
        if node is None:
            return None
        found = self.mapped.get(node)
        if found is None:
            stack = [node]
            while stack:  # sources before users, without recursion
                top = stack[-1]
                pending = [s for s in top.src if s not in self.mapped]
                if pending:
                    stack.extend(pending)
                    continue
                stack.pop()
                if top not in self.mapped:
                    self.mapped[top] = Node(top.op, top.dtype,
                                            tuple(self.mapped[s] for s in top.src), top.arg,
                                            top.shape, top.device)
            found = self.mapped[node]
        return found


class Placeholder:
    """A buffer that is not there: what a cached template's leaves hold, so that the cache
    keeps no user buffer alive. Only its label and version are ever read."""

    def __init__(self, number: int, version: int):
        self.label, self.version = f"slot{number}", version


def template(sched: Schedule, leaves: list, realized, order: list) -> tuple:
    """(template, its leaves, its realized map, its walk): `sched` over placeholder BUFFER
    nodes, one per leaf (and one for the buffer of each realized leaf), for the cache to keep;
    the walk lists the template's node for each row of the key (None: not in the schedule).
    None when the template would still hold a user buffer (not cacheable)."""
    held, stand_ins = {}, []
    for number, leaf in enumerate(leaves):
        stored = _stored(leaf, realized)
        stand_in = buffer(Placeholder(number, stored.version), leaf.shape, leaf.dtype,
                          leaf.device, stored.version)
        if stored is not leaf:
            held[stand_in] = buffer(Placeholder(number, stored.version), stored.shape,
                                    stored.dtype, stored.device, stored.version)
        stand_ins.append(stand_in)
    sub = _Substitution(leaves, stand_ins, realized, held)
    made = _rebuild(sched, sub)
    if _user_buffers(made):
        return None
    return made, stand_ins, held, [sub.mapped.get(node) for node in order]


def _user_buffers(sched: Schedule) -> list:
    """The real buffers a template still reaches (none when every leaf became a slot; a node
    the walk did not reach, as a write target outside the graph, would keep one, and a reuse
    would read or write that old buffer): such a schedule is not cached."""
    roots = [item.output for item in sched.items]
    for item in sched.items:
        roots += [s.node for s in item.slots] + item.fused + list(item.reads_old)
        roots += list(item.reads)
    roots += list(sched.outputs) + list(sched.leaves) + list(sched.leaves.values())
    roots += sched.graph_outputs
    for decision in sched.decisions:
        roots += [decision.producer, decision.consumer]
    found = []
    for node in toposort([n for n in roots if n is not None], lambda n: n.src):
        if node.op is Op.BUFFER and not isinstance(node.buffer, Placeholder):
            found.append(node.buffer)
    slots = [s for item in sched.items for s in item.slots]
    found += [s.existing for s in slots
              if s.existing is not None and not isinstance(s.existing, Placeholder)]
    return found


def reuse(cached: Schedule, old_leaves: list, new_leaves: list, old_realized, new_realized,
          old_order: list, new_order: list) -> Schedule:
    """The cached schedule for a graph of the same structure over other buffers: the nodes of
    one walk map row by row to the other's; only nodes the rewrites made are rebuilt."""
    known = {old: new for old, new in zip(old_order, new_order) if old is not None}
    return _rebuild(cached, _Substitution(old_leaves, new_leaves, old_realized, new_realized,
                                          known))


def _rebuild(cached: Schedule, sub: _Substitution) -> Schedule:
    slots: dict = {}
    decisions: dict = {}

    def slot(old: BufferSlot) -> BufferSlot:
        new = slots.get(id(old))
        if new is None:
            node = sub(old.node)
            existing = node.buffer if old.existing is not None else None
            new = slots[id(old)] = BufferSlot(old.shape, old.dtype, old.device, node, existing)
        return new

    def decision(old: FusionDecision) -> FusionDecision:  # one object where the old was one
        new = decisions.get(id(old))
        if new is None:
            new = decisions[id(old)] = FusionDecision(sub(old.producer), sub(old.consumer),
                                                      old.merged, old.reason, old.evidence)
        return new

    items = [ScheduleItem(item.kind, sub(item.output), [slot(s) for s in item.slots], item.ast,
                          [sub(n) for n in item.fused], [decision(d) for d in item.decisions],
                          {sub(n) for n in item.reads_old}, {sub(n) for n in item.reads},
                          dict(item.var_vals), item.full_shape)
             for item in cached.items]
    return Schedule(items, [decision(d) for d in cached.decisions],
                    {sub(node): slot(s) for node, s in cached.outputs.items()}, cached.options,
                    {sub(k): sub(v) for k, v in cached.leaves.items()},
                    [sub(n) for n in cached.graph_outputs], cached.caps)
