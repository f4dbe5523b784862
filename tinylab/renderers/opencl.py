"""The OpenCL C renderer: output loops are work-group / work-item ids, GROUP reduces through
`__local` memory and `barrier`, math calls are OpenCL's overloaded builtins, float16 is a storage
type read and written with vload_half / vstore_half. Everything else is the C family's.
"""
from __future__ import annotations

from ..dtype import DType, dtypes
from ..target.launch import IdSpace
from .gpu_c import GPURenderer

NAMES = {dtypes.int8: "char", dtypes.uint8: "uchar", dtypes.uint16: "ushort",
         dtypes.uint32: "uint", dtypes.int64: "long", dtypes.uint64: "ulong"}
ROUND_HALF = ("static inline float tl_round_half(float x) { ushort h; "
              "vstore_half(x, 0, (__private half*)&h); "
              "return vload_half(0, (__private half*)&h); }\n")
HALF_BITS = ("static inline ushort tl_half_bits(float x) { ushort h; "
             "vstore_half(x, 0, (__private half*)&h); return h; }\n"
             "static inline float tl_bits_half(ushort h) { "
             "return vload_half(0, (__private half*)&h); }\n")


class OpenCLRenderer(GPURenderer):
    device = "CL"
    kernel_prefix = "__kernel void"
    buffer_qualifier = "__global "
    local_qualifier = "__local "
    barrier = "barrier(CLK_LOCAL_MEM_FENCE);"

    def id_text(self, space: IdSpace, dim: int) -> str:
        return f"get_{space.value}_id({dim})"

    def scalar_type(self, dtype: DType) -> str:
        return NAMES.get(dtype, dtype.c_name)

    def memory_type(self, dtype: DType) -> str:  # no bool in kernel arguments: bytes
        return "uchar" if dtype.scalar == dtypes.bool else super().memory_type(dtype)

    @staticmethod
    def _int_suffix(dtype: DType) -> str:
        return {dtypes.int64: "l", dtypes.uint64: "ul", dtypes.uint32: "u"}.get(dtype, "")

    def math_call(self, function: str, x: str, dtype: DType) -> str:
        return f"{function}({x})"

    def bitcast(self, a: str, src: DType, dst: DType) -> str:
        return f"as_{self.type_name(dst)}({a})"

    def load_half(self, buffer: str, index: str) -> str:
        return f"vload_half({index}, {buffer})"

    def store_half(self, buffer: str, index: str, value: str) -> str:
        return f"vstore_half({value}, {index}, {buffer})"

    def round_half(self, value: str) -> str:
        return f"tl_round_half({value})"

    def half_bits(self, value: str) -> str:
        return f"tl_half_bits({value})"

    def half_from_bits(self, bits: str) -> str:
        return f"tl_bits_half({bits})"

    def helpers(self, index_type: str, body: str) -> str:
        fp64 = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if "double" in body else ""
        half = ROUND_HALF if "tl_round_half(" in body else ""
        bits = HALF_BITS if "tl_half_bits(" in body or "tl_bits_half(" in body else ""
        return fp64 + half + bits + super().helpers(index_type, body)
