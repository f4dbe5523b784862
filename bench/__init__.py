"""Benchmarks: tinylab beside numpy / PyTorch (and tinygrad when installed), same run, same
machine; medians and ratios. `python -m bench.run` (make bench) runs them all.
Under a CPU_TARGET preset the references are held to the same ISA (set here, before numpy and
PyTorch load, unless the environment already names one): OpenBLAS's core type, PyTorch's ATen
kernels and oneDNN's (its convolutions), MKL's; `REFERENCE_ISA` is what was asked of them."""
import os

# preset -> {environment variable: value} that caps each reference library at that ISA
_PINS = {
    "sse4": {"OPENBLAS_CORETYPE": "Nehalem", "ATEN_CPU_CAPABILITY": "default",
             "ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
    "avx2": {"OPENBLAS_CORETYPE": "Haswell", "ATEN_CPU_CAPABILITY": "avx2",
             "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "avx512": {"OPENBLAS_CORETYPE": "SkylakeX", "ATEN_CPU_CAPABILITY": "avx512",
               "ONEDNN_MAX_CPU_ISA": "AVX512_CORE", "MKL_ENABLE_INSTRUCTIONS": "AVX512"},
}
REFERENCE_ISA = {}
for _name, _value in _PINS.get(os.environ.get("CPU_TARGET", "").strip().lower(), {}).items():
    REFERENCE_ISA[_name] = os.environ.setdefault(_name, _value)
