"""Linearize a KernelPlan into a flat program: the instruction list every renderer walks.

Each instruction is SSA (`%n = OP srcs arg`) except accumulators. Loads and stores carry their
index expressions (one per vector lane) and validity conditions, already simplified. Register
tiles (UPCAST/UNROLL axes) are expanded into separate instructions; equal instructions are shared
(CSE), and every instruction is placed in the outermost loop its inputs allow (loop-invariant
code motion falls out of that). The expression walk keeps its own stack (any depth runs at the
default recursion limit). `LinearProgram.print()` is the printed pass. A vector access's index
per lane is lane_indices.py's.
"""
from __future__ import annotations

import functools
import itertools

from ..dtype import DType, dtypes
from ..ir import symbolic as sym
from ..ir.node import Node, reduce_identity
from ..ir.ops import ALU, REDUCE, REDUCE_ALU, Op
from . import gpu_plan
from .buffer_access import buffer_extent
from .lane_indices import LaneIndices
from .linear_ops import LinearOp
from .linear_program import (Instr, LinearProgram, Param, index_type, program_variables,
                             range_end)
from .partial_sums import plan_partial_sums
from .plan import AxisKind, KernelPlan


class _Builder(LaneIndices):
    def __init__(self, plan: KernelPlan, origins: bool = False):
        # a plan from the plan stage (compile_record, BEAM) carries its partial-sum decision and
        # passes as it is; a bare plan (a test's, a notebook's) takes that last planning step here
        plan = plan_partial_sums(plan)
        partial_axis = plan.partial_axis
        self.plan = plan
        self.origins: dict[int, set] | None = {} if origins else None
        self.current: Node | None = None   # the AST node being computed (for origins)
        self.instrs: list[Instr] = []
        self.depth: list[int] = []
        self.post: list[bool] = []
        self.cse: dict[Instr, int] = {}
        self.vars = plan.loop_vars()
        self.loop_axes = [i for i, a in enumerate(plan.axes) if a.kind.is_loop]
        self.loop_axes = gpu_plan.order_loops(plan, self.loop_axes)  # GPU hook: work-group axes
        # BLOCK loops run outside the output loops, a global block outside a reduce block
        blocks = [a for a in self.loop_axes if plan.axes[a].kind is AxisKind.BLOCK]
        self.loop_axes = sorted(blocks, key=lambda a: plan.axes[a].reduce) + \
            [a for a in self.loop_axes if a not in blocks]
        self.var_depth = {self.vars[a].as_atom(): d + 1 for d, a in enumerate(self.loop_axes)}
        self.depth_of: dict = {}   # expression -> the innermost loop depth it reads (expr_depth)
        # loops around the accumulators: the BLOCK loop and the output loops
        self.n_outer = sum(1 for a in self.loop_axes if not plan.axes[a].reduce
                           or plan.axes[a].kind is AxisKind.BLOCK)
        # a long reduce keeps partial sums: declared inside this loop depth, folded into the
        # total when the loops inside it end (partial_sums.py); `folds` go after those ENDs
        self.partial_depth = None if partial_axis is None else \
            self.loop_axes.index(partial_axis) + 1
        self.folds: list[int] = []
        vector = [i for i, a in enumerate(plan.axes) if a.kind is AxisKind.VECTOR]
        self.vector_axis = vector[0] if vector else None
        self.lanes = plan.axes[vector[0]].size if vector else 1
        self.vector_is_reduce = bool(vector) and plan.axes[vector[0]].reduce
        self.upcast = [i for i, a in enumerate(plan.axes) if a.kind is AxisKind.UPCAST]
        self.unroll = [i for i, a in enumerate(plan.axes) if a.kind is AxisKind.UNROLL]
        self.memo: dict = {}
        self.index_cache: dict = {}
        self.tile_cache: dict = {}   # (view, tile axes, width) -> index with those as variables
        self.tile_atoms: dict = {}   # tile axis -> its variable's atom (tile_index)

    # ---- emitting ----
    def emit(self, op: LinearOp | str, dtype: DType, src=(), arg=None, depth=None, post=None,
             unique=False) -> int:
        instr = Instr(op, dtype, tuple(src), arg)
        if not unique and instr in self.cse:
            return self.cse[instr] if self.origins is None else self.note(self.cse[instr])
        d = max([self.depth[s] for s in src] + [0])
        if depth is not None:
            d = max(d, depth)
        p = any(self.post[s] for s in src) if post is None else post
        self.instrs.append(instr)
        self.depth.append(d)
        self.post.append(p)
        if not unique:
            self.cse[instr] = len(self.instrs) - 1
        if self.origins is not None:
            self.note(len(self.instrs) - 1)
        return len(self.instrs) - 1

    def note(self, index: int) -> int:
        """Record that instruction `index` computes the node being built (origins only)."""
        if self.current is not None:
            self.origins.setdefault(index, set()).add(self.current)
        return index

    def computing(self, node: Node | None) -> Node | None:
        """Make `node` the one new instructions compute; returns the previous one."""
        previous, self.current = self.current, node
        return previous

    def expr_depth(self, exprs) -> int:
        """The depth of the innermost loop any of `exprs` reads (0: none), each expression's
        found once per program (the lanes of a tile ask for the same ones again)."""
        d, known = 0, self.depth_of
        for e in exprs:
            found = known.get(e)
            if found is None:
                found = known[e] = max((self.var_depth.get(v, 0) for v in e.vars()), default=0)
            d = max(d, found)
        return d

    def cond_depth(self, conds) -> int:
        return max((self.expr_depth([leaf.x]) for c in conds for leaf in c.leaves()
                    if leaf.x is not None), default=0)

    # ---- values ----
    def value(self, node: Node, inst: dict, width: int) -> int:
        """The instruction computing `node` for one register-tile instance. An explicit stack,
        not recursion (a chain of thousands of ops is as deep): sources are emitted left to
        right before their user, in the order a recursive walk would emit them."""
        lanes_key = tuple(sorted(inst.items()))
        memo, root = self.memo, (node, lanes_key, width)
        if root in memo:
            return memo[root]
        previous = self.current
        stack: list = [(node, False)]
        while stack:
            node, expanded = stack.pop()
            if not expanded:
                if (node, lanes_key, width) in memo:
                    continue
                if node.op in ALU:
                    pending = [s for s in node.src if (s, lanes_key, width) not in memo]
                    if pending:
                        stack.append((node, True))
                        stack.extend((s, False) for s in reversed(pending))
                        continue
            if self.origins is not None:
                self.current = node
            memo[(node, lanes_key, width)] = self._value(node, inst, lanes_key, width)
        self.current = previous
        return memo[root]

    def _value(self, node: Node, inst: dict, lanes_key: tuple, width: int) -> int:
        """`node`'s instruction, its sources' ones already in the memo."""
        dtype = node.dtype.vec(width)
        if node.op is Op.CONST:
            return self.emit(LinearOp.CONST, dtype, (), node.value)
        if node.op is Op.LOAD:
            indices, valids = self.view_lanes(node.view, inst, width)
            if all(v.is_false for v in valids):
                return self.emit(LinearOp.CONST, dtype, (), 0 if not node.dtype.is_bool else False)
            d = max(self.expr_depth(indices), self.cond_depth(valids))
            return self.emit(LinearOp.LOAD, dtype, (), (node.buffer_index, indices, valids), depth=d)
        if node.op is Op.VALID:
            _, valids = self.view_lanes(node.view, inst, width)
            if all(v.is_true for v in valids):
                return self.emit(LinearOp.CONST, dtype, (), True)
            if all(v.is_false for v in valids):
                return self.emit(LinearOp.CONST, dtype, (), False)
            return self.emit(LinearOp.COND, dtype, (), valids, depth=self.cond_depth(valids))
        if node.op in REDUCE:
            return self.reduce_result(node, inst)
        assert node.op in ALU, node
        srcs = [self.memo[(s, lanes_key, width)] for s in node.src]
        return self.emit(LinearOp[node.op.name], dtype, srcs)

    def reduce_result(self, node: Node, inst: dict) -> int:
        return self.acc_results[tuple(sorted(inst.items()))]

    # ---- the whole kernel ----
    def build(self) -> None:
        plan = self.plan
        self.params = self.make_params()
        post_width = 1 if self.vector_is_reduce else self.lanes
        post_insts = self.instances(self.upcast)
        reduce_node = plan.reduce_node
        self.acc_results = {}
        if reduce_node is not None:
            self.computing(reduce_node)
            self.build_reduce(reduce_node, post_insts)
        for store in plan.stores:
            for inst in post_insts:
                self.computing(None)
                value = self.value(store.src[0], inst, post_width)
                indices, valids = self.view_lanes(store.view, inst, post_width)
                valids = gpu_plan.guard_store(self, valids)  # GPU hook: grouped reduce stores once
                self.computing(store)
                self.emit(LinearOp.STORE, store.dtype.vec(post_width), (value,),
                          (store.buffer_index, indices, valids),
                          depth=self.expr_depth(indices), unique=True)
        self.computing(None)

    def build_reduce(self, node: Node, post_insts) -> None:
        width = self.lanes
        acc_dtype = node.dtype.vec(width)
        identity = reduce_identity(node.op, node.dtype)
        for inst in post_insts:
            key = tuple(sorted(inst.items()))
            acc = self.emit(LinearOp.ACC, acc_dtype, (), identity, depth=self.n_outer, post=False,
                            unique=True)
            partial = acc if self.partial_depth is None else self.emit(
                LinearOp.ACC, acc_dtype, (), identity, depth=self.partial_depth, post=False,
                unique=True)
            for unroll in self.instances(self.unroll):
                full = {**inst, **unroll}
                value = self.masked_past_end(self.value(node.src[0], full, width), full, width,
                                             node.dtype, identity)
                self.emit(LinearOp.ACC_UPDATE, acc_dtype, (partial, value),
                          REDUCE_ALU[node.op].name, depth=len(self.loop_axes), post=False,
                          unique=True)
            if partial != acc:
                self.folds.append(self.emit(LinearOp.ACC_UPDATE, acc_dtype, (acc, partial),
                                            REDUCE_ALU[node.op].name, post=False, unique=True))
            acc = gpu_plan.group_reduce(self, acc, node)  # GPU hook: combine across a work-group
            if self.vector_is_reduce:
                result = self.emit(LinearOp.VREDUCE, node.dtype, (acc,), REDUCE_ALU[node.op].name,
                                   post=True, unique=True)
            else:
                result = self.emit(LinearOp.READ_ACC, acc_dtype, (acc,), None, post=True, unique=True)
            if self.plan.block_axis is not None:
                result = self.add_earlier_blocks(result, node, inst)
            self.acc_results[key] = result

    def add_earlier_blocks(self, result: int, node: Node, inst: dict) -> int:
        """A BLOCK reduce: combine this block's result with the earlier blocks' one, which the
        output buffer holds (the first block starts from the identity)."""
        store = self.plan.stores[0]
        dtype = self.instrs[result].dtype
        indices, valids = self.view_lanes(store.view, inst, dtype.count)
        earlier = self.emit(LinearOp.LOAD, dtype, (), (store.buffer_index, indices, valids),
                            depth=self.expr_depth(indices), post=True)
        block = next(a for a in self.loop_axes if self.plan.axes[a].kind is AxisKind.BLOCK
                     and self.plan.axes[a].reduce)
        first = sym.lt(self.vars[block], 1)
        cond = self.emit(LinearOp.COND, dtypes.bool, (), (first,), depth=self.cond_depth([first]))
        identity = self.emit(LinearOp.CONST, dtype, (), reduce_identity(node.op, node.dtype))
        start = self.emit(LinearOp.WHERE, dtype, (cond, identity, earlier))
        return self.emit(LinearOp[REDUCE_ALU[node.op].name], dtype, (result, start))

    def masked_past_end(self, value: int, inst: dict, width: int, dtype, identity) -> int:
        """A reduce value for lanes past the end of a padded reduce dim is the identity."""
        reduced = [d for d in self.plan.padded if d >= len(self.plan.shape) - self.plan.n_reduce]
        if not reduced:
            return value
        conds = []
        for lane in range(width):
            idxs = self.plan.index_exprs(self.lane_values(inst, lane))
            conds.append(sym.and_(*[sym.lt(idxs[d], self.plan.shape[d]) for d in reduced]))
        if all(c.is_true for c in conds):
            return value
        cond = self.emit(LinearOp.COND, dtypes.bool.vec(width), (), tuple(conds),
                         depth=self.cond_depth(conds))
        fill = self.emit(LinearOp.CONST, dtype.vec(width), (), identity)
        return self.emit(LinearOp.WHERE, dtype.vec(width), (cond, value, fill))

    def instances(self, axes: list[int]) -> list[dict]:
        sizes = [range(self.plan.axes[a].size) for a in axes]
        return [dict(zip(axes, combo)) for combo in itertools.product(*sizes)]

    def make_params(self) -> list[Param]:
        found: dict[int, Param] = {}
        for node in self.plan.ast.toposort():
            if node.op in (Op.LOAD, Op.STORE):
                i = node.buffer_index
                p = found.get(i) or Param(i, node.dtype, 0, False, False)
                # a BLOCK reduce reads back the partial sums it stored
                found[i] = Param(i, p.dtype, max(p.size, buffer_extent(node.view)),
                                 p.is_output or node.op is Op.STORE,
                                 p.is_input or node.op is Op.LOAD
                                 or self.plan.block_axis is not None)
        return [found[i] for i in sorted(found)]

    # ---- ordering into loops ----
    def ordered(self) -> list[Instr]:
        n_loops = len(self.loop_axes)
        blocks: dict[int, list[int]] = {d: [] for d in range(n_loops + 1)}
        post: list[int] = []
        folds = set(self.folds)
        for i, instr in enumerate(self.instrs):
            if instr.op == LinearOp.READ_ACC or i in folds:
                continue
            if self.post[i]:
                post.append(i)
            else:
                blocks[min(self.depth[i], n_loops)].append(i)
        remap: dict[int, int] = {}
        out: list[Instr] = []

        def put(i: int):
            instr = self.instrs[i]
            src = tuple(remap[self.read_acc_source(s)] for s in instr.src)
            out.append(Instr(instr.op, instr.dtype, src, instr.arg))
            remap[i] = len(out) - 1

        for p in self.params:
            out.append(Instr(LinearOp.PARAM, p.dtype, (), (p.index, p.size, p.is_output, p.is_input)))
        for i in blocks[0]:
            put(i)
        for d, axis in enumerate(self.loop_axes):
            a = self.plan.axes[axis]
            v = self.vars[axis].as_atom()
            out.append(Instr(LinearOp.RANGE, self.index_dtype, (),
                             (v.name, range_end(a.size), a.kind)))
            for i in blocks[d + 1]:
                put(i)
        for depth in reversed(range(self.n_outer, n_loops + 1)):
            if depth < n_loops:  # close loop `depth`: back in the body of the loop around it
                out.append(Instr(LinearOp.END, dtypes.void))
            if depth == self.partial_depth:  # the loops inside the partial sums' loop ended
                for i in self.folds:
                    put(i)
        for i in post:
            put(i)
        for _ in range(self.n_outer):
            out.append(Instr(LinearOp.END, dtypes.void))
        self.remap = remap
        return out

    def read_acc_source(self, i: int) -> int:
        return self.instrs[i].src[0] if self.instrs[i].op == LinearOp.READ_ACC else i

    @functools.cached_property
    def index_dtype(self) -> DType:
        """int32 or int64 for every index (once the instructions are built: asked per loop)."""
        return index_type(self.instrs, [self.plan.axes[a].size for a in self.loop_axes])


def linearize(plan: KernelPlan, name: str | None = None, origins: bool = False,
              fold_launch=None) -> LinearProgram:
    """`origins=True` also records which AST nodes each instruction computes (inspection);
    `fold_launch`: the renderer's loops -> LaunchDims (a GPU's), kept as the program's launch."""
    builder = _Builder(plan, origins)
    builder.build()
    instrs = builder.ordered()
    loops = [(builder.vars[a].as_atom().name, sym.max_of(builder.plan.axes[a].size),
              builder.plan.axes[a].kind) for a in builder.loop_axes]
    loop_names = {v.as_atom().name for v in builder.vars.values()}
    return LinearProgram(name or plan.name, tuple(instrs), tuple(builder.params), tuple(loops),
                         plan.threads, builder.index_dtype, tuple(plan.opts),
                         tuple(program_variables(instrs, loop_names)),
                         tuple(_ordered_origins(builder, instrs)) if origins else None,
                         builder.plan, fold_launch(loops) if fold_launch is not None else None)


def _ordered_origins(builder: _Builder, instrs: list[Instr]) -> list[tuple]:
    """Origins by final instruction number: `ordered` drops READ_ACC (its reads become the
    accumulator's) and puts PARAM / RANGE / END instructions in, which compute no node."""
    nodes: list[set] = [set() for _ in instrs]
    for old, new in builder.remap.items():
        nodes[new] |= builder.origins.get(old, set())
    for old, instr in enumerate(builder.instrs):
        if instr.op == LinearOp.READ_ACC and instr.src[0] in builder.remap:
            nodes[builder.remap[instr.src[0]]] |= builder.origins.get(old, set())
    return [tuple(found) for found in nodes]

