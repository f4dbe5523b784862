"""Lowering a region to a kernel AST: a SINK of one STORE whose value is an ALU tree over LOADs,
each LOAD reading a buffer through the view its movement ops make (masked where padded), the
reduce in place. `lower_region(region, out, out_slot, cut, realized, slot_of) -> ScheduleItem`.
The walk keeps its own stack, so an expression of any depth lowers at the default recursion limit.
It records each node's view and buffer; the kernel's normal axes (axes.py) are chosen from those
views, and the AST is then built once, in them: the planner (codegen/plan.py) takes it as it is.
"""
from __future__ import annotations

from ..dtype import dtypes
from ..ir import node as ir
from ..ir.node import Node
from ..ir.ops import ALU, MOVEMENT, NOT_ZERO_AT_ZERO, REDUCE, Op
from ..ir.symbolic import unbind_args
from ..ir.view import ViewStack
from .axes import RAW_AXES, NormalAxes, normal_axes
from .graph import MovementTable, Movements, buffer_leaf, kernel_root
from .items import BufferSlot, ItemKind, ScheduleItem
from .regions import Region


class _Lowerer:
    def __init__(self, region: Region, cut, realized, slot_of):
        self.region, self.cut, self.realized, self.slot_of = region, cut, realized, slot_of
        self.slots: list[BufferSlot] = []
        self.memo: dict = {}  # (node, movements above it) -> its record's number
        self.records: list = []  # (kind, lazy node, source record numbers, data), sources first
        self.views: list = []    # the views of its LOADs and VALID masks, as lowered
        self.reduce: Node | None = None  # the first reduce recorded
        self.movements = MovementTable()
        self.reads_old: set = set()
        self.reads: set = set()
        self.var_vals: dict = {}  # the kernel AST holds unbound variables; their values go here

    def unbound(self, value):
        return unbind_args(value, self.var_vals)

    def buffer_index(self, slot: BufferSlot) -> int:
        for i, s in enumerate(self.slots):
            if s is slot:
                return i
        self.slots.append(slot)
        return len(self.slots) - 1

    def view_of(self, node: Node, movs: Movements | None) -> ViewStack:
        return self.movements.view(self.unbound(node.shape), movs)

    def lower(self, node: Node, movs: Movements | None) -> int:
        """The record number of `node` read through `movs`. An explicit stack, not recursion
        (a chain of thousands of ops is as deep): each (node, movs) pair is expanded in the order
        a recursive walk would reach it, sources left to right, so buffer slots and variables
        are numbered the same."""
        memo, root = self.memo, (node, movs)
        if root in memo:
            return memo[root]
        stack: list = [(node, movs, None)]
        while stack:
            node, movs, inputs = stack.pop()
            if inputs is None:
                if (node, movs) in memo:
                    continue
                inputs = self._inputs(node, movs)
                pending = [key for key in inputs if key not in memo]
                if pending:
                    stack.append((node, movs, inputs))
                    stack.extend((n, m, None) for n, m in reversed(pending))
                    continue
            memo[(node, movs)] = self._record(node, movs, [memo[key] for key in inputs])
        return memo[root]

    def _inputs(self, node: Node, movs: Movements | None) -> tuple:
        """The (node, movs) pairs `node`'s lowering is built from."""
        if node.op is Op.CONST or node not in self.region.nodes:
            return ()
        if node.op in MOVEMENT:
            return ((node.src[0], self.movements.push(node.op, self.unbound(node.arg), movs)),)
        if node.op is Op.DETACH:
            return ((node.src[0], movs),)
        if node.op in REDUCE:
            return ((node.src[0], None),)
        return tuple((s, movs) for s in node.src)

    def _record(self, node: Node, movs: Movements | None, srcs: list) -> int:
        """The record of `node` (its view, buffer, masked or not) given its `_inputs`' records:
        everything the kernel AST node is built from but the axes (see `build`)."""
        if node.op is Op.CONST:
            view = self.view_of(node, movs)
            masked = _masked(view)
            if masked:
                self.views.append(view)
            return self._add(_CONST, node, srcs, (view, masked))
        if node not in self.region.nodes:  # a buffer: load it through the accumulated view
            slot = self.slot_of(node)
            self.reads.add(node)
            leaf = buffer_leaf(node, self.realized, self.cut)
            if leaf.op is Op.BUFFER:
                self.reads_old.add(leaf)
            view = self.view_of(node, movs)
            self.views.append(view)
            return self._add(_LOAD, node, srcs, (self.buffer_index(slot), view))
        if node.op in MOVEMENT or node.op is Op.DETACH:
            return srcs[0]
        if node.op in REDUCE:
            self.reduce = self.reduce or node
            return self._add(_REDUCE, node, srcs, self.unbound(node.shape))
        assert node.op in ALU, node
        # f(0) != 0 (the row's not_zero_at_zero): under a pad it needs an explicit validity mask
        not_zero = node.op in NOT_ZERO_AT_ZERO or (node.op is Op.NEG and node.dtype.is_bool)
        view = None
        if not_zero and movs is not None:  # bool NEG is logical not: True where padding reads False
            view = self.view_of(node, movs)
            view = view if _masked(view) else None
            if view is not None:
                self.views.append(view)
        return self._add(_ALU, node, srcs, view)

    def _add(self, kind: int, node: Node, srcs: list, data) -> int:
        self.records.append((kind, node, srcs, data))
        return len(self.records) - 1

    def build(self, axes) -> tuple[list[Node], bool]:
        """(each record's kernel-AST node in `axes`, whether a WHERE on a constant dropped a
        branch: its views then are not all in the AST)."""
        nodes: list[Node] = []
        dropped = False
        for kind, node, srcs, data in self.records:
            args = [nodes[i] for i in srcs]
            if kind == _CONST:
                view, masked = data
                value = ir.const(node.value, node.dtype, axes.const_shape(view.shape))
                if masked:
                    value = ir.alu(Op.WHERE, _valid(axes.view(view)), value, value.const_like(0))
            elif kind == _LOAD:
                view = axes.view(data[1])
                value = Node(Op.LOAD, node.dtype, (), (data[0], view), view.shape)
            elif kind == _REDUCE:
                reduce_axes, shape = axes.reduce(node.axes, data)
                value = Node(node.op, node.dtype, (args[0],), reduce_axes, shape)
            elif node.op in (Op.CAST, Op.BITCAST):
                value = ir.cast(args[0], node.dtype, bitcast=node.op is Op.BITCAST)
            else:
                dropped = dropped or (node.op is Op.WHERE and args[0].op is Op.CONST)
                value = ir.alu(node.op, *args)
            if kind == _ALU and data is not None:
                value = ir.alu(Op.WHERE, _valid(axes.view(data)), value, value.const_like(0))
            nodes.append(value)
        return nodes, dropped


_CONST, _LOAD, _REDUCE, _ALU = range(4)  # what a lowering record holds


def _masked(view: ViewStack) -> bool:
    return any(v.mask is not None for v in view.views)


def _inverse_store(out_shape: tuple, chain: tuple, unbound) -> ViewStack:
    """Where each element of the reduce (chain[-1]'s source) lands in the output buffer, for an
    output made from it by the reshapes/permutes in `chain` (outermost first)."""
    view = ViewStack.contiguous(unbound(out_shape))
    for node in chain:
        if node.op is Op.PERMUTE:
            inverse = ir.inverse_permutation(node.order)
            view = view.permute(inverse)
        else:
            view = view.reshape(unbound(node.src[0].shape))
    return view


def _valid(view: ViewStack) -> Node:
    return Node(Op.VALID, dtypes.bool, (), view, view.shape)


def lower_region(region: Region, out: Node, out_slot, cut, realized, slot_of) -> ScheduleItem:
    lowerer = _Lowerer(region, cut, realized, slot_of)
    lowerer.buffer_index(out_slot)
    root = kernel_root(out)
    bound_space = region.reduce.shape if region.reduce is not None else root.shape
    space = lowerer.unbound(bound_space)
    if region.store_chain:  # root = reshapes/permutes of the reduce: undo them in the store
        value = lowerer.lower(region.store_chain[-1].src[0], None)
        store_view = _inverse_store(out.shape, region.store_chain, lowerer.unbound)
    else:
        movs = lowerer.movements.push(Op.RESHAPE, space, None) if root.shape != bound_space \
            else None
        value = lowerer.lower(root, movs)
        store_view = ViewStack.contiguous(lowerer.unbound(out.shape)).reshape(space)
    full, axes = _axes(lowerer, space, store_view)
    nodes, dropped = lowerer.build(axes)
    if dropped:  # a branch is gone: the axes come from the views the AST keeps
        raw = _sink(lowerer.build(RAW_AXES)[0][value], store_view, RAW_AXES)
        full, axes = _axes_of(raw)
        nodes, _ = lowerer.build(axes)
    sink = _sink(nodes[value], store_view, axes)
    fused = list(region.nodes)
    return ScheduleItem(ItemKind.KERNEL, out, lowerer.slots, sink, fused, reads_old=lowerer.reads_old,
                        reads=lowerer.reads, var_vals=lowerer.var_vals, full_shape=full)


def _sink(value: Node, store_view: ViewStack, axes) -> Node:
    view = axes.view(store_view)
    store = Node(Op.STORE, value.dtype, (value,), (0, view), view.shape)
    return Node(Op.SINK, dtypes.void, (store,), None, ())


def _axes(lowerer: _Lowerer, space: tuple, store_view: ViewStack) -> tuple[tuple, NormalAxes]:
    """(the iteration space as lowered, the normal axes) from the walk's records: every one is
    in the AST (nothing dropped)."""
    reduce = lowerer.reduce
    if reduce is None:
        return space, normal_axes(space, (), lowerer.views + [store_view])
    full = lowerer.unbound(reduce.src[0].shape)
    return full, normal_axes(full, reduce.axes, lowerer.views + [store_view])


def _axes_of(raw: Node) -> tuple[tuple, NormalAxes]:
    """(the iteration space, the normal axes) of a kernel AST lowered in RAW_AXES."""
    order = raw.toposort()
    reduces = [n for n in order if n.op in REDUCE]
    full = reduces[0].src[0].shape if reduces else raw.src[0].shape
    views = [n.view for n in order if n.op in (Op.LOAD, Op.VALID, Op.STORE)]
    return full, normal_axes(full, reduces[0].axes if reduces else (), views)
