"""The linear program's instruction set: `LinearOp`, what `Instr.op` holds (codegen/linearize.py).
Structure, memory and accumulator instructions are declared here; ALU instructions are the
primitive ALU ops of ir/ops.py by name. Renderers walk programs of these and key tables on them.
"""
from __future__ import annotations

from ..ir.ops import ALU, Op
from ..memo import Role, register

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


class _Vocabulary(type):
    """LinearOp's class: STRUCTURE names, then the ALU primitives registered in ir/ops.py now
    (one registered later, as a test's SQUARE, is an instruction from then on)."""

    def _member(cls, name: str) -> LinearOp:
        member = cls._members.get(name)
        if member is None:
            if name not in STRUCTURE and not (name in Op and Op[name] in ALU):
                raise ValueError(f"{name!r} is not a LinearOp (structure or ALU primitive)")
            member = cls._members[name] = str.__new__(cls, name)
        return member

    def __getattr__(cls, name: str) -> LinearOp:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return cls._member(name)
        except ValueError:
            raise AttributeError(f"LinearOp has no {name}") from None

    def __call__(cls, value) -> LinearOp:
        return cls._member(value.name if isinstance(value, Op) else str(value))

    def __getitem__(cls, name: str) -> LinearOp:
        try:
            return cls._member(name)
        except ValueError:
            raise KeyError(name) from None

    def __iter__(cls):
        return iter([cls._member(name) for name in cls.names()])

    def names(cls) -> list[str]:
        return list(STRUCTURE) + [op.name for op in Op if op in ALU]

    @property
    def __members__(cls) -> dict:
        return {name: cls._member(name) for name in cls.names()}


class LinearOp(str, metaclass=_Vocabulary):
    """An instruction of the linear program: STRUCTURE above, then every ALU op. A str equal to
    its name, so tables keyed on names ("ADD") find it too; Op[linear_op] is its primitive row."""
    _members: dict = {}   # name -> instruction, made on first use (registered below)

    def __repr__(self) -> str:
        return f"LinearOp.{str(self)}"

    def __str__(self) -> str:
        return str.__str__(self)

    @property
    def name(self) -> str:
        return str.__str__(self)

    @property
    def value(self) -> str:
        return str.__str__(self)


for _name in LinearOp.names():   # the vocabulary at import as plain attributes (fast lookups)
    setattr(LinearOp, _name, LinearOp._member(_name))


register("linear instructions", LinearOp._members, Role.LIVE)   # one str object per name
