"""The flat program linearize.py builds, as data: `Instr` (one SSA instruction), `Param` (a buffer
argument) and `LinearProgram` (the instruction list, loops, launch dimensions, symbolic sizes
and origins every renderer walks), with what is read off a built program: its symbolic
variables, a bound on its index sums (the index type), and `program_cost` (FLOPs, bytes).
"""
from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Any

from ..dtype import DType, dtypes
from ..ir import symbolic as sym
from .linear_ops import LinearOp
from .plan import AxisKind

INT32_MIN, INT32_MAX = -2 ** 31, 2 ** 31 - 1  # a variable outside is a kernel's int64 argument


@dataclass(frozen=True)
class Instr:
    op: LinearOp      # a structure instruction or an ALU op (linear_ops.py); a name converts
    dtype: DType      # .count = vector lanes
    src: tuple = ()   # instruction numbers
    arg: Any = None

    def __post_init__(self):
        object.__setattr__(self, "op", LinearOp(self.op))


@dataclass(frozen=True)
class Param:
    index: int
    dtype: DType
    size: int          # elements
    is_output: bool
    is_input: bool


@dataclass(frozen=True)
class LinearProgram:
    """The linearize stage's value, frozen: renderers, runtimes and views read it, none writes."""
    name: str
    instrs: tuple[Instr, ...]
    params: tuple[Param, ...]
    loops: tuple[tuple, ...]   # (var name, size, AxisKind) outermost first
    threads: int = 1
    index_dtype: DType = dtypes.int32
    opts: tuple = ()
    # symbolic sizes the kernel takes as int arguments after its buffers: (name, min, max),
    # sorted by name; a RANGE's size may be an expression of them (loops keep the maxima)
    variables: tuple[tuple[str, int, int], ...] = ()
    # per instruction, the plan's AST nodes it computes (only from `linearize(origins=True)`,
    # which inspection asks for; compiling never records them)
    origins: tuple | None = None
    # the plan the instructions were built from (a long reduce's loop split for partial sums,
    # partial_sums.py, is part of it); what the views print
    plan: Any = None
    # a GPU kernel's LaunchDims (target/launch.py): folded once by linearize (its fold_launch,
    # the renderer's), read by the renderer, the compile record and the runtime's launch; None
    # where loops run in the source
    launch: Any = None

    @property
    def variable_names(self) -> list[str]:
        return [name for name, _, _ in self.variables]

    @property
    def wide_variables(self) -> set[str]:
        """The variables whose range leaves int32: the kernel takes them as int64."""
        return {name for name, lo, hi in self.variables if not INT32_MIN <= lo <= hi <= INT32_MAX}

    @property
    def parallel(self) -> bool:
        """It runs a loop across CPU threads (the C renderer opens an OpenMP loop for it)."""
        return any(kind is AxisKind.THREAD for _, _, kind in self.loops)

    @property
    def uses_float16(self) -> bool:
        """Some value of it is a float16 (the C renderer computes it in _Float16)."""
        return any(instr.dtype.scalar == dtypes.float16 for instr in self.instrs)

    def print(self) -> str:
        from .plan_printer import print_linear
        return print_linear(self)


def index_type(instrs: list[Instr], loop_sizes) -> DType:
    """int64 when a loop counter, or any term of an index or mask expression (inside a
    division or modulo too), may leave int32; the C expression computes every term."""
    limit = 2 ** 31 - 1
    if any(sym.max_of(size) > limit for size in loop_sizes):
        return dtypes.int64
    done: dict = {}   # each shared sub-expression bounded once for the whole program
    for instr in instrs:
        if instr.op in (LinearOp.LOAD, LinearOp.STORE):
            exprs = list(instr.arg[1]) + cond_exprs(instr.arg[2])
        elif instr.op == LinearOp.COND:
            exprs = cond_exprs(instr.arg)
        else:
            continue
        if any(largest_term_sum(e, done) > limit for e in exprs):
            return dtypes.int64
    return dtypes.int32


def range_end(size):
    """A loop's end as the renderers print it: an int, or the symbolic size's expression."""
    return sym.as_lin(size) if sym.is_symbolic(size) else size


def range_max(size) -> int:
    """The most iterations a RANGE's size allows (its maximum when symbolic)."""
    return size.hi if isinstance(size, sym.Lin) else size


def program_variables(instrs: list[Instr], loop_names: set) -> list[tuple[str, int, int]]:
    """The symbolic variables a program reads (loop sizes, indices, conditions): its kernel
    arguments besides the buffers."""
    exprs = []
    for instr in instrs:
        if instr.op == LinearOp.RANGE and isinstance(instr.arg[1], sym.Lin):
            exprs.append(instr.arg[1])
        elif instr.op in (LinearOp.LOAD, LinearOp.STORE):
            exprs += list(instr.arg[1]) + cond_exprs(instr.arg[2])
        elif instr.op == LinearOp.COND:
            exprs += cond_exprs(instr.arg)
    found = {v for e in exprs for v in e.vars() if v.name not in loop_names}
    return [(v.name, v.lo, v.hi) for v in sorted(found, key=lambda v: v.name)]


def cond_exprs(conds) -> list:
    return [leaf.x for cond in conds for leaf in cond.leaves() if leaf.x is not None]


def largest_term_sum(expr, done: dict | None = None) -> int:
    """A bound on |every partial sum| of `expr`, looking inside divisions and modulos (each
    shared operand once: `done` remembers them)."""
    done = {} if done is None else done
    if expr in done:
        return done[expr]
    total, inner = abs(expr.const), 0
    for atom, coeff in expr.terms:
        total += abs(coeff) * max(abs(atom.lo), abs(atom.hi))
        if isinstance(atom, (sym.Div, sym.Mod)):  # its operand is computed too
            inner = max(inner, largest_term_sum(atom.x, done))
    done[expr] = max(total, inner)
    return done[expr]


def program_cost(program: LinearProgram, var_vals: dict | None = None) -> tuple[int, int]:
    """(FLOPs, bytes moved) of one run: ALU ops times the loop trips around them; bytes as every
    parameter buffer read or written once. A symbolic loop runs to its value in var_vals (to
    its maximum without them); buffers count at their maximum."""
    flops, trips, stack = 0, 1, []
    skip = {LinearOp.PARAM, LinearOp.CONST, LinearOp.LOAD, LinearOp.STORE, LinearOp.COND,
            LinearOp.ACC, LinearOp.RANGE, LinearOp.END, LinearOp.CAST, LinearOp.BITCAST}
    for instr in program.instrs:
        if instr.op == LinearOp.RANGE:
            size = instr.arg[1]
            stack.append(sym.evaluate(size, var_vals) if isinstance(size, sym.Lin) and var_vals
                         else range_max(size))
            trips *= stack[-1]
        elif instr.op == LinearOp.END:  # a loop bound to 0 runs nothing: recount what is left
            stack.pop()
            trips = math.prod(stack)
        elif instr.op not in skip:
            flops += trips * instr.dtype.count
    moved = sum(p.size * p.dtype.itemsize for p in program.params)
    return flops, moved
