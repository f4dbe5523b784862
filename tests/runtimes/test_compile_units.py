"""Several kernels in one translation unit (runtimes/c_units.py, CPURuntime.compile_unit): the
declarations are written once and each kernel renamed for the unit; the unit's kernels compute
what each compiled alone computes (numpy); a second runtime on the same cache finds every kernel
without compiling; a kernel the compiler refuses is reported with its own source; whether a
kernel runs threads comes from its own build facts, not from its unit."""
import numpy as np
import pytest

from tinylab.errors import CompileError
from tinylab.runtimes.c_units import UnitConflict, declaration_chunks, unit_text
from tinylab.runtimes.cpu import CPURuntime
from tinylab.target.build_facts import BuildFacts

HELPER = "static inline float twice(float v) {\n  return v + v;\n}\n"
PRELUDE = "#include <math.h>\n#include <stdbool.h>\n" + HELPER


def kernel(name: str, body: str, parallel: bool = False) -> tuple[str, str, BuildFacts]:
    """(name, source, the facts the C renderer would give it) of a 16-element kernel."""
    pragma = "  #pragma omp parallel for num_threads(2)\n" if parallel else ""
    return name, (PRELUDE + f"void {name}(float* restrict data0, const float* restrict data1) {{\n"
                  f"{pragma}  for (int i = 0; i < 16; i++) {{\n    data0[i] = {body};\n  }}\n}}\n"), \
        BuildFacts(threads=2 if parallel else 1, openmp=parallel)


KERNELS = [kernel("E_16", "twice(data1[i])"), kernel("E_16", "sqrtf(data1[i]) + 1.0f"),
           kernel("E_16_2", "data1[i] * data1[i]", parallel=True)]
EXPECTED = [lambda x: 2 * x, lambda x: np.sqrt(x) + 1, lambda x: x * x]


def test_a_unit_writes_each_declaration_once_and_renames_each_kernel():
    text, symbols = unit_text([kernel[:2] for kernel in KERNELS])
    assert symbols == ["E_16__0", "E_16__1", "E_16_2__2"]
    assert text.count("#include <math.h>") == 1 and text.count("static inline float twice") == 1
    assert "#define E_16 E_16__1\nvoid E_16(float* restrict data0" in text
    assert text.count("#undef E_16\n") == 2
    assert declaration_chunks(PRELUDE) == ["#include <math.h>\n", "#include <stdbool.h>\n", HELPER]


def test_a_declaration_two_kernels_write_differently_is_refused():
    other = ("E_8", KERNELS[0][1].replace("return v + v;", "return v * 3;").replace("E_16", "E_8"))
    with pytest.raises(UnitConflict, match="twice"):
        unit_text([KERNELS[0][:2], other])


def run(runtime, library, symbol, x):
    out = np.zeros(16, np.float32)
    runtime.load(library, symbol)(out, x)
    return out


def test_kernels_of_a_unit_compute_what_each_computes_alone(tmp_path):
    x = np.arange(1, 17, dtype=np.float32)
    runtime = CPURuntime(cache_dir=tmp_path / "cpu")
    built = runtime.compile_unit(KERNELS)
    assert len({library for library, _, _ in built}) == 1      # one shared object for three
    assert not any(hit for _, _, hit in built)
    for (library, symbol, _), expected in zip(built, EXPECTED):
        np.testing.assert_allclose(run(runtime, library, symbol, x), expected(x), rtol=1e-6)
    alone = CPURuntime(cache_dir=tmp_path / "alone")
    for (name, source, facts), expected in zip(KERNELS, EXPECTED):
        library, _ = alone.compile(source, facts)
        np.testing.assert_array_equal(run(alone, library, name, x), expected(x))


def test_a_new_runtime_on_the_same_cache_compiles_nothing(tmp_path, monkeypatch):
    x = np.linspace(0.5, 4, 16, dtype=np.float32)
    first = CPURuntime(cache_dir=tmp_path)
    first.compile_unit(KERNELS)
    second = CPURuntime(cache_dir=tmp_path)
    monkeypatch.setattr(CPURuntime, "_build", lambda *a: pytest.fail("compiled again"))
    again = second.compile_unit(list(reversed(KERNELS)))
    assert all(hit for _, _, hit in again)
    for (library, symbol, _), expected in zip(again, reversed(EXPECTED)):
        np.testing.assert_allclose(run(second, library, symbol, x), expected(x), rtol=1e-6)


def test_identical_sources_compile_once(tmp_path):
    built = CPURuntime(cache_dir=tmp_path).compile_unit([KERNELS[0], KERNELS[1], KERNELS[0]])
    assert built[0] == built[2] and built[0][:2] != built[1][:2]


def test_a_kernel_the_compiler_refuses_is_named_by_its_own_source(tmp_path):
    broken = ("E_4", PRELUDE + "void E_4(float* data0) { data0[0] = missing_name; }\n",
              BuildFacts())
    with pytest.raises(CompileError) as caught:
        CPURuntime(cache_dir=tmp_path).compile_unit([KERNELS[0], broken])
    assert caught.value.source == broken[1]


def test_threads_are_read_from_each_kernel_not_its_unit(tmp_path):
    runtime = CPURuntime(cache_dir=tmp_path)
    built = runtime.compile_unit(KERNELS)
    threads = [runtime.load(library, symbol).threads for library, symbol, _ in built]
    assert threads == [0, 0, runtime.target.cores]


def test_compilers_started_while_the_environment_changes_get_their_own_copy(tmp_path,
                                                                           monkeypatch):
    """The first OpenMP kernel's load sets OMP_WAIT_POLICY in the environment (config.
    openmp_environment) while compiler threads start gcc: each compiler gets a copy of the
    environment taken when it starts, never the C array being changed (a vfork'ed gcc reading it
    failed with EFAULT). Compiles beside a thread toggling the environment all succeed and
    compute what numpy does."""
    import os
    import subprocess
    import threading

    from tinylab import config
    from tinylab.runtimes import cpu

    seen = []
    real_run = subprocess.run

    def run(cmd, **kwargs):
        seen.append(kwargs.get("env"))
        return real_run(cmd, **kwargs)
    monkeypatch.setattr(cpu.subprocess, "run", run)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    stop = threading.Event()

    def toggle():
        while not stop.is_set():
            with config.openmp_environment():
                pass
    toggler = threading.Thread(target=toggle)
    toggler.start()
    try:
        runtime = CPURuntime(cache_dir=tmp_path)
        for number in range(4):
            name, source, facts = kernel(f"E_16_{number}", f"data1[i] + {number}.0f", True)
            library, _ = runtime.compile(source, facts)
            fn = runtime.load(library, name)
            x = np.arange(16, dtype=np.float32)
            out = np.zeros(16, dtype=np.float32)
            fn(out, x)
            np.testing.assert_array_equal(out, x + number)
    finally:
        stop.set()
        toggler.join()
    assert len(seen) >= 4 and all(isinstance(env, dict) and env is not os.environ for env in seen)
    assert "OMP_WAIT_POLICY" not in os.environ   # restored after each load
