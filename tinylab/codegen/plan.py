"""A kernel's loop plan: its axes, what kind of loop each becomes, and the actions applied.

`KernelPlan.from_ast(ast)` takes a scheduled kernel AST, which lowering built in its normal axes
(schedule/axes.py: reduce axes last, adjacent axes that every view can merge merged into one),
and starts with one GLOBAL or REDUCE axis per dimension.
Optimization actions (`Opt`) split axes into register tiles (UPCAST / UNROLL), a vector lane
axis (VECTORIZE), parallel loops (THREAD), GPU work-group axes (LOCAL / GROUP), cache blocks
(BLOCK), or reorder loops (SWAP). `index_exprs()` gives each original dimension's index in loop
variables; the linearizer turns the plan into a flat program. `describe()` prints it as a loop
nest (the "loop IR").
"""
from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, field
from enum import StrEnum

from ..errors import TinylabError
from ..ir import symbolic as sym
from ..ir.node import Node
from ..ir.ops import REDUCE, Op
from ..ir.view import ViewStack, view_index  # noqa: F401 - re-exported for codegen


class AxisKind(StrEnum):
    """What a plan's axis is (a str: equal to its lower-case name, so the loop IR prints it and
    the linear program's RANGE carries it as that word)."""
    GLOBAL = "global"    # a loop over outputs (a grid dimension on GPUs)
    THREAD = "thread"    # a global loop split across CPU threads
    LOCAL = "local"      # a work-group dimension on GPUs
    REDUCE = "reduce"    # a loop accumulating into registers
    GROUP = "group"      # a reduce split across a work-group (GPUs, local memory)
    UPCAST = "upcast"    # a global axis unrolled into a register tile
    UNROLL = "unroll"    # a reduce axis unrolled
    VECTOR = "vector"    # the lanes of vector registers (global or reduce)
    BLOCK = "block"      # the outer part of a loop, looping outside the output loops: a reduce
                         # block adds one cache-sized part of the reduce to the output buffer

    @property
    def is_loop(self) -> bool:
        return self in (AxisKind.GLOBAL, AxisKind.THREAD, AxisKind.LOCAL, AxisKind.REDUCE,
                        AxisKind.GROUP, AxisKind.BLOCK)

    @property
    def is_expanded(self) -> bool:
        return self in (AxisKind.UPCAST, AxisKind.UNROLL, AxisKind.VECTOR)


@dataclass(frozen=True)
class Axis:
    size: int
    kind: AxisKind
    origin: int       # which normalized dimension this axis is part of
    mult: int         # its index contributes var * mult to that dimension's index
    reduce: bool      # part of a reduced dimension


class Action(StrEnum):
    """What an optimization action does to its axis (a str: equal to its name, so it prints,
    compares and stores in BEAM's JSON cache as that name)."""
    UPCAST = "UPCAST"        # split a global loop into a register tile
    UNROLL = "UNROLL"        # split a reduce loop into an unrolled tile
    VECTORIZE = "VECTORIZE"  # split a loop into vector lanes
    THREAD = "THREAD"        # run the outermost global loop on CPU threads
    LOCAL = "LOCAL"          # split a global loop into a GPU work-group dimension
    GROUP = "GROUP"          # split a reduce across a GPU work-group (local memory)
    BLOCK = "BLOCK"          # split a loop into cache blocks looping outside the output loops
    SWAP = "SWAP"            # exchange two loops of the same group


    @property
    def split_kind(self) -> AxisKind | None:
        """The axis kind a splitting action gives its inner part (None: it splits nothing)."""
        if self in (Action.UPCAST, Action.UNROLL, Action.LOCAL, Action.GROUP):
            return AxisKind[self.name]
        return AxisKind.VECTOR if self is Action.VECTORIZE else None


ACTIONS = tuple(Action)


class OptError(TinylabError, ValueError):
    """An action that does not apply to this plan (wrong axis kind, size not divisible...)."""


@dataclass(frozen=True)
class Opt:
    """An optimization action: `action` on the plan's axis number `axis` with `amount`. The
    action may be given by name ("UPCAST"); it is kept as an Action."""
    action: Action
    axis: int
    amount: int = 0

    def __post_init__(self):
        if self.action not in ACTIONS:
            raise OptError(f"unknown action {self.action}; known: {', '.join(ACTIONS)}")
        object.__setattr__(self, "action", Action(self.action))

    def __str__(self):
        return f"{self.action}({self.axis}, {self.amount})"


def _is_loop_size(size) -> bool:
    return sym.is_symbolic(size) or size > 1


def size_name(size) -> str:
    """An axis size in a kernel name: the number, or the symbolic size as an identifier
    (`i`, `i+1` -> `ip1`), as tinygrad names kernels after their variables."""
    if not sym.is_symbolic(size):
        return str(size)
    text = sym.render(size.lin).strip("()")
    return text.replace("+", "p").replace("-", "m").replace("*", "x").replace("/", "d")


# ---- the plan ------------------------------------------------------------------------------------
@dataclass
class KernelPlan:
    ast: Node                      # kernel AST (in its normal axes)
    shape: tuple                   # normal full shape
    n_reduce: int                  # the last n_reduce dimensions are reduced
    axes: list[Axis] = field(default_factory=list)
    opts: list[Opt] = field(default_factory=list)
    threads: int = 1
    padded: frozenset = frozenset()  # dims a vector axis runs past the end of (lanes masked)
    # the plan stage's last step (partial_sums.py plan_partial_sums): whether it ran, the loop
    # axis whose iterations restart a partial accumulator (None: one accumulator), and the
    # kernel's name from before that step split a loop (the kernel keeps it)
    partials_planned: bool = False
    partial_axis: int | None = None
    kept_name: str = ""
    _frozen: bool = field(default=False, repr=False, compare=False)

    def __setattr__(self, name, value):
        if self._frozen:
            raise FrozenInstanceError(f"a KernelPlan is frozen (setting {name}): apply an "
                                      f"action to get a new plan")
        object.__setattr__(self, name, value)

    def frozen(self) -> KernelPlan:
        """This plan, frozen: axes and actions become tuples and no attribute can change. Every
        plan the plan stage hands on is frozen; only a copy() being built is not."""
        object.__setattr__(self, "axes", tuple(self.axes))
        object.__setattr__(self, "opts", tuple(self.opts))
        object.__setattr__(self, "_frozen", True)
        return self

    @staticmethod
    def from_ast(ast: Node) -> KernelPlan:
        """The plan of a scheduled kernel AST, which lowering built in its normal axes
        (schedule/axes.py): the reduce's input shape, its axes last, else the output's."""
        reduce = next((n for n in ast.toposort() if n.op in REDUCE), None)
        shape = reduce.src[0].shape if reduce is not None else ast.src[0].shape
        n_reduce = len(reduce.axes) if reduce is not None else 0
        first_reduce = len(shape) - n_reduce
        axes = [Axis(s, AxisKind.REDUCE if i >= first_reduce else AxisKind.GLOBAL, i, 1,
                     i >= first_reduce) for i, s in enumerate(shape) if _is_loop_size(s)]
        return KernelPlan(ast, shape, n_reduce, axes).frozen()

    def static_proxy(self) -> KernelPlan:
        """This plan with every symbolic size at its maximum (for heuristics that weigh sizes;
        its actions are then applied to the real plan, which refuses symbolic splits)."""
        axes = [Axis(sym.max_of(a.size), a.kind, a.origin, a.mult, a.reduce) for a in self.axes]
        return KernelPlan(self.ast, sym.max_shape(self.shape), self.n_reduce, axes,
                          list(self.opts), self.threads, self.padded).frozen()

    def copy(self) -> KernelPlan:
        """A plan to build on (not frozen: its axes and actions are lists); freeze it after."""
        return KernelPlan(self.ast, self.shape, self.n_reduce, list(self.axes), list(self.opts),
                          self.threads, self.padded)

    # ---- facts ----
    @property
    def is_symbolic(self) -> bool:
        """Some loop runs to a symbolic size (a kernel argument)."""
        return sym.any_symbolic(self.shape)

    @property
    def has_reduce(self) -> bool:
        return self.n_reduce > 0

    @property
    def reduce_node(self) -> Node | None:
        found = [n for n in self.ast.toposort() if n.op in REDUCE]
        return found[0] if found else None

    @property
    def loads(self) -> list[Node]:
        return [n for n in self.ast.toposort() if n.op is Op.LOAD]

    @property
    def stores(self) -> list[Node]:
        return list(self.ast.src)

    def axes_of(self, *kinds: AxisKind) -> list[int]:
        return [i for i, a in enumerate(self.axes) if a.kind in kinds]

    @property
    def block_axis(self) -> Axis | None:
        """The reduce BLOCK axis (its partial results accumulate in the output buffer)."""
        found = [a for a in self.axes if a.kind is AxisKind.BLOCK and a.reduce]
        return found[0] if found else None

    @property
    def vector_axis(self) -> Axis | None:
        found = [a for a in self.axes if a.kind is AxisKind.VECTOR]
        return found[0] if found else None

    @property
    def name(self) -> str:
        if self.kept_name:
            return self.kept_name
        prefix = "r" if self.has_reduce else "E"
        return prefix + "_" + "_".join(size_name(a.size) for a in self.axes)

    def colored_name(self) -> str:
        colors = {AxisKind.GLOBAL: 34, AxisKind.THREAD: 36, AxisKind.LOCAL: 96, AxisKind.REDUCE: 31,
                  AxisKind.GROUP: 32, AxisKind.UPCAST: 33, AxisKind.UNROLL: 35, AxisKind.VECTOR: 93,
                  AxisKind.BLOCK: 91}
        prefix = "r" if self.has_reduce else "E"
        parts = [f"\033[{colors[a.kind]}m{size_name(a.size)}\033[0m" for a in self.axes]
        return prefix + "_" + "_".join(parts)

    # ---- actions ----
    def apply(self, opt: Opt) -> KernelPlan:
        """A new plan with `opt` applied (raises OptError if it does not fit)."""
        plan = self.copy()
        plan._apply(opt)
        plan.opts.append(opt)
        return plan.frozen()

    def apply_all(self, opts) -> KernelPlan:
        plan = self
        for opt in opts:
            plan = plan.apply(opt)
        return plan

    def _apply(self, opt: Opt) -> None:
        if not 0 <= opt.axis < len(self.axes):
            raise OptError(f"{opt}: axis {opt.axis} out of range ({len(self.axes)} axes)")
        axis = self.axes[opt.axis]
        if sym.is_symbolic(axis.size) and opt.action not in (Action.SWAP, Action.THREAD):
            raise OptError(f"{opt}: axis {opt.axis} has the symbolic size {axis.size!r}; it is "
                           f"not split (no size the variable does not promise)")
        if opt.action == Action.SWAP:
            other = self.axes[opt.amount] if 0 <= opt.amount < len(self.axes) else None
            if other is None or not axis.kind.is_loop or other.kind.is_loop is False \
                    or axis.reduce != other.reduce or AxisKind.BLOCK in (axis.kind, other.kind):
                raise OptError(f"{opt}: can only swap two loops of the same group")
            self.axes[opt.axis], self.axes[opt.amount] = other, axis
            return
        if opt.action == Action.THREAD:
            if axis.kind is not AxisKind.GLOBAL or opt.axis != self.axes_of(
                    AxisKind.GLOBAL, AxisKind.THREAD)[0]:
                raise OptError(f"{opt}: only the outermost global loop can be threaded")
            if opt.amount < 2:
                raise OptError(f"{opt}: needs at least 2 threads")
            self.axes[opt.axis] = Axis(axis.size, AxisKind.THREAD, axis.origin, axis.mult, False)
            self.threads = opt.amount
            return
        if opt.action == Action.BLOCK:
            self._block(opt, axis)
            return
        if opt.action in (Action.LOCAL, Action.GROUP) and self.axes_of(AxisKind.BLOCK):
            raise OptError(f"{opt}: work-group axes do not combine with a BLOCK reduce")
        wants_reduce = opt.action in (Action.UNROLL, Action.GROUP)
        if opt.action == Action.VECTORIZE:
            if self.vector_axis is not None:
                raise OptError(f"{opt}: the plan already has a vector axis")
            if axis.kind not in (AxisKind.GLOBAL, AxisKind.REDUCE):
                raise OptError(f"{opt}: vectorize a global or reduce loop")
        elif wants_reduce != (axis.kind is AxisKind.REDUCE) or not axis.kind.is_loop \
                or axis.kind is AxisKind.THREAD or axis.reduce != wants_reduce:  # not a GROUP
            need = "a reduce" if wants_reduce else "a global"
            raise OptError(f"{opt}: {opt.action} needs {need} loop, axis {opt.axis} is "
                           f"{axis.kind.value}")
        amount = opt.amount or axis.size
        if amount < 1:
            raise OptError(f"{opt}: amount must be positive")
        if axis.size % amount:
            # only a whole, unsplit dimension may be vectorized past its end: the extra lanes
            # are masked off (loads read nothing, stores write nothing, reduces add the identity)
            whole = axis.mult == 1 and axis.size == self.shape[axis.origin]
            if opt.action != Action.VECTORIZE or not whole:
                raise OptError(f"{opt}: {amount} does not divide axis size {axis.size}")
            self.padded = self.padded | {axis.origin}
        kind = opt.action.split_kind
        inner = Axis(amount, kind, axis.origin, axis.mult, axis.reduce)
        outer = Axis(-(-axis.size // amount), axis.kind, axis.origin, axis.mult * amount,
                     axis.reduce)
        rest = self.axes[:opt.axis] + ([outer] if outer.size > 1 else []) + self.axes[opt.axis + 1:]
        if kind in (AxisKind.LOCAL, AxisKind.GROUP):  # work-group axes sit after their loops
            position = len([a for a in rest if a.kind.is_loop])
            self.axes = rest[:position] + [inner] + rest[position:]
        else:
            self.axes = rest + [inner]

    def _block(self, opt: Opt, axis: Axis) -> None:
        """Split a loop into an outer BLOCK loop that runs outside the output loops and an inner
        part of `amount`. A reduce block adds its partial result to what the output buffer holds,
        so one block of the operands stays in cache while every output tile uses it; a global
        block keeps the output tiles (and the operand columns) of one block together."""
        if axis.kind not in (AxisKind.REDUCE, AxisKind.GLOBAL):
            raise OptError(f"{opt}: BLOCK needs a reduce or global loop, axis {opt.axis} is "
                           f"{axis.kind.value}")
        if any(a.kind is AxisKind.BLOCK and a.reduce == axis.reduce for a in self.axes):
            raise OptError(f"{opt}: the plan already blocks a {axis.kind.value} loop")
        if not 1 < opt.amount < axis.size or axis.size % opt.amount:
            raise OptError(f"{opt}: the block must divide axis size {axis.size} and be smaller")
        if any(a.kind in (AxisKind.LOCAL, AxisKind.GROUP) for a in self.axes):
            raise OptError(f"{opt}: BLOCK does not combine with work-group axes")
        if axis.reduce:
            reduce, stores = self.reduce_node, self.stores
            if len(stores) != 1 or stores[0].src[0] is not reduce:
                raise OptError(f"{opt}: a reduce BLOCK needs a kernel that stores its reduce as "
                               f"it is (partial results are kept in the output buffer)")
            if stores[0].buffer_index in {n.buffer_index for n in self.loads}:
                raise OptError(f"{opt}: the kernel reads the buffer it writes")
        self.split_loop(opt.axis, opt.amount, AxisKind.BLOCK)

    def split_loop(self, number: int, inner: int, outer_kind: AxisKind) -> None:
        """Replace loop axis `number` by an outer loop of `outer_kind` and an inner loop of
        `inner` iterations right after it, in place (BLOCK; partial sums split a reduce loop)."""
        axis = self.axes[number]
        self.axes[number:number + 1] = [
            Axis(axis.size // inner, outer_kind, axis.origin, axis.mult * inner, axis.reduce),
            Axis(inner, axis.kind, axis.origin, axis.mult, axis.reduce)]

    # ---- index expressions ----
    def loop_vars(self) -> dict[int, sym.Lin]:
        """A symbolic variable per loop axis (by axis number)."""
        out, counters = {}, {}
        prefix = {AxisKind.GLOBAL: "gidx", AxisKind.THREAD: "gidx", AxisKind.LOCAL: "lidx",
                  AxisKind.REDUCE: "ridx", AxisKind.GROUP: "lidx", AxisKind.BLOCK: "bidx"}
        for i, axis in enumerate(self.axes):
            if axis.kind.is_loop:
                p = prefix[axis.kind]
                n = counters.get(p, 0)
                counters[p] = n + 1
                out[i] = sym.var(f"{p}{n}", 0, sym.max_of(axis.size) - 1)
        return out

    def index_exprs(self, values: dict[int, sym.Lin | int]) -> list[sym.Lin]:
        """Index of each normalized dimension given a value (var or constant) per axis."""
        idxs = [sym.ZERO for _ in self.shape]
        for i, axis in enumerate(self.axes):
            idxs[axis.origin] = idxs[axis.origin] + sym.lin(values[i]) * axis.mult
        return idxs

    def padding_valid(self, idxs: list[sym.Lin], view_shape: tuple) -> sym.Cond:
        """Lanes past the end of a padded dimension are invalid for a view that indexes it."""
        conds = [sym.lt(idxs[d], sym.as_lin(self.shape[d])) for d in sorted(self.padded)
                 if d < len(view_shape) and view_shape[d] > 1]
        return sym.and_(*conds) if conds else sym.TRUE

    def describe(self) -> str:
        from .plan_printer import print_plan
        return print_plan(self)


