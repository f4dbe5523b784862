"""runtimes/x86_headers.py: gcc builds x86 kernels with a header of a few lines in place of the
precompiled <immintrin.h>. Every intrinsic the C renderer can write is in it; each compiles to the
instructions gcc's own <immintrin.h> gives (the disassembly of both builds is compared); kernels
that use it compute numpy's answers, build no precompiled header, and a source it does not cover
(or a build it fails) goes through <immintrin.h> as before."""
import re
import subprocess
import textwrap

import numpy as np
import pytest

from tinylab import Context, Device, Tensor
from tinylab.renderers import c_vector_math
from tinylab.runtimes import x86_headers
from tinylab.runtimes.cpu import CPURuntime
from tinylab.target.build_facts import BuildFacts

INTRINSICS = BuildFacts(intrinsics=True)


def gcc_on_x86(runtime) -> None:
    if runtime.target.arch != "x86_64" or not runtime.is_gcc():
        pytest.skip("the header is for gcc on x86")


def test_every_intrinsic_the_renderer_writes_is_defined():
    written = set()
    for table in (c_vector_math._MASKED_LOAD, c_vector_math._MASKED_STORE,
                  {k: v for k, v in c_vector_math._SQRT.items()}):
        for _, body in table.values():
            written |= set(re.findall(r"\b_mm\w*", body))
    assert written and written <= x86_headers.NAMES, written - x86_headers.NAMES


# every name the header defines, under the feature macro that guards it there
EVERY_NAME = textwrap.dedent("""\
    #include <math.h>
    #include <stdbool.h>
    #include <immintrin.h>
    #ifdef __AVX512F__
    void k16(float* o, const float* a, int* oi, const int* ai, const int* mi) {
      __m512i m; __builtin_memcpy(&m, mi, 64);
      __mmask16 k = _mm512_cmpneq_epi32_mask(m, _mm512_setzero_si512());
      _mm512_mask_storeu_ps(o, k, _mm512_sqrt_ps(_mm512_maskz_loadu_ps(k, a)));
      _mm512_mask_storeu_epi32(oi, k, _mm512_maskz_loadu_epi32(k, ai));
    }
    #endif
    #ifdef __AVX2__
    void k8i(int* oi, const int* ai, const int* mi) {
      __m256i m; __builtin_memcpy(&m, mi, 32);
      __m128i h; __builtin_memcpy(&h, mi, 16);
      _mm256_maskstore_epi32(oi, m, _mm256_maskload_epi32(ai, m));
      _mm_maskstore_epi32(oi + 8, h, _mm_maskload_epi32(ai + 8, h));
    }
    #endif
    #ifdef __AVX__
    void k8(float* o, const float* a, const int* mi) {
      __m256i m; __builtin_memcpy(&m, mi, 32);
      __m128i h; __builtin_memcpy(&h, mi, 16);
      _mm256_maskstore_ps(o, m, _mm256_sqrt_ps(_mm256_maskload_ps(a, m)));
      _mm_maskstore_ps(o + 8, h, _mm_maskload_ps(a + 8, h));
    }
    #endif
    void k4(float* o, const float* a) {
      __m128 x; __builtin_memcpy(&x, a, 16);
      x = _mm_sqrt_ps(x); __builtin_memcpy(o, &x, 16);
    }
""")


def disassembly(path) -> str:
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "--section=.text", str(path)],
                          capture_output=True, text=True, check=True).stdout
    return text.split("\n", 3)[-1]


def test_each_name_is_the_instruction_immintrin_gives(tmp_path):
    runtime = CPURuntime(cache_dir=tmp_path / "cache")
    gcc_on_x86(runtime)
    assert x86_headers.covers(EVERY_NAME)
    flags = runtime.flags(INTRINSICS)
    ours = runtime._header_flags(True, flags, EVERY_NAME)
    theirs = runtime._header_flags(True, flags, None)
    assert x86_headers.FILE_NAME in ours[1] and theirs[1].endswith(".h") and ours != theirs
    runtime._build(EVERY_NAME, flags + ours, tmp_path / "ours.so")
    runtime._build(EVERY_NAME, flags + theirs, tmp_path / "theirs.so")
    code = disassembly(tmp_path / "ours.so")
    assert "k4" in code and code == disassembly(tmp_path / "theirs.so")


def test_rendered_kernels_use_it_and_agree_with_numpy(monkeypatch):
    """Masked tails (37 elements over 16, 8 or 4 lanes), a square root, an int map: numpy's
    answers, every compile that includes a header includes this one (none precompiled)."""
    runtime = Device["CPU"].runtime
    gcc_on_x86(runtime)
    commands, run = [], runtime._run
    monkeypatch.setattr(runtime, "_run", lambda cmd, source: (commands.append(cmd),
                                                             run(cmd, source))[1])
    scale = float(np.float32(np.random.default_rng().random() + 1))  # new kernels: built here
    x = np.linspace(0.5, 40.0, 37, dtype=np.float32)
    ints = np.arange(-18, 19, dtype=np.int32)
    with Context(DEV="CPU"):
        np.testing.assert_allclose((Tensor(x).sqrt() * scale + 1).numpy(),
                                   np.sqrt(x) * np.float32(scale) + 1, rtol=1e-6)
        np.testing.assert_array_equal((Tensor(ints) * 3 - int(scale * 1000)).numpy(),
                                      ints * 3 - int(scale * 1000))
    included = [cmd[cmd.index("-include") + 1] for cmd in commands if "-include" in cmd]
    assert included and all(path.endswith(x86_headers.FILE_NAME) for path in included), commands


def test_a_source_it_does_not_cover_gets_immintrin(tmp_path):
    runtime = CPURuntime(cache_dir=tmp_path)
    gcc_on_x86(runtime)
    source = "#include <immintrin.h>\nvoid k(float* a) { _mm_storeu_ps(a, _mm_set1_ps(2.0f)); }\n"
    assert not x86_headers.covers(source)
    library, _ = runtime.compile(source, INTRINSICS)
    out = np.zeros(4, np.float32)
    runtime.load(library, "k")(out)
    np.testing.assert_array_equal(out, [2.0] * 4)
    assert [p for p in tmp_path.rglob("*.gch")]


def test_a_build_that_fails_with_it_is_built_with_immintrin(tmp_path, monkeypatch):
    """As on a gcc whose builtins differ: the header breaks the build, <immintrin.h> does not."""
    runtime = CPURuntime(cache_dir=tmp_path)
    gcc_on_x86(runtime)
    monkeypatch.setattr(x86_headers, "TEXT", x86_headers.TEXT.replace(
        "__builtin_ia32_sqrtps(", "__builtin_no_such_thing("))
    monkeypatch.setattr(x86_headers, "FILE_NAME", "tinylab_x86_broken.h")
    source = ("#include <immintrin.h>\nvoid k(float* a) {\n  __m128 x;\n"
              "  __builtin_memcpy(&x, a, 16); x = _mm_sqrt_ps(x); __builtin_memcpy(a, &x, 16);\n}\n")
    library, _ = runtime.compile(source, INTRINSICS)
    out = np.array([4.0, 9.0, 16.0, 2.0], np.float32)
    runtime.load(library, "k")(out)
    np.testing.assert_allclose(out, np.sqrt([4.0, 9.0, 16.0, 2.0]), rtol=1e-7)
    assert (tmp_path / "tinylab_x86_broken.h").exists() and [p for p in tmp_path.rglob("*.gch")]
