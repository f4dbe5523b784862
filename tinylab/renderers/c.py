"""The C renderer (CPU): C99 with GCC/Clang extensions, OpenMP for threaded loops.
Everything shared with OpenCL and CUDA lives in cstyle.py; this file holds only what is C's own.
"""
from __future__ import annotations

from .cstyle import CStyleRenderer


class CRenderer(CStyleRenderer):
    device = "CPU"
    preamble = "#include <math.h>\n#include <stdbool.h>\n"
    # actions the CPU plan may use
    supported_actions = ("UPCAST", "UNROLL", "THREAD", "SWAP", "VECTORIZE")
