"""The Metal Shading Language renderer (render-only: `NULL:METAL`, `kernel.render("METAL")`): the
GPU walk with Metal's spelling. Buffers are `device` pointers bound by `[[buffer(i)]]`, output
loops are threadgroup / thread positions, GROUP reduces through `threadgroup` memory behind
`threadgroup_barrier`, float16 is `half` in memory and float in registers. Metal has no double.
"""
from __future__ import annotations

from ..dtype import DType, dtypes
from ..target.launch import IdSpace
from .gpu_c import GPURenderer

NAMES = {dtypes.int8: "char", dtypes.uint8: "uchar", dtypes.int16: "short",
         dtypes.uint16: "ushort", dtypes.uint32: "uint", dtypes.int64: "long",
         dtypes.uint64: "ulong"}
POSITIONS = ("uint3 gid [[threadgroup_position_in_grid]]",
             "uint3 lid [[thread_position_in_threadgroup]]")


class MetalRenderer(GPURenderer):
    device = "METAL"
    kernel_prefix = "kernel void"
    buffer_qualifier = "device "
    restrict = ""
    local_qualifier = "threadgroup "
    barrier = "threadgroup_barrier(mem_flags::mem_threadgroup);"
    preamble = "#include <metal_stdlib>\nusing namespace metal;\n"
    lacks_dtypes = frozenset({"float64"})
    cast_alone_id = True   # ids are unsigned in Metal: cast even a lone one to the index type

    def id_text(self, space: IdSpace, dim: int) -> str:
        return f"{'gid' if space is IdSpace.GROUP else 'lid'}.{'xyz'[dim]}"

    def scalar_type(self, dtype: DType) -> str:
        if dtype == dtypes.float64:
            raise NotImplementedError("Metal has no float64 (double); a kernel using float64 "
                                      "cannot be written in Metal Shading Language")
        return NAMES.get(dtype, dtype.c_name)

    @staticmethod
    def _int_suffix(dtype: DType) -> str:
        return {dtypes.int64: "l", dtypes.uint64: "ul", dtypes.uint32: "u"}.get(dtype, "")

    def math_call(self, function: str, x: str, dtype: DType) -> str:
        return f"metal::precise::{function}({x})" if function != "trunc" else f"trunc({x})"

    def bitcast(self, a: str, src: DType, dst: DType) -> str:
        return f"as_type<{self.type_name(dst)}>({a})"

    def param(self, index: int, dtype: DType, is_output: bool, is_input: bool) -> str:
        const = "const " if not is_output else ""
        return f"device {const}{self.memory_type(dtype)}* data{index} [[buffer({index})]]"

    def variable_param(self, name: str, position: int, wide: bool = False) -> str:
        return f"constant {'long' if wide else 'int'}& {name} [[buffer({position})]]"

    def signature(self, name: str, params: list[str]) -> str:
        return f"{self.kernel_prefix} {name}({', '.join(params + list(POSITIONS))})"

    def load_half(self, buffer: str, index: str) -> str:
        return f"(float)({buffer}[{index}])"

    def store_half(self, buffer: str, index: str, value: str) -> str:
        return f"{buffer}[{index}] = (half)({value})"

    def round_half(self, value: str) -> str:
        return f"(float)((half)({value}))"
