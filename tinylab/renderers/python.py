"""The Python renderer: a LinearProgram as Python + numpy source for the PYTHON runtime.

Global loops become broadcast index arrays (the whole output index space at once), reduce loops
stay Python `for` loops, ALU ops call `alu(...)` (numpy_alu, the oracle's arithmetic). The text
reads like the C kernel, so a learner can compare them line by line. Pure string building.
"""
from __future__ import annotations

import math

from ..codegen.linear_ops import LinearOp
from ..codegen.plan import Action, AxisKind
from ..dtype import DType
from ..ir import symbolic as sym
from ..ir.ops import Op
from .base import Renderer


def _literal(value, dtype: DType) -> str:
    if dtype.is_float and (math.isnan(value) or math.isinf(value)):
        value = repr(str(float(value)))
    elif dtype.is_bool:
        value = bool(value)
    return f"np.{dtype.numpy_name}({value})" if not dtype.is_bool else f"np.bool_({value})"


def _cond(cond: sym.Cond, names: dict | None = None) -> str:
    return sym.render_cond(cond, names=names).replace(" && ", " & ")


class PythonRenderer(Renderer):
    device = "PYTHON"
    family = "python"   # renders the ALU ops whose rows have a numpy oracle (or a python spelling)
    supported_actions = (Action.UPCAST, Action.UNROLL, Action.SWAP)  # every dtype, IEEE

    def render(self, program) -> str:
        return _PythonWalk(program).run()


class _PythonWalk:
    """One pass over the instructions: a line (or a name) per instruction, from a table."""

    def __init__(self, program):
        self.p = program
        self.globals = [(n, s) for n, s, kind in program.loops if kind in (AxisKind.GLOBAL, AxisKind.THREAD)]
        sizes = {i.arg[0]: i.arg[1] for i in program.instrs if i.op == LinearOp.RANGE}
        self.shape = tuple(sizes[n] for n, _ in self.globals)
        if not all(isinstance(s, int) for s in self.shape):  # a symbolic size: its argument
            self.shape = "(" + "".join(f"{s}, " for s in self.shape) + ")"
        self.names: dict[int, str] = {}
        self.lines: list[str] = []
        self.indent, self.next_global = 1, 0
        self.shared: dict = {}  # as cstyle._Walk.shared: sub-expressions named for this one

    def emit(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)

    def run(self) -> str:
        params = ", ".join([f"data{p.index}" for p in self.p.params] + self.p.variable_names)
        self.lines.append(f"def {self.p.name}({params}):")
        for p in self.p.params:
            self.lines.append(f"    data{p.index} = data{p.index}.view(np.{p.dtype.numpy_name})")
        self.lines.append(f"    shape = {self.shape}")
        for i, instr in enumerate(self.p.instrs):
            if instr.dtype.count != 1:
                raise NotImplementedError("the PYTHON renderer does not render vector lanes")
            args = [self.names[s] for s in instr.src]
            self.shared = self.declare_repeats(i, instr)
            STEPS.get(instr.op, _PythonWalk.alu)(self, i, instr, args)
        return "import numpy as np\n\n" + "\n".join(self.lines) + "\n"

    def declare_repeats(self, i: int, instr) -> dict:
        """As cstyle._Walk.declare_repeats: a name for each repeated sub-expression."""
        if instr.op not in (LinearOp.LOAD, LinearOp.STORE, LinearOp.COND):
            return {}
        exprs = instr.arg if instr.op == LinearOp.COND else instr.arg[1] + instr.arg[2]
        names: dict = {}
        for k, part in enumerate(sym.repeated_parts(exprs)):
            self.emit(f"tl_index{i}_{k} = {sym.render(part, names=names)}")
            names[part] = f"tl_index{i}_{k}"
        return names

    def param(self, i: int, instr, args) -> None:
        self.names[i] = f"data{instr.arg[0]}"

    def open_loop(self, i: int, instr, args) -> None:
        name, size, kind = instr.arg
        if kind in (AxisKind.GLOBAL, AxisKind.THREAD):  # the whole index space at once: a broadcast arange
            self.emit(f"{name} = arange({size}, {self.next_global}, {len(self.globals)})")
            self.next_global += 1
        else:
            self.emit(f"for {name} in range({size}):")
            self.indent += 1

    def close_loop(self, i: int, instr, args) -> None:
        if self.indent > 1:
            self.indent -= 1

    def constant(self, i: int, instr, args) -> None:
        self.names[i] = _literal(instr.arg, instr.dtype.scalar)

    def condition(self, i: int, instr, args) -> None:
        self.names[i] = _cond(instr.arg[0], self.shared)

    def load(self, i: int, instr, args) -> None:
        buf, (index,), (valid,) = instr.arg
        valid_text = "True" if valid.is_true else _cond(valid, self.shared)
        index = sym.render(index, names=self.shared)
        self.emit(f"val{i} = load(data{buf}, {index}, {valid_text}, ())")
        self.names[i] = f"val{i}"

    def store(self, i: int, instr, args) -> None:
        buf, (index,), _ = instr.arg
        self.emit(f"store(data{buf}, {sym.render(index, names=self.shared)}, {args[0]}, shape)")

    def accumulator(self, i: int, instr, args) -> None:
        self.emit(f"acc{i} = np.full(shape, {_literal(instr.arg, instr.dtype.scalar)})")
        self.names[i] = f"acc{i}"

    def accumulate(self, i: int, instr, args) -> None:
        self.emit(f"{args[0]} = alu({instr.arg!r}, {args[0]}, np.asarray({args[1]}))")

    def alu(self, i: int, instr, args) -> None:
        """Its row's "python" spelling (CAST, BITCAST: numpy_alu.cast), else a call of its numpy
        oracle by name (numpy_alu.apply)."""
        spell = Op[instr.op].spelling("python")
        if spell is not None:
            src_dtype = self.p.instrs[instr.src[0]].dtype.scalar
            text = spell(self, args, instr.dtype.scalar, src_dtype)
        else:
            text = f"alu({str(instr.op)!r}, {', '.join(f'np.asarray({a})' for a in args)})"
        self.emit(f"alu{i} = {text}")
        self.names[i] = f"alu{i}"


# instruction -> how it renders; every other instruction is an ALU op (_PythonWalk.alu)
STEPS = {LinearOp.PARAM: _PythonWalk.param, LinearOp.RANGE: _PythonWalk.open_loop,
         LinearOp.END: _PythonWalk.close_loop, LinearOp.CONST: _PythonWalk.constant,
         LinearOp.COND: _PythonWalk.condition, LinearOp.LOAD: _PythonWalk.load,
         LinearOp.STORE: _PythonWalk.store, LinearOp.ACC: _PythonWalk.accumulator,
         LinearOp.ACC_UPDATE: _PythonWalk.accumulate}
