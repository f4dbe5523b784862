"""The CUDA C renderer: output loops are blockIdx / threadIdx, GROUP reduces through `__shared__`
memory and `__syncthreads()`, float16 is a storage type (`half` from cuda_fp16.h) converted on
load and store. Kernels are `extern "C"` so the runtime finds them by name.
"""
from __future__ import annotations

from ..dtype import DType
from ..target.launch import IdSpace
from .gpu_c import GPURenderer

BITCAST = ("template <class D, class S> __device__ inline D tl_bitcast(S s) "
           "{ D d; memcpy(&d, &s, sizeof(D)); return d; }\n")


class CUDARenderer(GPURenderer):
    device = "CUDA"
    kernel_prefix = 'extern "C" __global__ void'
    restrict = "__restrict__"
    local_qualifier = "__shared__ "
    barrier = "__syncthreads();"
    infinity, nan = "__int_as_float(0x7f800000)", "__int_as_float(0x7fc00000)"

    def id_text(self, space: IdSpace, dim: int) -> str:
        return f"{'blockIdx' if space is IdSpace.GROUP else 'threadIdx'}.{'xyz'[dim]}"

    def bitcast(self, a: str, src: DType, dst: DType) -> str:
        return f"tl_bitcast<{self.type_name(dst)}>({a})"

    def load_half(self, buffer: str, index: str) -> str:
        return f"__half2float({buffer}[{index}])"

    def store_half(self, buffer: str, index: str, value: str) -> str:
        return f"{buffer}[{index}] = __float2half({value})"

    def round_half(self, value: str) -> str:
        return f"__half2float(__float2half({value}))"

    def half_bits(self, value: str) -> str:
        return f"__half_as_ushort(__float2half({value}))"

    def half_from_bits(self, bits: str) -> str:
        return f"__half2float(__ushort_as_half({bits}))"

    def helpers(self, index_type: str, body: str) -> str:
        half = "#include <cuda_fp16.h>\n" if "half" in body else ""
        bitcast = BITCAST if "tl_bitcast<" in body else ""
        common = super().helpers(index_type, body).replace("static inline", "__device__ inline")
        return half + bitcast + common
