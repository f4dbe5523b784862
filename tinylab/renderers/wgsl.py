"""The WGSL renderer (WebGPU): the GPU walk of the C family with WGSL's spelling and what WGSL
lacks decomposed by rule. Buffers are module-scope storage bindings, a kernel indexes one flat
work-group id and one flat local id (target/launch.py), values are `let`, accumulators `var`.

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
from ..target.launch import WEBGPU_BLOCK_LIMIT, IdSpace, flat_launch_dims
from .cstyle import cond_text
from . import wgsl_int64
from .gpu_c import GPURenderer

REGISTER = {dtypes.bool: "bool", dtypes.int8: "i32", dtypes.int16: "i32", dtypes.int32: "i32",
            dtypes.uint8: "u32", dtypes.uint16: "u32", dtypes.uint32: "u32",
            dtypes.float16: "f32", dtypes.float32: "f32", dtypes.int64: wgsl_int64.VEC,
            dtypes.uint64: wgsl_int64.VEC}
MEMORY = {dtypes.int32: "i32", dtypes.uint32: "u32", dtypes.float32: "f32"}  # else packed u32
# `name<` opens a template list in WGSL (`a<b & c>d` would parse as one): parenthesize the name
# words a literal-only expression may hold (`1.0f`, `1e-05f`, `3i`, `i32(...)`)
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
    family = "wgsl"   # reads each primitive row's spellings["wgsl"] (ir/primitives/)
    lacks_dtypes = frozenset({"float64"})
    finite_math = True   # WGSL lets implementations assume no NaN / inf (and flush subnormals)
    max_work_group = WEBGPU_BLOCK_LIMIT
    fold_launch = staticmethod(flat_launch_dims)  # one flat group id, one flat local id
    # launched loops (gpu_c.py _GPUWalk.launched_loop): `let`, ids already i32, braced returns
    index_line = "let {name}: {index_type} = {value};"
    id_cast = "{id}"
    id_divided = "(({id} / {below}) % {size})"
    id_modulo = "({id} % {size})"
    return_line = "if ({condition}) {{ return; }}"

    def id_text(self, space: IdSpace, dim: int) -> str:
        """The flat work-group id or the flat local id (wgsl_walk.py's WGSLWalk.run declares both)."""
        return "gindex" if space is IdSpace.GROUP else "lidx"

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

    # ---- ops (each primitive's row spells it with the helpers below) ----
    def math_call(self, function: str, x: str, dtype: DType) -> str:
        return f"{function}({x})"

    def alu(self, op: str, args: list[str], dtype: DType, src_dtype: DType) -> str:
        """One ALU op: a 64-bit one through wgsl_int64.py, else its row's WGSL spelling on
        32-bit (or bool) values."""
        args = [wgsl_text(a) for a in args]
        if wgsl_int64.is_wide(dtype.scalar) or wgsl_int64.is_wide(src_dtype.scalar):
            return wgsl_int64.alu(self, op, args, dtype.scalar, src_dtype.scalar)
        kind = self.type_name(src_dtype.scalar)
        if op != LinearOp.WHERE and kind in ("f32", "i32", "u32") and all(map(_literal_only, args)):
            # naga folds a literal-only expression while parsing and rejects an inf, NaN or
            # division by zero there (`1.0f / 0.0f`, `log2(0.0f)`): a call to a function is not
            # folded, so the kernel computes it at run time like every other backend
            args = [f"tl_keep_{kind}({args[0]})"] + args[1:]
        return self.spelling(op)(self, args, dtype.scalar, src_dtype.scalar)

    def wrap_int(self, text: str, dtype: DType) -> str:
        """A narrow integer result kept to its own bits (a no-op for other types)."""
        return self.wrap(text, dtype) if dtype.is_int else text

    def shift(self, left: bool, a: str, b: str, dtype: DType) -> str:
        """Shifts by at least the width give 0 (or the sign for >> on a signed value), as numpy;
        WGSL would take the amount modulo 32 and wants it as u32."""
        amount = f"u32({b})"
        if left:
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
                   in_region: bool = False, balanced: bool = False) -> list:
        return [f"for (var {name}: {index_type} = 0; {name} < {size}; {name}++) {{"]

    def helpers(self, index_type: str, body: str) -> str:
        wide = wgsl_int64.helpers(body)
        body += wide
        return "".join(text for marker, text in HELPERS.items() if marker in body) + wide

    def walk(self, program):
        from .wgsl_walk import WGSLWalk   # the walk reads this module's spelling helpers
        return WGSLWalk(self, program)


__all__ = ["WGSLRenderer", "WEBGPU_BLOCK_LIMIT"]
