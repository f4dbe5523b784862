"""Buffer ownership and versions of the values that hold them: which live holder (a frontend
Tensor: anything with a `.node`) owns each buffer, which lazy holders read a buffer an assign is
about to overwrite (they get a snapshot of the old version), and `realize_holders`, the one engine
call behind `Tensor.realize`. Buffers know nothing of holders; this module keeps the table.
Called by frontend/tensor.py and frontend/views.py (who owns a view's storage).
"""
from __future__ import annotations

import weakref

from ..ir import node as ir
from ..ir import walk
from ..ir.node import Node
from ..ir.ops import Op
from ..memo import Role, register
from ..schedule.items import AssignCycleError
from . import realize as engine


class LiveHolders:
    """The live holders of a group, weakly held, iterated in the order they were added. A WeakSet
    iterates in address order, which changes from one process to the next: what is realized
    together (stale readers, pending copies) would be scheduled in a different order each run.
    A dict of weak references keeps insertion order; a reference equals another to the same
    holder, so adding one twice keeps the first (and its place)."""

    def __init__(self, holders=()):
        refs: dict[weakref.ref, None] = {}
        self._refs, self._forget = refs, lambda ref: refs.pop(ref, None)  # one callback for all
        for holder in holders:
            self.add(holder)

    def add(self, holder) -> None:
        self._refs[weakref.ref(holder, self._forget)] = None

    def __iter__(self):
        return iter([t for t in map(weakref.ref.__call__, list(self._refs)) if t is not None])

    def __len__(self) -> int:
        return len(self._refs)

    def __contains__(self, holder) -> bool:
        return weakref.ref(holder) in self._refs


# Buffer -> weakref to the holder that may write it in place (the first to get it)
_OWNERS = register("buffer owners", weakref.WeakKeyDictionary(), Role.LIVE)


def owner_of(buffer):
    """The live holder that owns `buffer`, else None."""
    ref = _OWNERS.get(buffer)
    return ref() if ref is not None else None


def claim(buffer, holder) -> None:
    """`holder` owns `buffer` unless a live holder owns it already."""
    if owner_of(buffer) is None:
        _OWNERS[buffer] = weakref.ref(holder)


def owns(holder) -> bool:
    """Whether `holder` (realized) may write its buffer in place: nobody else owns it."""
    owner = owner_of(holder.node.buffer)
    return owner is None or owner is holder


def stale_readers(holders: list, live) -> tuple[list, list]:
    """Live lazy holders outside `holders` that read a buffer which an assign among `holders`
    overwrites, and the BUFFER nodes (old versions) they read. A lazy value means the value when
    it was written down (PyTorch computed it then): `w.grad` after an optimizer step is the
    gradient at the old weights, a BatchNorm's running mean comes from them. realize_holders
    copies each such buffer before the assign and points its old version at the copy: one copy
    per weight, where realizing the readers computed gradients nobody asked for (an input's)."""
    computed, pruned = engine.FreshRealized(engine.REALIZED), {}

    def sources(node: Node):  # an assign reads its target's new value; a computed value its buffer
        found = pruned.get(node)
        if found is None:
            done = computed.get(node)
            found = pruned[node] = ((done,) if done is not node else ()) if done is not None \
                else node.src[1:] if node.op is Op.ASSIGN else node.src
        return found
    # dicts as ordered sets: the copies of the targets are made in graph order, every run
    assigns = dict.fromkeys(n for n in ir.toposort([t.node for t in holders], sources)
                            if n.op is Op.ASSIGN and n not in computed)
    targets = dict.fromkeys(n.src[0] for n in assigns)
    if not targets:
        return [], []
    chosen = {id(t) for t in holders}
    everyone = list(live)
    lazy = [t for t in everyone if id(t) not in chosen
            and t.node.op not in (Op.BUFFER, Op.CONST)]
    reading: set = set()
    for node in ir.toposort([t.node for t in lazy], sources):
        if node in assigns:  # runs now: a holder of it reads the new value
            continue
        if node in targets or any(s in reading for s in pruned[node]):
            reading.add(node)
    readers = [t for t in lazy if t.node in reading]
    # a value that folded to the target's BUFFER node itself (t + 0, Tensor(t)), realized
    # here or not, is a value of its own, not a view (views were re-pointed when written): it
    # keeps the old version too
    held = [t for t in everyone if t.node in targets]
    readers += [t for t in held if id(t) not in chosen]
    reading.update(t.node for t in held)
    return readers, [n for n in targets if n in reading] if readers or held else []


def own_buffers(holders: list, nodes: list) -> list:
    """The BUFFER node each lazy holder in `holders` keeps: its own. Equal lazy values are one
    node (hash-consing) and realize to one buffer (REALIZED), so a holder whose value landed in
    a buffer another live holder owns gets a copy of its own; otherwise two parameters that
    start equal would be one node to autograd and one buffer to assign."""
    nodes, claims = list(nodes), {}
    pending = range(len(holders))
    while pending:
        shared = []
        for i in pending:
            t, n = holders[i], nodes[i]
            if t.node.op is Op.BUFFER:  # already realized: keeps the buffer it reads
                continue
            holder = claims.get(n.buffer)
            if holder is None:
                holder = owner_of(n.buffer)
            if holder is None or holder is t:
                claims[n.buffer] = t
            else:
                shared.append(i)
        if shared:  # a copy can itself be a value another holder owns (a clone): check again
            copies = engine.realize([ir.copy_to(nodes[i], nodes[i].device) for i in shared])
            for i, copy in zip(shared, copies):
                nodes[i] = copy
        pending = shared
    return nodes


class _StopAtRealized(dict):
    """A rewrite memo that keeps every computed node as it is (the walk stops there)."""

    def __init__(self, computed):
        super().__init__()
        self.computed = computed

    def __contains__(self, node) -> bool:
        return dict.__contains__(self, node) or self.computed.get(node) is not None

    def __missing__(self, node):
        return node


def _realize_untangled(nodes: list, computed_outside, assigned: dict) -> list:
    """engine.realize, where a kernel that would read both a buffer's old value and (through
    other kernels) the assign overwriting it (v = t * 1; t.assign(...); t - v) first gets the
    old values of the assigns' targets copied, and reads the copies: the assigns still write
    their targets. Rare: ordering alone serves every graph without such a cycle."""
    try:
        return engine.realize(nodes, computed_outside, assigned)
    except AssignCycleError:
        pass
    computed = engine.FreshRealized(engine.REALIZED)
    graph = ir.toposort(nodes, lambda n: () if computed.get(n) is not None else n.src)
    targets = list(dict.fromkeys(n.src[0] for n in graph if n.op is Op.ASSIGN))
    swap = dict(zip(targets, engine.realize([ir.copy_to(t, t.device) for t in targets],
                                            computed_outside)))

    def reread(node: Node, sources: list) -> Node:
        if node in swap:
            return swap[node]
        if node.op is Op.ASSIGN:  # the write still lands in the target
            sources = [node.src[0], *sources[1:]]
        return walk.rebuilt(node, sources)
    memo = _StopAtRealized(computed)
    untangled = walk.rewrite(nodes, reread, memo)
    done = engine.realize(untangled, computed_outside, assigned)
    for old, new in list(memo.items()):
        if old.op is Op.ASSIGN and new in assigned:  # its holders' node: done too
            assigned[old] = assigned[new]
            if not engine.STATE.captures:
                engine.REALIZED[old] = assigned[new]
    return done


def realize_holders(holders: list, live, keeps_graph: list, computed_outside=None,
                    captured_readers=None) -> list:
    """Realize `holders` (live: every live holder, for stale readers and assigns done under
    another value): snapshot the old versions stale readers read, run the schedule, give each
    holder a buffer of its own and record who owns it. `keeps_graph[i]`: holder i's expression
    stays alive only as long as its new BUFFER node (autograd steps from one to the other).
    While a TinyJit captures, `captured_readers(readers)` picks the stale readers the step
    realizes itself. Returns (holders, BUFFER nodes): holders may have grown by those readers;
    the caller points each at its node. The one engine call of Tensor.realize."""
    readers, olds = stale_readers(holders, live)
    if captured_readers is not None:  # the step's own readers get buffers each replay rewrites
        extra = [t for t in captured_readers(readers) if t.node.op is not Op.BUFFER]
        holders, olds, keeps_graph = holders + extra, [], list(keeps_graph) + [False] * len(extra)
    assigned: dict = {}
    nodes = _realize_untangled([t.node for t in holders] + [ir.copy_to(n, n.device)
                                                            for n in olds],
                               computed_outside, assigned)
    copies = dict(zip(olds, nodes[len(holders):]))
    for old, copy in copies.items():
        engine.REALIZED[old] = copy  # later reads of the old version read the copy
    for t in readers:
        if t.node in copies:  # it held the old version's BUFFER node: it holds the copy now
            t.node = copies[t.node]
    nodes = [copies.get(n, n) for n in nodes[:len(holders)]]  # the same, asked for by name
    nodes = own_buffers(holders, nodes)
    if assigned:  # an assign that ran under another value is done for its holder too
        chosen = {id(t) for t in holders}
        for t in list(live):
            if id(t) not in chosen and t.node in assigned:
                t.node = assigned[t.node]
    for t, n, keep in zip(holders, nodes, keeps_graph):
        if keep and t.node is not n:
            engine.REALIZED.hold_weakly(t.node)  # n keeps t.node alive, not the reverse
        claim(n.buffer, t)   # the first holder to get a buffer owns it
    return holders, nodes
