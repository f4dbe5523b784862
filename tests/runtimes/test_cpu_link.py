"""The CPU runtime's link (runtimes/cpu.py, LEAN_LINK): gcc on Linux links a kernel with libgomp,
libm and libgcc's static helpers only, not libc's linker script and libgcc_s. A kernel that calls
libc (memcpy), libm (a call gcc cannot inline), libgcc (a 128-bit division) and runs OpenMP
threads loads and computes numpy's answers; its shared object does not name libc; a lean link
that fails is redone with the default libraries (and the runtime keeps them); a C error is
reported as the compiler's, with no second link."""
import shutil
import subprocess

import numpy as np
import pytest

from tinylab.errors import CompileError
from tinylab.runtimes import cpu
from tinylab.runtimes.cpu import CPURuntime

SOURCE = """
#include <math.h>
#include <string.h>
void every_library(float* restrict out, const float* restrict in, int n) {
  float copy[64];
  memcpy(copy, in, (unsigned long)n * sizeof(float));   /* libc: a size gcc cannot see */
  #pragma omp parallel for num_threads(2)
  for (int i = 0; i < n; i++) {
    __int128 big = (__int128)(i + 1) << 70;
    long back = (long)(big / ((__int128)(i + 1) << 66));  /* libgcc's __divti3: 16 */
    out[i] = erff(copy[i]) + (float)back;                 /* libm: erff is a call */
  }
}
"""


def lean_runtime(tmp_path) -> CPURuntime:
    runtime = CPURuntime(cache_dir=tmp_path)
    if not runtime.is_gcc() or not cpu.sys.platform.startswith("linux"):
        pytest.skip("the lean link is gcc's on Linux")
    return runtime


def run(runtime, library) -> np.ndarray:
    program = runtime.load(library, "every_library")
    values = np.linspace(-2, 2, 64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    program(out, values, scalars=(64,))
    return out, values


def expected(values):
    from math import erf
    return np.array([erf(v) for v in values.astype(np.float64)], np.float32) + 16


def needed(library) -> str:
    if shutil.which("readelf") is None:
        pytest.skip("no readelf")
    return subprocess.run(["readelf", "-d", str(library)], capture_output=True,
                          text=True).stdout


def test_a_lean_linked_kernel_reaches_libc_libm_libgcc_and_openmp(tmp_path):
    runtime = lean_runtime(tmp_path)
    library, _ = runtime.compile(SOURCE)
    assert runtime._lean_link is True
    out, values = run(runtime, library)
    np.testing.assert_allclose(out, expected(values), rtol=1e-6, atol=1e-6)
    dynamic = needed(library)
    assert "libgomp" in dynamic and "libm." in dynamic
    assert "libc." not in dynamic and "libgcc_s" not in dynamic, dynamic


def test_a_lean_link_that_fails_is_redone_with_the_default_libraries(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu, "LEAN_LINK", (*cpu.LEAN_LINK, "-l:libtinylab_not_there.so"))
    runtime = lean_runtime(tmp_path)
    library, _ = runtime.compile(SOURCE)
    assert runtime._lean_link is False       # kept for the runtime's later compiles
    out, values = run(runtime, library)
    np.testing.assert_allclose(out, expected(values), rtol=1e-6, atol=1e-6)
    assert "libc." in needed(library)


def test_a_c_error_is_the_compilers_and_keeps_the_lean_link(tmp_path):
    runtime = lean_runtime(tmp_path)
    with pytest.raises(CompileError) as error:
        runtime.compile("void broken(float* out) { out[0] = undefined_name; }")
    assert "undefined_name" in str(error.value)
    assert runtime._lean_link is True
