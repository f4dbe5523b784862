"""runtimes/c_math_header.py: gcc reads a few lines of our own for a kernel's <math.h>. Every math
function the C renderer writes is declared there; each compiles to the instructions glibc's
<math.h> gives (disassembly compared, float and double, -O2 and the quick -O1); kernels built with
it compute numpy's answers, INFINITY and NAN included; a source that uses more of <math.h> (a
call, a macro, a constant) is built with <math.h> itself, and a build the header fails is redone
with it."""
import shutil
import subprocess

import numpy as np
import pytest

from tinylab import Context, Tensor, trace
from tinylab.runtimes import c_math_header
from tinylab.runtimes.cpu import CPURuntime

EVERY_NAME = "#include <math.h>\n#include <stdbool.h>\n" + "\n".join(
    f"double d_{n}(double x) {{ return {n}(x) + INFINITY; }}\n"
    f"float f_{n}(float x) {{ return {n}f(x) * NAN; }}" for n in c_math_header.FUNCTIONS)


def gcc_runtime(tmp_path) -> CPURuntime:
    runtime = CPURuntime(cache_dir=tmp_path)
    if not runtime._gcc_on_linux():
        pytest.skip("the header is read by gcc on Linux")
    return runtime


def disassembly(runtime, tmp_path, source: str, extra: list, level: str) -> str:
    if shutil.which("objdump") is None:
        pytest.skip("no objdump")
    path, out = tmp_path / "k.c", tmp_path / "k.o"
    path.write_text(source)
    flags = [f for f in runtime.flags() if f not in ("-shared", "-O2")]
    subprocess.run([runtime.compiler, level, *flags, *extra, "-c", str(path), "-o", str(out)],
                   check=True, capture_output=True)
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(out)], capture_output=True,
                          text=True, check=True).stdout
    return text.split("\n", 3)[-1]   # past the file name


def test_the_c_renderer_calls_only_declared_functions():
    x = Tensor(np.linspace(0.5, 2, 8, dtype=np.float32))
    sources = []
    with Context(DEV="CPU"):
        for dtype in ("float32", "float64", "float16"):
            t = x.cast(dtype)
            with trace() as record:
                ((t.sin() + t.log2() + t.exp2() + t.sqrt() + t.trunc()) * float("inf")).realize()
            sources += [k.source for k in record.kernels]
    assert sources and all(f in "".join(sources) for f in ("sinf(", "log2(", "exp2f(", "trunc"))
    for source in sources:
        assert c_math_header.covers(source), source


@pytest.mark.parametrize("level", ["-O2", "-O1"])
def test_every_declared_name_compiles_as_with_math_h(tmp_path, level):
    runtime = gcc_runtime(tmp_path)
    header = tmp_path / c_math_header.FILE_NAME
    header.write_text(c_math_header.TEXT)
    assert c_math_header.covers(EVERY_NAME)
    plain = disassembly(runtime, tmp_path, EVERY_NAME, [], level)
    ours = disassembly(runtime, tmp_path, EVERY_NAME, ["-include", str(header)], level)
    assert plain == ours
    assert all(f"d_{n}" in ours for n in c_math_header.FUNCTIONS)


def test_kernels_built_with_it_compute_numpys_answers(tmp_path):
    gcc_runtime(tmp_path)
    values = np.array([0.25, 1.5, 3.75, -2.5, 0.0, 7.0], np.float32)
    x = Tensor(values)
    got = (x.abs().sqrt() + x.sin() + x.abs().exp2() + (x.abs() + 1).log2() + x.trunc(),
           x.maximum(float("inf")), (x * float("nan")))
    want = (np.sqrt(np.abs(values)) + np.sin(values) + np.exp2(np.abs(values))
            + np.log2(np.abs(values) + 1) + np.trunc(values), np.full(6, np.inf), np.full(6, np.nan))
    with Context(DEV="CPU"):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("use", ["return erff(x);", "return isnan(x) ? 0.f : x;",
                                 "return x * (float)M_PI;", "float_t y = x; return y;"])
def test_a_source_using_more_of_math_h_is_not_covered(use):
    assert not c_math_header.covers(f"#include <math.h>\nfloat k(float x) {{ {use} }}\n")


def test_a_variable_named_like_a_function_is_no_call():
    assert c_math_header.covers("#include <math.h>\nint k(int x) { int nan = x != x;  "
                                "/* round to nearest */ return nan; }\n")


def test_a_build_the_header_fails_is_redone_with_math_h(tmp_path, monkeypatch):
    runtime = gcc_runtime(tmp_path)
    broken = c_math_header.TEXT.replace("double sin(double);", "int sin;")
    monkeypatch.setattr(c_math_header, "TEXT", broken)
    monkeypatch.setattr(c_math_header, "FILE_NAME", "tinylab_math_broken.h")
    runs, original = [], runtime._run

    def spy(command, source):
        runs.append(command)
        return original(command, source)
    monkeypatch.setattr(runtime, "_run", spy)
    source = "#include <math.h>\nvoid k(float* o, const float* a) { o[0] = sinf(a[0]) + sin(1.0); }\n"
    library, _ = runtime.compile(source)
    assert [any(c.endswith("tinylab_math_broken.h") for c in r) for r in runs] == [True, False]
    out, a = np.zeros(1, np.float32), np.array([0.5], np.float32)
    runtime.load(library, "k")(out, a)
    np.testing.assert_allclose(out, np.sin(a) + np.sin(1.0), rtol=1e-6)


def test_the_cache_key_names_the_header_only_where_it_is_read(tmp_path, monkeypatch):
    runtime = gcc_runtime(tmp_path)
    covered = "#include <math.h>\nfloat k(float x) { return sqrtf(x); }\n"
    other = "#include <math.h>\nfloat k(float x) { return erff(x); }\n"
    flags = runtime.flags()
    before = runtime._key(covered, flags), runtime._key(other, flags)
    monkeypatch.setattr(c_math_header, "VERSION", "another")   # the header changed
    after = runtime._key(covered, flags), runtime._key(other, flags)
    assert before[0] != after[0] and before[1] == after[1]
