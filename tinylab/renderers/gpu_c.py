"""The GPU C family: what OpenCL C, CUDA C, Metal and WGSL share on top of the C family renderer
(the plan side is codegen/gpu_plan.py). Output loops become work-group and work-item ids (no
loop), GROUP_REDUCE goes through local memory behind a barrier, and float16 lives in memory only
(registers hold float; loads, stores and casts convert).
Subclasses name the ids, qualifiers, barrier and half conversions. Pure string building.
"""
from __future__ import annotations

from ..caps import PlanFamily
from ..codegen.linear_ops import LinearOp
from ..codegen.plan import Action
from ..dtype import DType, dtypes
from ..ir import symbolic as sym
from ..target.launch import IdSpace, launch_dims
from .cstyle import CStyleRenderer, _Walk


class GPURenderer(CStyleRenderer):
    local_qualifier = ""     # "__local " / "__shared__ "
    barrier = ""             # the work-group barrier statement
    # GPUs here: threads are work-items, tiles are registers, no vector lanes
    supported_actions = (Action.UPCAST, Action.UNROLL, Action.LOCAL, Action.GROUP, Action.SWAP)
    plan_family = PlanFamily.GPU  # plans come from codegen/heuristic_gpu.py
    half_arithmetic = False     # float16 math runs in float (codegen/decompose.py)
    max_work_group = 1024       # work-items per work-group (target/launch.py BLOCK_LIMITS)
    fold_launch = staticmethod(launch_dims)   # output loops -> a grid of up to 3 dimensions
    # how a loop the launch runs is spelled (_GPUWalk.launched_loop): its index declared from a
    # work-item id, cast to the index type (alone too where ids are unsigned: Metal), the part
    # of the id it takes when loops share one, the return past its size when launched to a maximum
    index_line = "{index_type} {name} = {value};"
    id_cast = "(({index_type}){id})"
    cast_alone_id = False
    id_divided = "(({id}/{below})%{size})"
    id_modulo = "({id}%{size})"
    return_line = "if ({condition}) return;"

    def id_text(self, space: IdSpace, dim: int) -> str:
        raise NotImplementedError

    def load_half(self, buffer: str, index: str) -> str:
        raise NotImplementedError

    def store_half(self, buffer: str, index: str, value: str) -> str:
        raise NotImplementedError

    def round_half(self, value: str) -> str:
        raise NotImplementedError

    def type_name(self, dtype: DType) -> str:
        return "float" if dtype.scalar == dtypes.float16 else self.scalar_type(dtype.scalar)

    def scalar_type(self, dtype: DType) -> str:
        return dtype.c_name

    def memory_type(self, dtype: DType) -> str:
        """The element type of a buffer parameter."""
        return "half" if dtype.scalar == dtypes.float16 else self.type_name(dtype)

    def literal(self, value, dtype: DType) -> str:
        if dtype.scalar == dtypes.float16:
            dtype = dtypes.float32   # a half value is exact in float
        return super().literal(value, dtype)

    def alu(self, op: str, args: list[str], dtype: DType, src_dtype: DType) -> str:
        if op == LinearOp.CAST and dtype.scalar == dtypes.float16:
            return self.round_half(f"(float)({args[0]})")
        if op == LinearOp.BITCAST and dtype.scalar == dtypes.float16:  # bits -> a half held in float
            return self.half_from_bits(f"(({self.type_name(dtypes.uint16)})({args[0]}))")
        if op == LinearOp.BITCAST and src_dtype.scalar == dtypes.float16:  # a half in float -> bits
            return f"(({self.type_name(dtype)}){self.half_bits(args[0])})"
        return super().alu(op, args, dtype, src_dtype)

    def half_bits(self, value: str) -> str:
        """The 16 bits (unsigned) of float `value` rounded to half."""
        raise NotImplementedError(f"{type(self).__name__}: BITCAST to/from float16")

    def half_from_bits(self, bits: str) -> str:
        """The half whose bits are the unsigned 16-bit `bits`, as a float."""
        raise NotImplementedError(f"{type(self).__name__}: BITCAST to/from float16")

    def param(self, index: int, dtype: DType, is_output: bool, is_input: bool) -> str:
        const = "const " if not is_output else ""
        return f"{self.buffer_qualifier}{const}{self.memory_type(dtype)}* {self.restrict} " \
               f"data{index}"

    def walk(self, program) -> _GPUWalk:
        return _GPUWalk(self, program)


class _GPUWalk(_Walk):
    """The C walk with ids for output loops, local memory for GROUP_REDUCE, half conversions."""

    def __init__(self, renderer: GPURenderer, program):
        super().__init__(renderer, program)
        self.parts = {part.var: part for part in renderer.launch(program).parts}
        self.opened: list[bool] = []   # per RANGE: did it open a brace?
        self.local_lines: list[str] = []

    def run(self) -> str:
        text = super().run()
        if not self.local_lines:
            return text
        head, _, body = text.partition(" {\n")
        return head + " {\n" + "".join(f"  {line}\n" for line in self.local_lines) + body

    def step(self, i: int, instr) -> None:
        if instr.op == LinearOp.RANGE and instr.arg[0] in self.parts:
            return self.launched_loop(instr.arg[0], instr.arg[1])
        if instr.op == LinearOp.RANGE:
            self.opened.append(True)
        if instr.op == LinearOp.END and not self.opened.pop():
            return
        if instr.op == LinearOp.GROUP_REDUCE:
            return self.group_reduce(i, instr)
        if instr.op in (LinearOp.LOAD, LinearOp.STORE) and instr.dtype.scalar == dtypes.float16:
            return self.half_memory(i, instr)
        super().step(i, instr)

    def launched_loop(self, var: str, size) -> None:
        """A loop the launch runs: no loop, its index from the ids (no brace to close at END)."""
        spelling = self.r
        self.emit(spelling.index_line.format(index_type=self.index_type, name=var,
                                             value=self.id_expression(var)))
        if not isinstance(size, int):  # launched to the maximum: stop at the size
            self.emit(spelling.return_line.format(condition=f"{var} >= {size}"))
        self.opened.append(False)

    def id_expression(self, var: str) -> str:
        """The index of launched loop `var`: its id, or its part of an id loops share."""
        part, spelling = self.parts[var], self.r
        text = spelling.id_text(part.space, part.dim)
        cast = spelling.id_cast.format(index_type=self.index_type, id=text)
        if part.alone:
            return cast if spelling.cast_alone_id else text
        if part.below > 1:
            return spelling.id_divided.format(id=cast, below=part.below, size=part.size)
        return spelling.id_modulo.format(id=cast, size=part.size)

    def group_reduce(self, i: int, instr) -> None:
        op, slot, base, count, size = instr.arg
        t = self.r.type_name(instr.dtype.scalar)
        names = []
        for lane in range(len(self.names[instr.src[0]])):
            buffer = f"temp{i}" + (f"_{lane}" if len(self.names[instr.src[0]]) > 1 else "")
            self.local_lines.append(f"{self.r.local_qualifier}{t} {buffer}[{size}];")
            self.emit(f"{buffer}[{self.index(slot)}] = {self.ref(instr.src[0], lane)};")
            self.emit(self.r.barrier)
            value = f"{buffer}[{self.index(base)}]"
            name = self.define(f"red{i}", lane, len(self.names[instr.src[0]]), t, value)
            loop = f"for (int part{i} = 1; part{i} < {count}; part{i}++)"
            read = f"{buffer}[{self.index(base + sym.var(f'part{i}', 0, count - 1))}]"
            self.emit(f"{loop} {name} = {self.r.alu(op, [name, read], instr.dtype, instr.dtype)};")
            names.append(name)
        self.names[i] = names

    def half_memory(self, i: int, instr) -> None:
        buf, indices, valids = instr.arg
        names = []
        for lane in range(instr.dtype.count):
            index, valid = self.index(indices[lane]), valids[lane]
            if instr.op == LinearOp.STORE:
                store = self.r.store_half(f"data{buf}", index, self.ref(instr.src[0], lane)) + ";"
                self.emit(store if valid.is_true else f"if {self.cond(valid)} {store}")
                continue
            load = self.r.load_half(f"data{buf}", index)
            if not valid.is_true:
                load = f"({self.cond(valid)}?{load}:0.0f)"
            names.append(self.define(f"val{i}", lane, instr.dtype.count, "float", load))
        self.names[i] = names

