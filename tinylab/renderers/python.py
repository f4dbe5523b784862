"""The Python renderer: a LinearProgram as Python + numpy source for the PYTHON runtime.

Global loops become broadcast index arrays (the whole output index space at once), reduce loops
stay Python `for` loops, ALU ops call `alu(...)` (numpy_alu, the oracle's arithmetic). The text
reads like the C kernel, so a learner can compare them line by line. Pure string building.
"""
from __future__ import annotations

import math

from ..codegen.plan import Action
from ..dtype import DType
from ..ir import symbolic as sym
from .base import Renderer


def _literal(value, dtype: DType) -> str:
    if dtype.is_float and (math.isnan(value) or math.isinf(value)):
        value = repr(str(float(value)))
    elif dtype.is_bool:
        value = bool(value)
    return f"np.{dtype.numpy_name}({value})" if not dtype.is_bool else f"np.bool_({value})"


def _cond(cond: sym.Cond) -> str:
    return sym.render_cond(cond).replace(" && ", " & ")


class PythonRenderer(Renderer):
    device = "PYTHON"
    supported_actions = (Action.UPCAST, Action.UNROLL, Action.SWAP)  # every dtype, IEEE

    def render(self, program) -> str:
        globals_ = [(n, s) for n, s, kind in program.loops if kind in ("global", "thread")]
        shape = tuple(s for _, s in globals_)
        names: dict[int, str] = {}
        lines = [f"def {program.name}({', '.join(f'data{p.index}' for p in program.params)}):"]
        indent = 1
        for p in program.params:
            lines.append(f"    data{p.index} = data{p.index}.view(np.{p.dtype.numpy_name})")
        lines.append(f"    shape = {shape}")
        g = 0

        def emit(text: str) -> None:
            lines.append("    " * indent + text)

        for i, instr in enumerate(program.instrs):
            op, dtype = instr.op, instr.dtype.scalar
            if instr.dtype.count != 1:
                raise NotImplementedError("the PYTHON renderer does not render vector lanes")
            args = [names[s] for s in instr.src]
            if op == "PARAM":
                names[i] = f"data{instr.arg[0]}"
            elif op == "RANGE":
                name, size, kind = instr.arg
                if kind in ("global", "thread"):
                    emit(f"{name} = arange({size}, {g}, {len(globals_)})")
                    g += 1
                else:
                    emit(f"for {name} in range({size}):")
                    indent += 1
            elif op == "END":
                if indent > 1:
                    indent -= 1
            elif op == "CONST":
                names[i] = _literal(instr.arg, dtype)
            elif op == "COND":
                names[i] = _cond(instr.arg[0])
            elif op == "LOAD":
                buf, (index,), (valid,) = instr.arg
                valid_text = "True" if valid.is_true else _cond(valid)
                emit(f"val{i} = load(data{buf}, {index}, {valid_text}, ())")
                names[i] = f"val{i}"
            elif op == "STORE":
                buf, (index,), _ = instr.arg
                emit(f"store(data{buf}, {index}, {args[0]}, shape)")
            elif op == "ACC":
                emit(f"acc{i} = np.full(shape, {_literal(instr.arg, dtype)})")
                names[i] = f"acc{i}"
            elif op == "ACC_UPDATE":
                emit(f"{args[0]} = alu({instr.arg!r}, {args[0]}, np.asarray({args[1]}))")
            elif op in ("CAST", "BITCAST"):
                emit(f"alu{i} = cast({args[0]}, np.{dtype.numpy_name}, {op == 'BITCAST'})")
                names[i] = f"alu{i}"
            else:
                arrays = ", ".join(f"np.asarray({a})" for a in args)
                emit(f"alu{i} = alu({str(op)!r}, {arrays})")
                names[i] = f"alu{i}"
        return "import numpy as np\n\n" + "\n".join(lines) + "\n"
