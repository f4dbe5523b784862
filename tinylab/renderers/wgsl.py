"""The WGSL renderer (WebGPU): the GPU walk of the C family with WGSL's spelling and what WGSL
lacks decomposed by rule. Buffers are module-scope storage bindings, a kernel indexes one flat
work-group id and one flat local id (runtimes/launch.py), values are `let`, accumulators `var`.

WGSL has 32-bit scalars only: f32, i32, u32 and bool. Registers widen int8/int16 to i32 and
uint8/uint16 to u32 (wrapped after each op), float16 to f32 (rounded through pack2x16float, no
`f16` extension needed); memory packs 1- and 2-byte elements into u32 words (stores through
atomicAnd/atomicOr so neighbours in a word never race). int64/uint64 are two u32 words with each
op a WGSL function (wgsl_int64.py). float64 raises an error naming it.
"""
from __future__ import annotations

import math
import re

from ..codegen.linear_ops import LinearOp
from ..dtype import DType, dtypes
from ..ir import symbolic as sym
from ..runtimes.launch import WEBGPU_BLOCK_LIMIT, flat_launch_dims, webgpu_dispatch
from .cstyle import INFIX, cond_text
from . import wgsl_int64
from .gpu_c import GPURenderer, _GPUWalk

REGISTER = {dtypes.bool: "bool", dtypes.int8: "i32", dtypes.int16: "i32", dtypes.int32: "i32",
            dtypes.uint8: "u32", dtypes.uint16: "u32", dtypes.uint32: "u32",
            dtypes.float16: "f32", dtypes.float32: "f32", dtypes.int64: wgsl_int64.VEC,
            dtypes.uint64: wgsl_int64.VEC}
MEMORY = {dtypes.int32: "i32", dtypes.uint32: "u32", dtypes.float32: "f32"}  # else packed u32
# `name<` opens a template list in WGSL (`a<b & c>d` would parse as one): parenthesize the name
# words a literal-only expression may hold (`1.0f`, `1e-05f`, `3i`, `i32(...)`)
# bool operands are WGSL bools: or / and / xor spelled as such
BOOL_SPELLING = {"ADD": "({0} | {1})", "MUL": "({0} & {1})", "MAX": "({0} | {1})", "NEG": "(!{0})",
                 "XOR": "({0} != {1})"}
# every other ALU op on 32-bit values: the WGSLRenderer method that spells it
WGSL_SPELLING = {"RECIPROCAL": "spell_reciprocal", "NEG": "spell_neg", "ADD": "spell_infix",
                 "MUL": "spell_infix", "AND": "spell_infix", "OR": "spell_infix",
                 "XOR": "spell_infix", "MAX": "spell_max", "CMPLT": "spell_cmplt",
                 "CMPNE": "spell_cmpne", "IDIV": "spell_division", "MOD": "spell_division",
                 "SHL": "spell_shift", "SHR": "spell_shift", "WHERE": "spell_where",
                 "CAST": "spell_cast", "BITCAST": "spell_bitcast"}
_LITERAL_WORDS = {"e", "f", "i", "u", "i32", "u32", "f32"}
_TEMPLATE_LIKE = re.compile(r"\b(?!bitcast\b|array\b|vec[234]\b)([A-Za-z_]\w*)<(?![<=])")
HELPERS = {
    "tl_isnan(": "fn tl_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > "
                 "0x7f800000u; }\n",
    "tl_f32bits(": "fn tl_f32bits(bits: u32) -> f32 { return bitcast<f32>(bits); }\n",
    "tl_round_half(": "fn tl_round_half(x: f32) -> f32 { return unpack2x16float(pack2x16float("
                      "vec2f(x, 0.0f))).x; }\n",
    "tl_keep_f32(": "fn tl_keep_f32(x: f32) -> f32 { return x; }\n",
    "tl_keep_i32(": "fn tl_keep_i32(x: i32) -> i32 { return x; }\n",
    "tl_keep_u32(": "fn tl_keep_u32(x: u32) -> u32 { return x; }\n",
    "tl_fdiv(": "fn tl_fdiv(a: i32, b: i32) -> i32 { let q = a / b; return select(q, q - 1, "
                "(a % b != 0) & ((a < 0) != (b < 0))); }\n",
    "tl_fmod(": "fn tl_fmod(a: i32, b: i32) -> i32 { let r = a % b; return select(r, r + b, "
                "(r != 0) & ((r < 0) != (b < 0))); }\n",
}


def wgsl_text(text: str) -> str:
    """C-family expression text made valid WGSL: no template-looking `name<`."""
    return _TEMPLATE_LIKE.sub(r"(\1)<", text)


def _literal_only(text: str) -> bool:
    """The text is built from number literals alone (WGSL folds it at shader creation)."""
    return any(c.isdigit() for c in text) and \
        set(re.findall(r"[A-Za-z_]\w*", text)) <= _LITERAL_WORDS


def wgsl_cond(cond: sym.Cond, names: dict | None = None) -> str:
    """A condition as a WGSL bool expression; `names` as in cstyle.index_text."""
    return "true" if cond.is_true else "false" if cond.is_false else \
        wgsl_text(cond_text(cond, names))


def _unsupported(dtype: DType) -> NotImplementedError:
    return NotImplementedError(f"WGSL has no {dtype.name} (its scalars are 32-bit: f32, i32, "
                               f"u32, bool); WEBGPU cannot run a kernel that uses {dtype.name}")


class WGSLRenderer(GPURenderer):
    device = "WEBGPU"
    infinity, nan = "tl_f32bits(0x7f800000u)", "tl_f32bits(0x7fc00000u)"
    float_math = {"EXP2": "exp2", "LOG2": "log2", "SIN": "sin", "SQRT": "sqrt", "TRUNC": "trunc"}
    lacks_dtypes = frozenset({"float64"})
    finite_math = True   # WGSL lets implementations assume no NaN / inf (and flush subnormals)
    max_work_group = WEBGPU_BLOCK_LIMIT
    # launched loops (gpu_c.py _GPUWalk.launched_loop): `let`, ids already i32, braced returns
    index_line = "let {name}: {index_type} = {value};"
    id_cast = "{id}"
    id_divided = "(({id} / {below}) % {size})"
    id_modulo = "({id} % {size})"
    return_line = "if ({condition}) {{ return; }}"

    def id_text(self, space: str, dim: int) -> str:
        """The flat work-group id or the flat local id (_WGSLWalk.run declares both)."""
        return "gindex" if space == "group" else "lidx"

    # ---- types and literals ----
    def type_name(self, dtype: DType) -> str:
        if dtype.scalar == dtypes.void:
            return "void"
        if dtype.scalar not in REGISTER:
            raise _unsupported(dtype.scalar)
        return REGISTER[dtype.scalar]

    def memory_type(self, dtype: DType) -> str:
        self.type_name(dtype)
        return MEMORY.get(dtype.scalar, "u32")

    def literal(self, value, dtype: DType) -> str:
        dtype = dtype.scalar
        kind = self.type_name(dtype)
        if kind == "bool":
            return "true" if value else "false"
        if kind == wgsl_int64.VEC:
            return wgsl_int64.literal(value)
        if kind == "f32":
            value = float(value)
            if math.isnan(value):
                return self.nan
            if math.isinf(value):
                return self.infinity if value > 0 else "tl_f32bits(0xff800000u)"
            return f"{value!r}f"
        if kind == "u32":
            return f"{int(value)}u"
        value = int(value)
        return f"i32({value})" if value == -2 ** 31 else f"{value}i"

    # ---- ops ----
    def math_call(self, op: str, x: str, dtype: DType) -> str:
        return f"{self.float_math[op]}({x})"

    def alu(self, op: str, args: list[str], dtype: DType, src_dtype: DType) -> str:
        args = [wgsl_text(a) for a in args]
        if wgsl_int64.is_wide(dtype.scalar) or wgsl_int64.is_wide(src_dtype.scalar):
            return wgsl_int64.alu(self, op, args, dtype.scalar, src_dtype.scalar)
        kind = self.type_name(src_dtype.scalar)
        if op != LinearOp.WHERE and kind in ("f32", "i32", "u32") and all(map(_literal_only, args)):
            # naga folds a literal-only expression while parsing and rejects an inf, NaN or
            # division by zero there (`1.0f / 0.0f`, `log2(0.0f)`): a call to a function is not
            # folded, so the kernel computes it at run time like every other backend
            args = [f"tl_keep_{kind}({args[0]})"] + args[1:]
        text = self._alu(op, args, dtype.scalar, src_dtype.scalar)
        wraps = (LinearOp.ADD, LinearOp.MUL, LinearOp.NEG, LinearOp.SHL, LinearOp.IDIV)
        if op in wraps and dtype.scalar.is_int:
            text = self.wrap(text, dtype.scalar)
        return text

    def _alu(self, op: str, args: list[str], dtype: DType, src: DType) -> str:
        """One ALU op on 32-bit (or bool) values: a bool spelling, a math call, or the method
        WGSL_SPELLING names for it."""
        if dtype.is_bool and op in BOOL_SPELLING:
            return BOOL_SPELLING[op].format(*args)
        if op in self.float_math:
            return f"{self.float_math[op]}({args[0]})"
        if op not in WGSL_SPELLING:
            raise NotImplementedError(f"WGSLRenderer cannot render {op}")
        return getattr(self, WGSL_SPELLING[op])(op, args, dtype, src)

    def spell_reciprocal(self, op: str, args: list[str], dtype: DType, src: DType) -> str:
        return f"(1.0f / {args[0]})"

    def spell_neg(self, op: str, args: list[str], dtype: DType, src: DType) -> str:
        return f"(0u - {args[0]})" if self.type_name(dtype) == "u32" else f"(-({args[0]}))"

    def spell_infix(self, op: str, args: list[str], dtype: DType, src: DType) -> str:
        return f"({args[0]} {INFIX[op]} {args[1]})"

    def spell_max(self, op: str, args: list[str], dtype: DType, src: DType) -> str:
        a, b = args
        keep_a = f"(({a}) > ({b}))" + (f" | tl_isnan({a})" if self.type_name(dtype) == "f32" else "")
        return f"select({b}, {a}, {keep_a})"

    def spell_cmplt(self, op: str, args: list[str], dtype: DType, src: DType) -> str:
        a, b = args
        return f"((!{a}) & {b})" if src.is_bool else f"(({a}) < ({b}))"

    def spell_cmpne(self, op: str, args: list[str], dtype: DType, src: DType) -> str:
        a, b = args
        if a == b and REGISTER.get(src) == "f32":
            return f"tl_isnan({a})"  # x != x: some WGSL compilers assume no NaN
        return f"(({a}) != ({b}))"

    def spell_division(self, op: str, args: list[str], dtype: DType, src: DType) -> str:
        a, b = args
        zero = self.literal(0, dtype)
        return f"select(({a}) {'/' if op == 'IDIV' else '%'} ({b}), {zero}, ({b}) == {zero})"

    def spell_shift(self, op: str, args: list[str], dtype: DType, src: DType) -> str:
        return self.shift(op, args[0], args[1], dtype)

    def spell_where(self, op: str, args: list[str], dtype: DType, src: DType) -> str:
        return f"select({args[2]}, {args[1]}, {args[0]})"

    def spell_cast(self, op: str, args: list[str], dtype: DType, src: DType) -> str:
        return self.cast(args[0], src, dtype)

    def spell_bitcast(self, op: str, args: list[str], dtype: DType, src: DType) -> str:
        return self.bitcast(args[0], src, dtype)

    def shift(self, op: str, a: str, b: str, dtype: DType) -> str:
        """Shifts by at least the width give 0 (or the sign for >> on a signed value), as numpy;
        WGSL would take the amount modulo 32 and wants it as u32."""
        amount = f"u32({b})"
        if op == LinearOp.SHL:
            return f"select(({a}) << {amount}, {self.literal(0, dtype)}, {amount} >= 32u)"
        if dtype.is_unsigned:
            return f"select(({a}) >> {amount}, 0u, {amount} >= 32u)"
        return f"(({a}) >> min({amount}, 31u))"

    @staticmethod
    def wrap(text: str, dtype: DType) -> str:
        """A 1- or 2-byte integer held in 32 bits: keep only its own bits (sign-extended)."""
        if dtype.itemsize >= 4:
            return text
        bits = 32 - dtype.bits
        if dtype.is_unsigned:
            return f"({text} & {hex((1 << dtype.bits) - 1)}u)"
        return f"(({text} << {bits}u) >> {bits}u)"

    def cast(self, a: str, src: DType, dst: DType) -> str:
        to, frm = self.type_name(dst), self.type_name(src)
        if dst == dtypes.float16:
            return f"tl_round_half(f32({a}))"
        if to == "bool":
            return f"({a} != {self.literal(0, src)})" if frm != "bool" else a
        if frm == "f32" and to != "f32":
            return f"select({self.float_to_int(a, dst)}, {self.literal(0, dst)}, tl_isnan({a}))"
        return self.wrap(f"{to}({a})", dst) if to != frm or dst.itemsize < src.itemsize else a

    def float_to_int(self, a: str, dst: DType) -> str:
        """numpy's cast (the oracle's, as x86 C): small types saturate; past int32's range is
        INT_MIN, past uint32's is 0 (WGSL's i32() / u32() would saturate)."""
        to = self.type_name(dst)
        if dst.itemsize < 4:
            low, high = float(dst.min_value()), float(dst.max_value())
            return f"{to}(clamp({a}, {low!r}f, {high!r}f))"
        if dst.is_unsigned:
            return f"select(u32({a}), 0u, {a} >= 4294967296.0f)"
        return f"select(i32({a}), i32(-2147483648), !(abs({a}) < 2147483648.0f))"

    def bitcast(self, a: str, src: DType, dst: DType) -> str:
        if src.itemsize == 4 and dst.itemsize == 4:
            return f"bitcast<{self.type_name(dst)}>({a})"
        if src == dtypes.float16 and dst.itemsize == 2:
            return self.wrap(f"{self.type_name(dst)}(pack2x16float(vec2f({a}, 0.0f)))", dst)
        if dst == dtypes.float16 and src.itemsize == 2:
            return f"unpack2x16float(u32({a}) & 0xffffu).x"
        if src.is_int and dst.is_int and src.itemsize == dst.itemsize:
            # int16 <-> uint16 (8-bit alike), held in 32 bits: i32 <-> u32 keeps the bits, then
            # keep the low ones (sign-extended for a signed result)
            return self.wrap(f"{self.type_name(dst)}({a})", dst)
        raise NotImplementedError(f"WGSLRenderer: BITCAST {src.name} -> {dst.name}")

    # ---- structure ----
    def binding(self, index: int, dtype: DType, is_output: bool) -> str:
        element = self.memory_type(dtype)
        if is_output and dtype.itemsize < 4:
            element = "atomic<u32>"   # packed stores: atomicAnd / atomicOr on the word
        access = "read_write" if is_output else "read"
        return f"@group(0) @binding({index}) var<storage, {access}> data{index}: array<{element}>;"

    def range_open(self, name: str, size: int, kind: str, index_type: str, threads: int,
                   in_region: bool = False) -> list:
        return [f"for (var {name}: {index_type} = 0; {name} < {size}; {name}++) {{"]

    def helpers(self, index_type: str, body: str) -> str:
        wide = wgsl_int64.helpers(body)
        body += wide
        return "".join(text for marker, text in HELPERS.items() if marker in body) + wide

    def walk(self, program) -> _WGSLWalk:
        return _WGSLWalk(self, program)


class _WGSLWalk(_GPUWalk):
    """The GPU walk writing WGSL statements: flat ids, packed memory, braces on every `if`."""

    def __init__(self, renderer: WGSLRenderer, program):
        if program.index_dtype != dtypes.int32:
            largest = max(i.arg[1] * i.dtype.itemsize for i in program.instrs if i.op == LinearOp.PARAM)
            raise MemoryError(f"cannot allocate {largest / 2**20:.1f} MiB on WEBGPU for kernel "
                              f"{program.name}: WGSL indexes buffers with i32 (2**31 elements)")
        super().__init__(renderer, program)
        self.dims = flat_launch_dims(program.loops)
        self.parts = {part.var: part for part in self.dims.parts}
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
        if groups > webgpu_dispatch(groups)[0]:   # dispatched as x * y >= groups: skip the rest
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


__all__ = ["WGSLRenderer", "WEBGPU_BLOCK_LIMIT"]
