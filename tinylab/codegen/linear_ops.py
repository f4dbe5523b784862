"""The linear program's instruction set: `LinearOp`, what `Instr.op` holds (codegen/linearize.py).
Structure, memory and accumulator instructions are declared here; ALU instructions are the
primitive ALU ops of ir/ops.py by name. Renderers walk programs of these and key tables on them.
"""
from __future__ import annotations

from enum import StrEnum

from ..ir.ops import ALU, Op

STRUCTURE = (
    "PARAM",          # a buffer parameter: arg (index, size, is_output, is_input)
    "RANGE",          # open a loop: arg (variable name, size, axis kind)
    "END",            # close the innermost open loop
    "CONST",          # a literal: arg the value
    "LOAD",           # read a buffer: arg (buffer, index per lane, valid per lane)
    "STORE",          # write a buffer: src (value,), arg as LOAD
    "COND",           # per-lane validity conditions as a bool value: arg the conditions
    "ACC",            # an accumulator register: arg its initial value (the reduce identity)
    "ACC_UPDATE",     # acc = acc <op> value: src (acc, value), arg the ALU op's name
    "VREDUCE",        # fold an accumulator's vector lanes into one: arg the ALU op's name
    "READ_ACC",       # the accumulator's value after its loops (linearize only; never rendered)
    "GROUP_REDUCE",   # combine accumulators across a GPU work-group (codegen/gpu_plan.py)
)
# a str enum: each member equals its name, so tables keyed on names ("ADD") find it too
LinearOp = StrEnum("LinearOp", [(name, name) for name in STRUCTURE] +
                   [(op.name, op.name) for op in Op if op in ALU])
LinearOp.__doc__ = "An instruction of the linear program: STRUCTURE above, then every ALU op."
