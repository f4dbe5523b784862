"""The WGSL walk: one kernel's LinearProgram as a WGSL compute entry point. Module-scope storage
bindings (and the symbolic sizes' i32 array), flat work-group and local ids from the program's
LaunchDims, `let` values and `var` accumulators, packed 1- and 2-byte memory. WGSLRenderer.walk
(renderers/wgsl.py, whose spelling helpers it uses) makes one per render.
"""
from __future__ import annotations

from ..codegen.linear_ops import LinearOp
from ..dtype import DType, dtypes
from ..ir import symbolic as sym
from . import wgsl_int64
from .gpu_c import _GPUWalk
from .wgsl import WGSLRenderer, wgsl_cond, wgsl_text


class WGSLWalk(_GPUWalk):
    """The GPU walk writing WGSL statements: flat ids, packed memory, braces on every `if`."""

    def __init__(self, renderer: WGSLRenderer, program):
        if program.wide_variables:
            raise NotImplementedError(f"WGSLRenderer: variables {sorted(program.wide_variables)} "
                                      f"range past int32; WGSL kernels take i32 variables")
        if program.index_dtype != dtypes.int32:
            largest = max(i.arg[1] * i.dtype.itemsize for i in program.instrs if i.op == LinearOp.PARAM)
            raise MemoryError(f"cannot allocate {largest / 2**20:.1f} MiB on WEBGPU for kernel "
                              f"{program.name}: WGSL indexes buffers with i32 (2**31 elements)")
        super().__init__(renderer, program)
        self.dims = renderer.launch(program)
        self.params: dict[int, tuple] = {}   # buffer index -> (dtype, is_output)

    def run(self) -> str:
        bindings = []
        for i, instr in enumerate(self.p.instrs):
            if instr.op == LinearOp.PARAM:
                index, _size, is_out, _is_in = instr.arg
                self.params[index] = (instr.dtype.scalar, is_out)
                bindings.append(self.r.binding(index, instr.dtype.scalar, is_out))
                self.names[i] = [f"data{index}"]
        if self.p.variables:  # symbolic sizes: one read-only i32 array after the buffers
            bindings.append(f"@group(0) @binding({len(bindings)}) var<storage, read> "
                            f"variables: array<i32>;")
        for i, instr in enumerate(self.p.instrs):
            if instr.op != LinearOp.PARAM:
                self.shared = self.declare_repeats(i, instr)
                self.step(i, instr)
        groups, block = self.dims.grid[0], self.dims.block[0]
        head = [f"  let {name}: i32 = variables[{k}];"
                for k, name in enumerate(self.p.variable_names)]
        if groups > self.dims.groups[0]:   # dispatched as x * y >= groups: skip the rest
            head.append("  " + self.r.return_line.format(condition=f"gindex >= {groups}"))
        body = "\n".join(head + self.lines)
        module = [*bindings, *self.local_lines]
        signature = (f"@compute @workgroup_size({block})\n"
                     f"fn {self.p.name}(@builtin(workgroup_id) wid: vec3<u32>, "
                     f"@builtin(num_workgroups) nwg: vec3<u32>, "
                     f"@builtin(local_invocation_index) lindex: u32) {{\n"
                     f"  let gindex = i32(wid.x + wid.y * nwg.x);\n"
                     f"  let lidx = i32(lindex);")
        helpers = self.r.helpers(self.index_type, body + "".join(self.local_lines))
        helpers += "\n" if helpers else ""
        return helpers + "\n".join(module) + f"\n\n{signature}\n{body}\n}}\n"

    def wgsl_cond(self, cond: sym.Cond) -> str:
        return wgsl_cond(cond, self.shared)

    def index_declaration(self, name: str, text: str) -> str:
        return f"let {name}: {self.index_type} = {wgsl_text(text)};"

    def step(self, i: int, instr) -> None:
        if instr.op == LinearOp.LOAD:
            return self.load(i, instr)
        if instr.op == LinearOp.STORE:
            return self.store(i, instr)
        if instr.op == LinearOp.COND:
            self.names[i] = [self.wgsl_cond(c) for c in instr.arg]
            return
        super().step(i, instr)

    def define(self, base: str, lane: int, lanes: int, type_name: str, value: str) -> str:
        name = base if lanes == 1 else f"{base}_{lane}"
        keyword = "var" if base.startswith(("acc", "red")) else "let"
        self.emit(f"{keyword} {name}: {type_name} = {value};")
        return name

    def word_index(self, i: int, lane: int, buf: int, index: sym.Lin, dtype: DType) -> str:
        """Emit the element's u32 index; returns the name."""
        name = f"idx{i}" + (f"_{lane}" if lane else "")
        self.emit(f"let {name}: u32 = u32({wgsl_text(self.index(index))});")
        return name

    def element(self, buf: int, index: sym.Lin) -> str:
        text = self.index(index)
        if not index.terms and index.const < 0:  # only ever read under a false guard
            text = "0"
        return f"data{buf}[{wgsl_text(text)}]"

    def load(self, i: int, instr) -> None:
        buf, indices, valids = instr.arg
        dtype, is_output = self.params[buf]
        t = self.r.type_name(dtype)
        names = []
        for lane in range(instr.dtype.count):
            if dtype.itemsize == 4:
                value = self.element(buf, indices[lane])
            elif dtype.itemsize == 8:
                at = self.word_index(i, lane, buf, indices[lane], dtype)
                value = f"{wgsl_int64.VEC}(data{buf}[2u * {at}], data{buf}[2u * {at} + 1u])"
            else:
                value = self.packed_load(i, lane, buf, indices[lane], dtype, is_output)
            if valids[lane].is_false:
                value = self.r.literal(0, dtype)
            elif not valids[lane].is_true:
                value = f"select({self.r.literal(0, dtype)}, {value}, " \
                        f"{self.wgsl_cond(valids[lane])})"
            names.append(self.define(f"val{i}", lane, instr.dtype.count, t, value))
        self.names[i] = names

    def packed_load(self, i: int, lane: int, buf: int, index, dtype: DType, atomic: bool) -> str:
        at = self.word_index(i, lane, buf, index, dtype)
        per_word = 4 // dtype.itemsize
        word = f"data{buf}[{at} / {per_word}u]"
        word = f"atomicLoad(&{word})" if atomic else word
        bits = f"(({word} >> (({at} % {per_word}u) * {dtype.bits}u)) & " \
               f"{hex((1 << dtype.bits) - 1)}u)"
        if dtype == dtypes.bool:
            return f"({bits} != 0u)"
        if dtype == dtypes.float16:
            return f"unpack2x16float({bits}).x"
        return bits if dtype.is_unsigned else self.r.wrap(f"i32({bits})", dtype)

    def store(self, i: int, instr) -> None:
        buf, indices, valids = instr.arg
        dtype, _ = self.params[buf]
        for lane in range(instr.dtype.count):
            if valids[lane].is_false:
                continue  # a lane past the end of a padded dimension: nothing to write
            value = wgsl_text(self.ref(instr.src[0], lane))
            at = f"at{i}" + (f"_{lane}" if lane else "")
            if dtype.itemsize == 4:
                lines = [f"{self.element(buf, indices[lane])} = {value};"]
            elif dtype.itemsize == 8:
                lines = [f"let {at}: u32 = u32({wgsl_text(self.index(indices[lane]))});",
                         f"data{buf}[2u * {at}] = {value}.x;",
                         f"data{buf}[2u * {at} + 1u] = {value}.y;"]
            else:
                lines = self.packed_store(at, buf, indices[lane], dtype, value)
            if valids[lane].is_true:
                for line in lines:
                    self.emit(line)
                continue
            self.emit(f"if {self.wgsl_cond(valids[lane])} {{")
            for line in lines:
                self.emit("  " + line)
            self.emit("}")

    def packed_store(self, at: str, buf: int, index, dtype: DType, value: str) -> list[str]:
        per_word, mask = 4 // dtype.itemsize, hex((1 << dtype.bits) - 1)
        if dtype == dtypes.bool:
            bits = f"select(0u, 1u, {value})"
        elif dtype == dtypes.float16:
            bits = f"(pack2x16float(vec2f({value}, 0.0f)) & {mask}u)"
        else:
            bits = f"(u32({value}) & {mask}u)"
        shift = f"(({at} % {per_word}u) * {dtype.bits}u)"
        word = f"&data{buf}[{at} / {per_word}u]"
        return [f"let {at}: u32 = u32({wgsl_text(self.index(index))});",
                f"atomicAnd({word}, ~({mask}u << {shift}));",
                f"atomicOr({word}, {bits} << {shift});"]

    def group_reduce(self, i: int, instr) -> None:
        op, slot, base, count, size = instr.arg
        t = self.r.type_name(instr.dtype.scalar)
        lanes = len(self.names[instr.src[0]])
        names = []
        for lane in range(lanes):
            buffer = f"temp{i}" + (f"_{lane}" if lanes > 1 else "")
            self.local_lines.append(f"var<workgroup> {buffer}: array<{t}, {size}>;")
            self.emit(f"{buffer}[{wgsl_text(self.index(slot))}] = {self.ref(instr.src[0], lane)};")
            self.emit("workgroupBarrier();")
            name = self.define(f"red{i}", lane, lanes, t,
                               f"{buffer}[{wgsl_text(self.index(base))}]")
            part = sym.var(f"part{i}", 0, count - 1)
            read = f"{buffer}[{wgsl_text(self.index(base + part))}]"
            self.emit(f"for (var part{i}: i32 = 1; part{i} < {count}; part{i}++) {{ {name} = "
                      f"{self.r.alu(op, [name, read], instr.dtype, instr.dtype)}; }}")
            names.append(name)
        self.names[i] = names
