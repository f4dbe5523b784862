"""The scheduler: cut a lazy graph into kernels and record why each boundary exists.

`schedule(outputs, options) -> Schedule`. It picks the set of nodes that must live in buffers
(requested outputs, contiguous/assign/copy, and reduces the rules cannot fuse), fuses everything
else into the kernel of the buffer that consumes it, and lowers each kernel to a kernel AST:
a SINK of STOREs whose values are ALU trees over LOADs, where every movement op has become a
view (ir/view.py) on a LOAD. Each producer -> consumer edge yields a FusionDecision. The cut is
the same for every device; then target-dependent rewrites run (packing.py: matmul panels).
Called by the engine (realize) and by the inspector for "what if" schedules.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..dtype import dtypes
from ..errors import TinylabError
from ..ir import node as ir
from ..ir.node import Node
from ..ir.ops import ALU, MOVEMENT, REDUCE, Op
from ..ir.view import ViewStack
from .fusion import FusionDecision, Reason, SchedulerOptions
from .packing import pack_matmuls
from .rewrite import fold_nested_reduces

# a producer recomputed at least this many times per value is checked against recompute_limit
RECOMPUTE_FACTOR = 4
# ...and, however short, against this many ALU ops redone per value: a relu read by a conv
# through its sliding windows (~500 copies) costs more recomputed than one pass to a buffer
RECOMPUTE_WORK = 128
# ops whose value at 0 is not 0: under a pad they need an explicit validity mask
NOT_ZERO_AT_ZERO = {Op.EXP2, Op.LOG2, Op.RECIPROCAL}


@dataclass(eq=False)
class BufferSlot:
    """A buffer the schedule reads or writes: an existing one, or one a kernel will fill."""
    shape: tuple
    dtype: object
    device: str
    node: Node            # the lazy node whose value it holds
    existing: object = None  # the runtime Buffer if it already exists

    @property
    def nbytes(self) -> int:
        return ir.prod(self.shape) * self.dtype.itemsize

    def __repr__(self):
        state = "existing" if self.existing is not None else "new"
        return f"<slot {self.dtype.name}{list(self.shape)} {state}>"


@dataclass(eq=False)
class ScheduleItem:
    kind: str                      # "kernel" or "copy"
    output: Node                   # the lazy node this item materializes
    slots: list[BufferSlot]        # buffer index -> slot; outputs first
    ast: Node | None = None        # kernel AST (SINK) for kind == "kernel"
    fused: list[Node] = field(default_factory=list)  # lazy nodes computed in this kernel
    decisions: list[FusionDecision] = field(default_factory=list)
    reads_old: set = field(default_factory=set)  # BUFFER leaves read (for assign ordering)
    reads: set = field(default_factory=set)      # lazy leaves read (cut nodes and buffers)

    @property
    def full_shape(self) -> tuple:
        reduces = [n for n in self.ast.toposort() if n.op in REDUCE]
        return reduces[0].src[0].shape if reduces else self.ast.src[0].shape


@dataclass
class Schedule:
    items: list[ScheduleItem]
    decisions: list[FusionDecision]
    outputs: dict                  # requested node -> BufferSlot that holds it
    options: SchedulerOptions
    leaves: dict = field(default_factory=dict)  # realized nodes it read -> their BUFFER node
    graph_outputs: list = field(default_factory=list)  # the outputs after the graph rewrites
    matmul_panel: object = None    # device -> panel width (packing.py), to schedule again

    @property
    def kernels(self) -> list[ScheduleItem]:
        return [i for i in self.items if i.kind == "kernel"]

    def __len__(self):
        return len(self.items)

    def __str__(self) -> str:
        from .printer import print_schedule
        return print_schedule(self)


class ScheduleError(TinylabError, RuntimeError):
    pass


# ---- graph helpers ---------------------------------------------------------------------------
def _is_leaf(node: Node, realized) -> bool:
    return node.op in (Op.BUFFER, Op.CONST) or node in realized


def _graph(outputs, realized) -> list[Node]:
    """Nodes under outputs, sources first, not descending below realized nodes."""
    order, seen = [], set()
    stack = [(n, False) for n in reversed(outputs)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        if node in realized:
            continue
        stack.extend((s, False) for s in reversed(node.src) if s not in seen)
    return order


def _kernel_root(node: Node) -> Node:
    """The value a materialized node's kernel computes."""
    if node.op is Op.CONTIGUOUS:
        return node.src[0]
    if node.op is Op.ASSIGN:
        return node.src[1]
    return node


def _reshape_like_permute(node: Node) -> bool:
    """A permute that only moves size-1 axes is a reshape in disguise."""
    big = [i for i in node.order if node.src[0].shape[i] != 1]
    return big == sorted(big)


@dataclass
class _Region:
    root: Node
    store_chain: tuple = ()  # reshapes/permutes between the kernel's reduce and its output
    nodes: set = field(default_factory=set)
    pre: set = field(default_factory=set)     # nodes computed inside the reduce loop
    reduce: Node | None = None
    leaves: set = field(default_factory=set)  # buffers read (BUFFER leaves and cut nodes)


def _fused_ops(node: Node, cut: dict, realized, memo: dict) -> int:
    """ALU ops a kernel recomputes to get `node` (its fused subtree, up to buffers)."""
    if node in memo:
        return memo[node]
    seen, stack, count = set(), [node], 0
    while stack:
        n = stack.pop()
        if n in seen or (n is not node and (n in cut or _is_leaf(n, realized))) or n.op in REDUCE:
            continue
        seen.add(n)
        count += n.op in ALU
        stack.extend(n.src)
    memo[node] = count
    return count


def _expensive_recompute(node: Node, region: _Region, mode: str, cut, realized, options,
                         memo: dict):
    """(reason, detail) when an elementwise producer read through a broadcast would be
    recomputed for every broadcast copy and costs more than the options allow."""
    if not options.recompute_limit or node.op not in ALU:
        return None
    space = region.reduce.src[0].numel if mode == "pre" and region.reduce is not None \
        else _kernel_root(region.root).numel
    factor = space // max(node.numel, 1)
    if factor < RECOMPUTE_FACTOR:
        return None
    ops = _fused_ops(node, cut, realized, memo)
    if ops < options.recompute_limit and ops * factor < RECOMPUTE_WORK:
        return None
    return (Reason.EXPENSIVE_RECOMPUTE,
            f"{ops} ops would be recomputed {factor} times each (limit {options.recompute_limit} "
            f"ops, or {RECOMPUTE_WORK} ops per value)")


def _walk(out: Node, cut: dict, realized, violations: dict, options=None) -> _Region:
    """Collect the nodes fused into `out`'s kernel and note nodes that must be cut instead."""
    options = options or SchedulerOptions()
    memo: dict = {}
    region = _Region(out)
    root = _kernel_root(out)
    chain, below = _store_chain(root, cut, realized)
    if chain and below is not out:  # a reduce stored in a reader's order: the store does it
        region.store_chain = chain
        region.nodes.update(chain)
        root = below
    stack = [(root, "post", ())]
    seen = set()
    while stack:
        node, mode, path = stack.pop()
        if (node, mode) in seen:
            continue
        seen.add((node, mode))
        if node is not out and (node in cut or _is_leaf(node, realized)):
            if node.op is not Op.CONST:
                region.leaves.add(node)
            continue
        region.nodes.add(node)
        if mode == "pre":
            region.pre.add(node)
        if node.op in REDUCE:
            problem = _reduce_problem(node, mode, path, region)
            reordered = _reordered_store(path, node, mode) if mode != "post" else None
            if reordered is not None and reordered not in cut:
                violations.setdefault(reordered, (Reason.VIEW_OF_REDUCE,
                                                  f"the reduce is stored in the order its reader "
                                                  f"walks it ({_chain_text(path, reordered)})"))
                continue
            if problem is not None:
                violations.setdefault(node, problem)
                region.nodes.discard(node)
                region.leaves.add(node)
                continue
            region.reduce = node
            stack.append((node.src[0], "pre", ()))
            continue
        if node.op is Op.EXPAND and mode != "dirty":
            source = _through_movement(node.src[0])
            if source is not out and source not in cut and not _is_leaf(source, realized):
                problem = _expensive_recompute(source, region, mode, cut, realized, options, memo)
                if problem is not None:
                    violations.setdefault(source, problem)
                    region.leaves.add(source)
                    continue
        if node.op in MOVEMENT and mode != "pre":
            clean = node.op is Op.RESHAPE or (node.op is Op.PERMUTE and _reshape_like_permute(node))
            next_mode = mode if clean else "dirty"
            stack.append((node.src[0], next_mode, path + (node,)))
            continue
        below = path + (node,) if node.op in MOVEMENT else path
        for src in reversed(node.src):
            stack.append((src, mode, below))
    return region


def _chain_text(path: tuple, top: Node) -> str:
    return ", ".join(f"{m.op.name.lower()} {m.arg}" for m in path[path.index(top):])


def _store_chain(node: Node, cut: dict, realized) -> tuple[tuple, Node]:
    """(reshape/permute nodes from `node` down to a reduce, the reduce), or ((), node)."""
    chain = []
    while node.op in (Op.RESHAPE, Op.PERMUTE) and node not in realized and \
            (not chain or node not in cut):
        chain.append(node)
        node = node.src[0]
    if chain and node.op in REDUCE and node not in realized and node not in cut:
        if any(n.op is Op.PERMUTE and not _reshape_like_permute(n) for n in chain):
            return tuple(chain), node
    return (), node


def _reordered_store(path: tuple, node: Node, mode: str):
    """The top of the reshape/permute chain right above a reduce, if it reorders the reduce:
    cutting there stores the reduce in the order its reader walks it."""
    top = None
    for movement in reversed(path):
        if movement.op not in (Op.RESHAPE, Op.PERMUTE):
            break
        top = movement
    if top is None or (mode == "dirty" and top is path[0]):
        return None
    chain = path[path.index(top):]
    if any(m.op is Op.PERMUTE and not _reshape_like_permute(m) for m in chain):
        return top
    return None


def _reduce_problem(node: Node, mode: str, path: tuple, region: _Region):
    """(reason, detail) if this reduce cannot be the kernel's reduce, else None."""
    if mode == "pre":
        return Reason.REDUCE_INTO_REDUCE, None
    if mode == "dirty":
        expands = [m for m in path if m.op is Op.EXPAND]
        if expands:
            e = expands[-1]
            return (Reason.BROADCAST_REDUCE,
                    f"{node.op.name} over axes {node.axes} is expanded {e.src[0].shape}->{e.shape}"
                    f" back across the reduced axes")
        ops = ", ".join(m.op.name.lower() for m in path if m.op is not Op.RESHAPE)
        return Reason.VIEW_OF_REDUCE, f"the reduce result is read through {ops}"
    if region.reduce is not None and region.reduce is not node:
        other = region.reduce
        return (Reason.MULTIPLE_REDUCES,
                f"the kernel already reduces {other.op.name}{list(other.src[0].shape)}")
    return None


# ---- choosing what to materialize -------------------------------------------------------------
def _initial_cuts(graph, outputs, realized, options) -> dict:
    cut: dict[Node, tuple] = {}
    consumers = _consumers(graph, realized)
    for node in graph:
        if node in realized or node.op in (Op.BUFFER, Op.CONST):
            continue
        if node.op is Op.CONTIGUOUS:
            cut[node] = (Reason.CONTIGUOUS, None)
        elif node.op is Op.ASSIGN:
            cut[node] = (Reason.ASSIGN, None)
        elif node.op is Op.COPY:
            cut[node] = (Reason.DEVICE_COPY, f"copy to {node.arg}")
            if not _is_leaf(node.src[0], realized):
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
                producer = _through_movement(node.src[0])
                if not _is_leaf(producer, realized):
                    cut.setdefault(producer, (Reason.RULE_OFF, "fuse_into_reduce is off"))
    for out in outputs:
        if not _is_leaf(out, realized) or out.op is Op.CONST:
            cut.setdefault(out, (Reason.REQUESTED, None))
    return cut


def _through_movement(node: Node) -> Node:
    while node.op in MOVEMENT:
        node = node.src[0]
    return node


def _consumers(graph, realized) -> dict:
    out: dict[Node, list] = {}
    for node in graph:
        if node in realized:
            continue
        for s in node.src:
            out.setdefault(s, []).append(node)
    return out


def _regions(cut: dict, realized, options) -> tuple[dict, dict]:
    violations: dict = {}
    regions = {}
    for out in cut:
        if out.op is Op.COPY or _is_alias(out, cut, realized):
            continue
        regions[out] = _walk(out, cut, realized, violations, options)
    return regions, violations


def _is_alias(node: Node, cut, realized) -> bool:
    """contiguous() of something already in a plain buffer needs no kernel."""
    return node.op is Op.CONTIGUOUS and (node.src[0] in cut or _is_leaf(node.src[0], realized)) \
        and node.src[0].op is not Op.CONST


def _choose_cuts(graph, outputs, realized, options):
    cut = _initial_cuts(graph, outputs, realized, options)
    for _ in range(len(graph) + 1):
        regions, violations = _regions(cut, realized, options)
        if not violations:
            violations = (_shared_reduces(regions) or
                          _shared_expensive(regions, cut, realized, options) or
                          _buffer_limit(regions, options) or
                          _assign_hazards(regions, cut, realized))
        if not violations:
            return cut, regions
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


def _shared_expensive(regions, cut, realized, options) -> dict:
    """Long elementwise computations that several kernels would each redo (a random-number hash
    read by every kernel of a softmax, say) get a buffer instead."""
    if not options.recompute_limit:
        return {}
    kernels: dict[Node, int] = {}
    for region in regions.values():
        for node in region.nodes:
            if node.op in ALU and node is not _kernel_root(region.root):
                kernels[node] = kernels.get(node, 0) + 1
    memo: dict = {}
    shared = {n for n, k in kernels.items() if k > 1
              and _fused_ops(n, cut, realized, memo) >= 2 * options.recompute_limit}
    inside = {s for n in shared for s in n.toposort() if s is not n}
    return {n: (Reason.EXPENSIVE_RECOMPUTE, f"{_fused_ops(n, cut, realized, memo)} ops would be "
                f"recomputed in {kernels[n]} kernels")
            for n in shared if n not in inside}


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


def _leaves_under(node: Node, region: _Region) -> set:
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


def _assign_hazards(regions, cut, realized) -> dict:
    """An assign whose kernel would read its own target at other indices than it writes
    (x.assign(x.flip(0)) reads x[7] while x[0] is already overwritten, or not yet) gets its
    value computed into a buffer of its own first; the assign then copies it. So do assigns
    whose kernels read each other's targets: each would have to run before the other (an SGD
    step's updates of a BatchNorm weight and bias, whose gradients read both)."""
    assigns = {}  # ASSIGN node -> (value, target buffer, {buffer read: its views})
    for node, region in regions.items():
        value = node.src[1] if node.op is Op.ASSIGN else None
        if value is not None and value not in cut and not _is_leaf(value, realized):
            assigns[node] = (value, _buffer_of(node.src[0], realized),
                             _buffer_reads(value, region, realized))
    out = {}
    for node, (value, target, reads) in assigns.items():
        written = ViewStack.contiguous(node.shape)
        bad = [view for view in reads.get(target, ()) if view != written]
        if bad:
            how = "inside a reduce loop" if None in bad else f"through {bad[0]}"
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


def _buffer_of(node: Node, realized):
    leaf = realized.get(node, node)
    return leaf.buffer if leaf.op is Op.BUFFER else None


def _buffer_reads(value: Node, region: _Region, realized) -> dict:
    """{buffer: the views through which `value`'s kernel reads it (None: in a reduce loop)}."""
    reads: dict = {}
    seen: set = set()
    stack = [(value, (), False)]
    while stack:
        node, movs, in_reduce = stack.pop()
        if (node, movs, in_reduce) in seen:
            continue
        seen.add((node, movs, in_reduce))
        if node in region.leaves or _is_leaf(node, realized):
            buffer = _buffer_of(node, realized)
            if buffer is not None:
                view = None if in_reduce else _view_through(node.shape, movs)
                reads.setdefault(buffer, []).append(view)
        elif node in region.nodes:
            if node.op in MOVEMENT:
                stack.append((node.src[0], ((node.op, node.arg),) + movs, in_reduce))
            elif node.op in REDUCE:
                stack.append((node.src[0], (), True))
            else:
                stack.extend((src, movs, in_reduce) for src in node.src)
    return reads


# ---- decisions ---------------------------------------------------------------------------------
def _decisions(regions, cut, graph, realized, outputs) -> tuple[list, dict]:
    consumers = _consumers(graph, realized)
    in_regions: dict[Node, int] = {}
    for region in regions.values():
        for n in region.nodes:
            in_regions[n] = in_regions.get(n, 0) + 1
    seen: dict = {}
    per_region: dict[Node, list] = {}
    for out, region in regions.items():
        mine = per_region.setdefault(out, [])
        consumers_here = sorted(region.nodes, key=_order_key(graph))
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


def _order_key(graph):
    index = {n: i for i, n in enumerate(graph)}
    return lambda n: index.get(n, -1)


def _decide(producer, consumer, region, cut, consumers, in_regions) -> FusionDecision:
    if producer in cut and producer is not region.root:
        reason, detail = cut[producer]
        return FusionDecision(producer, consumer, False, reason,
                              _evidence(producer, consumer, reason, detail))
    if producer.op in MOVEMENT or consumer.op in MOVEMENT:
        reason = Reason.VIEW
    elif producer.op in REDUCE:
        reason = Reason.AFTER_REDUCE
    elif consumer.op in REDUCE or (producer in region.pre and consumer in region.pre):
        reason = Reason.INTO_REDUCE
    elif len(consumers.get(producer, ())) > 1 or in_regions.get(producer, 0) > 1:
        reason = Reason.RECOMPUTED
    else:
        reason = Reason.ELEMENTWISE
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


# ---- lowering a region to a kernel AST ---------------------------------------------------------
class _Lowerer:
    def __init__(self, region: _Region, cut, realized, slot_of):
        self.region, self.cut, self.realized, self.slot_of = region, cut, realized, slot_of
        self.slots: list[BufferSlot] = []
        self.memo: dict = {}
        self.reads_old: set = set()
        self.reads: set = set()

    def buffer_index(self, slot: BufferSlot) -> int:
        for i, s in enumerate(self.slots):
            if s is slot:
                return i
        self.slots.append(slot)
        return len(self.slots) - 1

    def view_of(self, node: Node, movs: tuple) -> ViewStack:
        return _view_through(node.shape, movs)

    def lower(self, node: Node, movs: tuple) -> Node:
        key = (node, movs)
        if key not in self.memo:
            self.memo[key] = self._lower(node, movs)
        return self.memo[key]

    def _lower(self, node: Node, movs: tuple) -> Node:
        region = self.region
        if node.op is Op.CONST:
            view = self.view_of(node, movs)
            value = ir.const(node.value, node.dtype, view.shape)
            if any(v.mask is not None for v in view.views):
                return ir.alu(Op.WHERE, _valid(view), value, ir.const(0, node.dtype, view.shape))
            return value
        if node not in region.nodes:  # a buffer: load it through the accumulated view
            slot = self.slot_of(node)
            self.reads.add(node)
            leaf = self.realized.get(node, node)
            if leaf.op is Op.BUFFER:
                self.reads_old.add(leaf)
            view = self.view_of(node, movs)
            return Node(Op.LOAD, node.dtype, (), (self.buffer_index(slot), view), view.shape)
        if node.op in MOVEMENT:
            return self.lower(node.src[0], ((node.op, node.arg),) + movs)
        if node.op is Op.DETACH:
            return self.lower(node.src[0], movs)
        if node.op in REDUCE:
            source = self.lower(node.src[0], ())
            return Node(node.op, node.dtype, (source,), node.axes, node.shape)
        assert node.op in ALU, node
        srcs = [self.lower(s, movs) for s in node.src]
        if node.op in (Op.CAST, Op.BITCAST):
            value = ir.cast(srcs[0], node.dtype, bitcast=node.op is Op.BITCAST)
        else:
            value = ir.alu(node.op, *srcs)
        not_zero = node.op in NOT_ZERO_AT_ZERO or (node.op is Op.NEG and node.dtype.is_bool)
        if not_zero and movs:  # bool NEG is logical not: True where the padding reads False
            view = self.view_of(node, movs)
            if any(v.mask is not None for v in view.views):
                return ir.alu(Op.WHERE, _valid(view), value, value.const_like(0))
        return value


def _inverse_store(out_shape: tuple, chain: tuple) -> ViewStack:
    """Where each element of the reduce (chain[-1]'s source) lands in the output buffer, for an
    output made from it by the reshapes/permutes in `chain` (outermost first)."""
    view = ViewStack.contiguous(out_shape)
    for node in chain:
        if node.op is Op.PERMUTE:
            inverse = tuple(sorted(range(len(node.order)), key=lambda i: node.order[i]))
            view = view.permute(inverse)
        else:
            view = view.reshape(node.src[0].shape)
    return view


def _view_through(shape: tuple, movs: tuple) -> ViewStack:
    """The view a buffer of `shape` is read through after movement ops `movs` (innermost
    first)."""
    view = ViewStack.contiguous(shape)
    for op, arg in movs:
        view = _apply(view, op, arg)
    return view


def _apply(view: ViewStack, op: Op, arg) -> ViewStack:
    if op is Op.RESHAPE:
        return view.reshape(arg)
    if op is Op.PERMUTE:
        return view.permute(arg)
    if op is Op.EXPAND:
        return view.expand(arg)
    if op is Op.PAD:
        return view.pad(arg)
    if op is Op.SHRINK:
        return view.shrink(arg)
    return view.flip(arg)


def _valid(view: ViewStack) -> Node:
    return Node(Op.VALID, dtypes.bool, (), view, view.shape)


def _lower_region(region: _Region, out: Node, out_slot, cut, realized, slot_of) -> ScheduleItem:
    lowerer = _Lowerer(region, cut, realized, slot_of)
    lowerer.buffer_index(out_slot)
    root = _kernel_root(out)
    space = region.reduce.shape if region.reduce is not None else root.shape
    if region.store_chain:  # root = reshapes/permutes of the reduce: undo them in the store
        value = lowerer.lower(region.store_chain[-1].src[0], ())
        store_view = _inverse_store(out.shape, region.store_chain)
    else:
        movs = ((Op.RESHAPE, space),) if root.shape != space else ()
        value = lowerer.lower(root, movs)
        store_view = ViewStack.contiguous(out.shape).reshape(space)
    store = Node(Op.STORE, value.dtype, (value,), (0, store_view), space)
    sink = Node(Op.SINK, dtypes.void, (store,), None, ())
    fused = [n for n in region.nodes]
    return ScheduleItem("kernel", out, lowerer.slots, sink, fused, reads_old=lowerer.reads_old,
                        reads=lowerer.reads)


# ---- the entry point ----------------------------------------------------------------------------
def schedule(outputs, options: SchedulerOptions | None = None, realized=None,
             fuse: bool | None = None, matmul_panel: Callable | None = None) -> Schedule:
    """Cut the graph under `outputs` into kernels. `realized` maps nodes that already have a
    buffer to their BUFFER node; `fuse=False` is a shortcut for options.fuse;
    `matmul_panel(device)` is the panel width a device's renderer declares (packing.py)."""
    options = options or SchedulerOptions()
    if fuse is not None:
        options = options.with_(fuse=fuse)
    realized = realized or {}
    requested = list(dict.fromkeys(outputs))

    def cut_and_lower(graph_outputs: list) -> Schedule:
        return _schedule(requested, graph_outputs, options, realized, matmul_panel)

    sched = cut_and_lower(requested)
    if matmul_panel is not None and options.pack_matmuls:
        sched = pack_matmuls(sched, matmul_panel, cut_and_lower)
    return sched


def _schedule(requested: list, outputs: list, options: SchedulerOptions, realized,
              matmul_panel) -> Schedule:
    """The device-free schedule of `outputs` (the requested nodes, or a rewrite of them)."""
    folds = []
    if options.fold_reduces and options.fuse:
        outputs, folds = fold_nested_reduces(outputs, realized)
    graph = _graph(outputs, realized)
    cut, regions = _choose_cuts(graph, outputs, realized, options)
    decisions, per_region = _decisions(regions, cut, graph, realized, outputs)

    slots: dict = {}

    def slot_of(node: Node) -> BufferSlot:
        if node in realized:
            node = realized[node]
        if node.op is Op.BUFFER:
            key = id(node.buffer)
            if key not in slots:
                slots[key] = BufferSlot(node.shape, node.dtype, node.device, node, node.buffer)
            return slots[key]
        if node.op is Op.ASSIGN:
            return slot_of(node.src[0])
        if _is_alias(node, cut, realized):
            return slot_of(node.src[0])
        if node not in slots:
            slots[node] = BufferSlot(node.shape, node.dtype, node.device, node)
        return slots[node]

    items = []
    for node in graph:
        if node not in cut or _is_alias(node, cut, realized):
            continue
        if node.op is Op.COPY:
            source = node.src[0]
            leaf = realized.get(source, source)
            items.append(ScheduleItem("copy", node, [slot_of(node), slot_of(source)],
                                      reads={source},
                                      reads_old={leaf} if leaf.op is Op.BUFFER else set()))
            continue
        if node.op is Op.ASSIGN and not _is_leaf(node.src[0], realized):
            raise ScheduleError("assign target must be a realized buffer; realize it first")
        item = _lower_region(regions[node], node, slot_of(node), cut, realized, slot_of)
        item.decisions = per_region.get(node, [])
        items.append(item)
    items = _order(items, realized)
    leaves = {n: realized[n] for n in graph if n in realized}
    slots_out = {r: slot_of(o) for r, o in zip(requested, outputs)}
    return Schedule(items, folds + decisions, slots_out, options, leaves, outputs, matmul_panel)


def _order(items: list[ScheduleItem], realized) -> list[ScheduleItem]:
    """Topological order: producers first; readers of a buffer's old value before its assign."""
    producer = {item.output: item for item in items}

    def source_item(node: Node):
        while node not in producer and node.op is Op.CONTIGUOUS:  # an alias
            node = node.src[0]
        return producer.get(node)

    deps: dict[int, set] = {id(i): set() for i in items}
    for item in items:
        for node in item.reads:
            p = source_item(node)
            if p is not None and p is not item:
                deps[id(item)].add(id(p))
    for item in items:
        if item.output.op is not Op.ASSIGN:
            continue
        target = item.output.src[0]
        target = realized.get(target, target)
        for other in items:
            if other is not item and target in other.reads_old:
                deps[id(item)].add(id(other))
    ordered, done = [], set()
    pending = list(items)
    while pending:
        ready = [i for i in pending if deps[id(i)] <= done]
        if not ready:
            raise ScheduleError("cyclic dependency between an assign and a read of its old value")
        for i in ready:
            ordered.append(i)
            done.add(id(i))
        pending = [i for i in pending if id(i) not in done]
    return ordered
