"""Where a CPU kernel's x86 intrinsics come from when gcc builds it (the `X86Headers` mixin of
the CPU runtime): a header of a few lines of our own, or <immintrin.h> precompiled.

Kernels call only the masked loads and stores and the square roots that renderers/
c_vector_math.py writes (arithmetic is written with vector types); <immintrin.h> declares
thousands. Its precompiled copy (25 MB) costs gcc ~15 ms to load on every compile (a small
kernel's whole compile is ~36 ms of CPU) and ~1.2 s of CPU to build once per cache. `TEXT`
costs gcc nothing measurable: it defines <immintrin.h>'s include guard, so the kernel's own
`#include <immintrin.h>` reads nothing, and each name it defines calls the gcc builtin that name
stands for (the same instruction); the kernel's text is unchanged. A source that calls a name
not defined here (`covers` is False), or that fails to build with it (a gcc whose builtins
differ), is built with the precompiled <immintrin.h> as before.
"""
from __future__ import annotations

import contextvars
import hashlib
import re
import threading
from pathlib import Path

from ..errors import CompileError
from ..target.cpu_target import compiler_macros
from .compile_cache import cached_build, key_of, secure_dir, write_once

# <immintrin.h> precompiled, for a source `TEXT` does not cover
PRECOMPILED_HEADER = "#include <math.h>\n#include <stdbool.h>\n#include <immintrin.h>\n"

_ALWAYS = "static __inline__ __attribute__((__always_inline__))"

TEXT = f"""/* tinylab: the x86 intrinsics its kernels call, on gcc's builtins (runtimes/x86_header.py) */
#ifndef _IMMINTRIN_H_INCLUDED
#define _IMMINTRIN_H_INCLUDED
#define TL_X86 {_ALWAYS}
typedef float __m128 __attribute__((__vector_size__(16), __may_alias__));
typedef long long __m128i __attribute__((__vector_size__(16), __may_alias__));
typedef float tl_x86_f4 __attribute__((__vector_size__(16)));
typedef int tl_x86_i4 __attribute__((__vector_size__(16)));
#ifdef __SSE__
TL_X86 __m128 _mm_sqrt_ps(__m128 x) {{ return (__m128)__builtin_ia32_sqrtps((tl_x86_f4)x); }}
#endif
#ifdef __AVX__
typedef float __m256 __attribute__((__vector_size__(32), __may_alias__));
typedef long long __m256i __attribute__((__vector_size__(32), __may_alias__));
typedef float tl_x86_f8 __attribute__((__vector_size__(32)));
typedef int tl_x86_i8 __attribute__((__vector_size__(32)));
TL_X86 __m128 _mm_maskload_ps(const float* p, __m128i m) {{
  return (__m128)__builtin_ia32_maskloadps((const tl_x86_f4*)p, (tl_x86_i4)m); }}
TL_X86 void _mm_maskstore_ps(float* p, __m128i m, __m128 v) {{
  __builtin_ia32_maskstoreps((tl_x86_f4*)p, (tl_x86_i4)m, (tl_x86_f4)v); }}
TL_X86 __m256 _mm256_maskload_ps(const float* p, __m256i m) {{
  return (__m256)__builtin_ia32_maskloadps256((const tl_x86_f8*)p, (tl_x86_i8)m); }}
TL_X86 void _mm256_maskstore_ps(float* p, __m256i m, __m256 v) {{
  __builtin_ia32_maskstoreps256((tl_x86_f8*)p, (tl_x86_i8)m, (tl_x86_f8)v); }}
TL_X86 __m256 _mm256_sqrt_ps(__m256 x) {{ return (__m256)__builtin_ia32_sqrtps256((tl_x86_f8)x); }}
#endif
#ifdef __AVX2__
TL_X86 __m128i _mm_maskload_epi32(const int* p, __m128i m) {{
  return (__m128i)__builtin_ia32_maskloadd((const tl_x86_i4*)p, (tl_x86_i4)m); }}
TL_X86 void _mm_maskstore_epi32(int* p, __m128i m, __m128i v) {{
  __builtin_ia32_maskstored((tl_x86_i4*)p, (tl_x86_i4)m, (tl_x86_i4)v); }}
TL_X86 __m256i _mm256_maskload_epi32(const int* p, __m256i m) {{
  return (__m256i)__builtin_ia32_maskloadd256((const tl_x86_i8*)p, (tl_x86_i8)m); }}
TL_X86 void _mm256_maskstore_epi32(int* p, __m256i m, __m256i v) {{
  __builtin_ia32_maskstored256((tl_x86_i8*)p, (tl_x86_i8)m, (tl_x86_i8)v); }}
#endif
#ifdef __AVX512F__
typedef float __m512 __attribute__((__vector_size__(64), __may_alias__));
typedef long long __m512i __attribute__((__vector_size__(64), __may_alias__));
typedef unsigned short __mmask16;
typedef float tl_x86_f16 __attribute__((__vector_size__(64)));
typedef int tl_x86_i16 __attribute__((__vector_size__(64)));
TL_X86 __m512i _mm512_setzero_si512(void) {{ return (__m512i){{0, 0, 0, 0, 0, 0, 0, 0}}; }}
TL_X86 __mmask16 _mm512_cmpneq_epi32_mask(__m512i a, __m512i b) {{  /* 4: not equal */
  return (__mmask16)__builtin_ia32_cmpd512_mask((tl_x86_i16)a, (tl_x86_i16)b, 4, (__mmask16)-1); }}
TL_X86 __m512 _mm512_maskz_loadu_ps(__mmask16 k, const void* p) {{
  return (__m512)__builtin_ia32_loadups512_mask((const float*)p, (tl_x86_f16){{}}, k); }}
TL_X86 __m512i _mm512_maskz_loadu_epi32(__mmask16 k, const void* p) {{
  return (__m512i)__builtin_ia32_loaddqusi512_mask((const int*)p, (tl_x86_i16){{}}, k); }}
TL_X86 void _mm512_mask_storeu_ps(void* p, __mmask16 k, __m512 v) {{
  __builtin_ia32_storeups512_mask((float*)p, (tl_x86_f16)v, k); }}
TL_X86 void _mm512_mask_storeu_epi32(void* p, __mmask16 k, __m512i v) {{
  __builtin_ia32_storedqusi512_mask((int*)p, (tl_x86_i16)v, k); }}
TL_X86 __m512 _mm512_sqrt_ps(__m512 x) {{  /* 4: the current rounding mode */
  return (__m512)__builtin_ia32_sqrtps512_mask((tl_x86_f16)x, (tl_x86_f16)x, (__mmask16)-1, 4); }}
#endif
#endif
"""

_NAME = re.compile(r"\b_mm\w*")
NAMES = frozenset(re.findall(r"\b(_mm\w*)\(", TEXT))  # the intrinsics defined above
VERSION = hashlib.sha256(TEXT.encode()).hexdigest()[:12]   # in the keys of what it built
FILE_NAME = f"tinylab_x86_{VERSION}.h"


def covers(source: str) -> bool:
    """Whether every intrinsic `source` calls is defined in TEXT."""
    return set(_NAME.findall(source)) <= NAMES


class X86Headers:
    """The CPU runtime's headers for gcc (it has `compiler`, `version()`, `target`, `cache_dir`,
    `use_cache`, `flags(facts)`, `_run(cmd, source)` and the quick tier's `full_flags`)."""

    def _init_headers(self) -> None:
        self._is_gcc: bool | None = None
        self._headers: dict[tuple[str, ...], Path | None] = {}  # flags -> precompiled header
        self._headers_lock = threading.Lock()

    def is_gcc(self) -> bool:
        """gcc itself (its precompiled headers and builtins are its own; clang's differ)."""
        if self._is_gcc is None:
            macros = compiler_macros(self.compiler, ())
            self._is_gcc = macros is not None and "__GNUC__" in macros \
                and "__clang__" not in macros and "__INTEL_LLVM_COMPILER" not in macros
        return self._is_gcc

    def prepare(self, source: str, facts=None) -> bool:
        """Start building the precompiled header a kernel's intrinsics need when TEXT does not
        cover them (the compiles that need it wait for it); False for one that needs none."""
        if facts is None or not facts.intrinsics or covers(source):
            return False
        flags = self.flags(facts)
        if flags not in self._headers:
            threading.Thread(target=contextvars.copy_context().run,
                             args=(self._precompiled, flags)).start()
        return True

    def intrinsics_key(self, text: str) -> tuple[str, ...]:
        """What a build key adds for the header `text` would be built with."""
        return (VERSION,) if "_mm" in text and covers(text) else ()

    def _header_flags(self, intrinsics: bool, flags: tuple[str, ...], source: str | None,
                      ) -> tuple[str, ...]:
        """`-include` of TEXT (when it covers `source`) or of the precompiled <immintrin.h>, for
        a source that includes it (its facts' `intrinsics`) when gcc compiles into the cache;
        () otherwise. `source` None: the precompiled header whatever the source calls."""
        if not intrinsics or not self.use_cache or not self.is_gcc():
            return ()
        if source is not None and covers(source):
            return ("-include", str(write_once(secure_dir(self.cache_dir) / FILE_NAME, TEXT)))
        header = self._precompiled(flags)
        return ("-include", str(header)) if header is not None else ()

    def _built_with_fallback(self, run, flags: tuple[str, ...], header: tuple[str, ...]) -> None:
        """run(flags + header); where TEXT's build fails (a gcc whose builtins differ, or an
        error of the kernel's own), once more with the precompiled <immintrin.h>."""
        try:
            run(flags + header)
        except CompileError:
            if FILE_NAME not in "".join(header):
                raise
            run(flags + self._header_flags(True, flags, None))

    def _precompiled(self, flags: tuple[str, ...]) -> Path | None:
        """The precompiled <immintrin.h> for `flags`, built once per process and cache. A thread
        that finds another building it waits: reading it as text costs as much as building it
        (~0.8 s against ~0.1 s, on a loaded Zen 3). The quick tier uses the full one's (gcc
        takes it at -O1; -Winvalid-pch is silent, -H marks it used; both levels define the same
        macros)."""
        flags = self.full_flags(flags)
        if flags not in self._headers:
            with self._headers_lock:
                if flags not in self._headers:
                    self._headers[flags] = self._precompile_header(flags)
        return self._headers[flags]

    def _precompile_header(self, flags: tuple[str, ...]) -> Path | None:
        """The header whose precompiled twin (`NAME.h.gch`, which gcc prefers to the text when
        the flags match) lies beside it in the cache; None if gcc cannot build it."""
        header_flags = tuple(f for f in flags if f != "-shared")
        key = key_of(PRECOMPILED_HEADER, self.compiler, self.version(), " ".join(header_flags),
                     self.target.key)

        def build(out: Path) -> None:
            text = out.with_suffix(".src.h")  # gcc names the language by the suffix
            text.write_text(PRECOMPILED_HEADER)
            try:
                self._run([self.compiler, *header_flags, "-x", "c-header", str(text), "-o",
                           str(out)], "")
            finally:
                text.unlink(missing_ok=True)

        try:
            compiled, _ = cached_build(self.cache_dir, key, build, ".h.gch")
        except CompileError:
            return None
        return write_once(compiled.with_suffix(""), PRECOMPILED_HEADER)  # NAME.h beside it
