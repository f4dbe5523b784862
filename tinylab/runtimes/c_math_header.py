"""What gcc reads for a CPU kernel's `#include <math.h>`: the few lines kernels need, in place of
glibc's math headers.

Kernels call five math functions (sqrt, trunc, sin, log2, exp2: the float, double or, through
float, half versions that renderers/cstyle.py's `math_call` writes) and name INFINITY and NAN.
Parsing glibc's <math.h> costs gcc ~6.5 ms of every compile (a small kernel's whole compile and
link is ~44 ms of CPU; the test suite compiles ~7,000). `TEXT` defines <math.h>'s include guard
(glibc's and musl's `_MATH_H`), so the kernel's own `#include <math.h>` reads nothing, declares
those functions (gcc knows each as a builtin: the same code as with <math.h>, compared by
disassembly in tests/runtimes/test_c_math_header.py) and spells INFINITY and NAN as glibc does.
The kernel's text is unchanged. `covers(source)` is False for a source that calls any other
libm function or names another of <math.h>'s macros; such a source, or one that fails to
build with TEXT (the CPU runtime passes -Werror=implicit-function-declaration beside it), is
built with <math.h> as before.
"""
from __future__ import annotations

import hashlib
import re

from ..memo import cached

FUNCTIONS = ("sqrt", "trunc", "sin", "log2", "exp2")
NAMES = frozenset(name + suffix for name in FUNCTIONS for suffix in ("", "f"))

TEXT = "\n".join([
    "/* tinylab: the <math.h> its kernels need (runtimes/c_math_header.py) */",
    "#ifndef _MATH_H",
    "#define _MATH_H 1",
    "#define INFINITY (__builtin_inff ())",
    "#define NAN (__builtin_nanf (\"\"))",
    *(f"double {name}(double); float {name}f(float);" for name in FUNCTIONS),
    "#endif", ""])
VERSION = hashlib.sha256(TEXT.encode()).hexdigest()[:12]
FILE_NAME = f"tinylab_math_{VERSION}.h"

# C99's <math.h> functions (each also with an f and an l suffix) and its macros: a source that
# uses one TEXT lacks gets <math.h> itself
_LIBM = tuple(("acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 "
              "expm1 log log10 log1p log2 logb ilogb cbrt fabs hypot pow sqrt erf erfc lgamma "
              "tgamma ceil floor nearbyint rint lrint llrint round lround llround trunc fmod "
              "remainder remquo copysign nan nextafter nexttoward fdim fmax fmin fma frexp "
              "ldexp modf scalbn scalbln").split())
_OTHER_LIBM = frozenset(f"{name}{suffix}" for name in _LIBM for suffix in ("", "f", "l")) - NAMES
_CALLED_MACROS = tuple("isnan isinf isfinite isnormal signbit fpclassify isgreater isgreaterequal "
                       "isless islessequal islessgreater isunordered".split())
_CALLS = re.compile(r"\b([a-z][a-z0-9_]*)\s*\(")
_NAMED = re.compile(r"\b(?:HUGE_VAL|FP_|M_|MATH_|float_t\b|double_t\b)")   # constants, types
_MORE_CALLS = _OTHER_LIBM | frozenset(_CALLED_MACROS)


@cached("sources c_math_header covers", 16)   # a source's key and its build ask twice
def covers(source: str) -> bool:
    """Whether `source` includes <math.h> and uses only what TEXT declares of it: it calls no
    other libm function or function-like macro of <math.h> and names none of its constants or
    types (a local variable called `nan` is not a call)."""
    return ("#include <math.h>" in source and _NAMED.search(source) is None
            and _MORE_CALLS.isdisjoint(_CALLS.findall(source)))
