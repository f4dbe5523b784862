"""The on-disk compile cache (runtimes/compile_cache.py) through a real CPURuntime in a temp dir:
created 0700, refused when others can write to it or own it, safe when two processes build the
same kernel at once, and a truncated or corrupted entry is detected and rebuilt."""
import ctypes
import os
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tinylab.runtimes.compile_cache import CacheError
from tinylab.runtimes.cpu import CPURuntime
from tinylab.target.build_facts import BuildFacts

SOURCE = "void answer(float* out) { out[0] = 42.0f; }\n"


def run_answer(runtime: CPURuntime, source: str = SOURCE) -> tuple[float, bool]:
    """(what the compiled kernel wrote, whether it came from the cache)."""
    library, hit = runtime.compile(source)
    out = np.zeros(1, np.float32)
    runtime.load(library, "answer")(out)
    return float(out[0]), hit


def entries(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_fresh_cache_directory_is_private(tmp_path):
    cache = tmp_path / "fresh" / "cpu"
    assert run_answer(CPURuntime(cache_dir=cache)) == (42.0, False)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    for path in cache.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def test_second_compile_is_a_cache_hit(tmp_path):
    assert run_answer(CPURuntime(cache_dir=tmp_path))[1] is False
    assert run_answer(CPURuntime(cache_dir=tmp_path)) == (42.0, True)
    assert len([name for name in entries(tmp_path) if name.endswith(".so")]) == 1


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o722])
def test_directory_writable_by_others_is_refused(tmp_path, mode):
    cache = tmp_path / "shared"
    cache.mkdir()
    cache.chmod(mode)
    with pytest.raises(CacheError, match=r"writable by others.*chmod 700"):
        CPURuntime(cache_dir=cache).compile(SOURCE)


def test_cached_file_writable_by_others_is_refused(tmp_path):
    runtime = CPURuntime(cache_dir=tmp_path)
    library, _ = runtime.compile(SOURCE)
    library.chmod(0o777)
    with pytest.raises(CacheError, match="writable by others; refusing to load it"):
        CPURuntime(cache_dir=tmp_path).compile(SOURCE)


@pytest.mark.skipif(os.getuid() != 0, reason="changing a directory's owner needs root")
def test_directory_owned_by_someone_else_is_refused(tmp_path):
    cache = tmp_path / "theirs"
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)  # nobody
    with pytest.raises(CacheError, match="belongs to another user"):
        CPURuntime(cache_dir=cache).compile(SOURCE)


def _corrupt_truncate(library):
    library.write_bytes(library.read_bytes()[:100])


def _corrupt_empty(library):
    library.write_bytes(b"")


def _corrupt_flip_bytes(library):
    data = bytearray(library.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 64):
        data[i] ^= 0xFF
    library.write_bytes(bytes(data))


def _corrupt_lose_checksum(library):
    library.with_suffix(".so.sha256").unlink()


def _corrupt_garble_checksum(library):
    library.with_suffix(".so.sha256").write_text("not a checksum")


@pytest.mark.parametrize("damage", [_corrupt_truncate, _corrupt_empty, _corrupt_flip_bytes,
                                    _corrupt_lose_checksum, _corrupt_garble_checksum])
def test_damaged_entry_is_rebuilt(tmp_path, damage):
    library, _ = CPURuntime(cache_dir=tmp_path).compile(SOURCE)
    damage(library)
    # a fresh runtime (a new process would be the same): detected, rebuilt, loads and runs
    assert run_answer(CPURuntime(cache_dir=tmp_path)) == (42.0, False)
    assert run_answer(CPURuntime(cache_dir=tmp_path)) == (42.0, True)


def test_failed_build_leaves_no_files(tmp_path):
    runtime = CPURuntime(cache_dir=tmp_path)
    with pytest.raises(Exception, match="C compile failed"):
        runtime.compile("this is not C")
    assert entries(tmp_path) == []


SLOW_CC = textwrap.dedent("""\
    #!/bin/sh
    # a compiler that takes its time, so that two builds of one kernel overlap
    sleep 0.5
    exec cc "$@"
""")

COMPILE_IN_CHILD = textwrap.dedent("""
    import ctypes, sys
    from pathlib import Path
    import numpy as np
    from tinylab.runtimes.cpu import CPURuntime
    runtime = CPURuntime(compiler=sys.argv[1], cache_dir=Path(sys.argv[2]))
    library, hit = runtime.compile(sys.argv[3])
    out = np.zeros(1, np.float32)
    runtime.load(library, "answer")(out)
    print(out[0], hit)
""")


def test_two_processes_compiling_the_same_kernel_both_succeed(tmp_path):
    compiler = tmp_path / "slow-cc"
    compiler.write_text(SLOW_CC)
    compiler.chmod(0o700)
    cache = tmp_path / "cache"
    source = SOURCE.replace("42.0f", "43.0f")
    children = [subprocess.Popen([sys.executable, "-c", COMPILE_IN_CHILD, str(compiler),
                                  str(cache), source], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = [child.communicate(timeout=120) for child in children]
    for child, (out, err) in zip(children, results):
        assert child.returncode == 0, err
        assert out.split()[0] == "43.0"
    names = entries(cache)
    assert len(names) == 2 and names[0].endswith(".so") and names[1].endswith(".so.sha256"), \
        f"temp files left behind or duplicate entries: {names}"
    library = cache / names[0]
    lib = ctypes.CDLL(str(library))  # the surviving entry is whole
    out = np.zeros(1, np.float32)
    lib.answer(ctypes.c_void_p(out.ctypes.data))
    assert out[0] == 43.0


def test_uncached_builds_leave_no_files(tmp_path):
    """Regression: with the cache disabled every compile left its private .so in the directory."""
    runtime = CPURuntime(cache_dir=tmp_path, use_cache=False)
    for _ in range(3):
        assert run_answer(runtime) == (42.0, False)
    assert entries(tmp_path) == []


# an x86 kernel with the C renderer's preamble, then <immintrin.h> for a masked load and
# intrinsics the renderer does not write (runtimes/x86_headers.py leaves it to <immintrin.h>)
VECTOR_SOURCE = textwrap.dedent("""\
    #include <math.h>
    #include <stdbool.h>
    #include <immintrin.h>
    void answer(float* out, const float* in) {
      __m128 lanes = _mm_maskload_ps(in, _mm_set_epi32(0, -1, -1, -1));
      _mm_storeu_ps(out, _mm_add_ps(lanes, _mm_set1_ps(SHIFT)));
    }
""")
INTRINSICS = BuildFacts(intrinsics=True)  # what the C renderer says of a source like it


def run_vector(runtime: CPURuntime, shift: float) -> tuple[np.ndarray, bool]:
    library, hit = runtime.compile(VECTOR_SOURCE.replace("SHIFT", f"{shift}f"), INTRINSICS)
    out, data = np.zeros(4, np.float32), np.arange(1, 5, dtype=np.float32)
    runtime.load(library, "answer")(out, data)
    return out, hit


def precompiled(directory) -> list[str]:
    return [name for name in entries(directory) if name.endswith(".h.gch")]


def test_x86_kernels_share_one_precompiled_immintrin(tmp_path):
    """gcc reads <immintrin.h> (~2 MB) for a source runtimes/x86_headers.py does not cover (this
    one calls _mm_add_ps) from one precompiled copy per flag set kept in the cache:
    kernels compiled with it are right, a second kernel and a second process reuse it, and a
    damaged copy is rebuilt. Other compilers and other CPUs build none."""
    runtime = CPURuntime(cache_dir=tmp_path)
    if runtime.target.arch != "x86_64":  # no <immintrin.h>: plain kernels never build one
        assert run_answer(runtime) == (42.0, False) and precompiled(tmp_path) == []
        return
    expected = np.array([1.5, 2.5, 3.5, 0.5], np.float32)  # the masked-off lane reads 0
    out, _ = run_vector(runtime, 0.5)
    np.testing.assert_array_equal(out, expected)
    made = precompiled(tmp_path)
    assert len(made) == (1 if runtime.is_gcc() else 0)
    np.testing.assert_array_equal(run_vector(CPURuntime(cache_dir=tmp_path), 1.5)[0],
                                  expected + 1)
    assert precompiled(tmp_path) == made
    if made:
        (tmp_path / made[0]).write_bytes(b"not a header")  # the checksum catches it: rebuilt
        np.testing.assert_array_equal(run_vector(CPURuntime(cache_dir=tmp_path), 2.5)[0],
                                      expected + 2)
        assert (tmp_path / made[0]).stat().st_size > 1000


def test_precompiled_header_and_plain_build_make_the_same_code(tmp_path):
    """The header changes how fast gcc reads the declarations, never the kernel it makes."""
    runtime = CPURuntime(cache_dir=tmp_path / "cache")
    source = VECTOR_SOURCE.replace("SHIFT", "0.25f")
    if runtime.target.arch != "x86_64" or not runtime.is_gcc():
        assert runtime._header_flags(True, runtime.flags(INTRINSICS), None) == ()
        return
    flags = runtime.flags(INTRINSICS)
    with_header = runtime._header_flags(True, flags, None)
    assert with_header[0] == "-include" and os.path.exists(with_header[1] + ".gch")
    runtime._build(source, flags + with_header, tmp_path / "with.so")
    runtime._build(source, flags, tmp_path / "without.so")
    code = [subprocess.run(["objdump", "-d", "--section=.text", str(tmp_path / name)],
                           capture_output=True, text=True).stdout.split("\n", 3)[-1]
            for name in ("with.so", "without.so")]
    assert code[0] == code[1] and "answer" in code[0]


def test_kernels_compiled_while_the_header_is_built_wait_for_it(tmp_path, monkeypatch):
    """The first kernels of a schedule compile on parallel threads: those that found another
    thread building the header used to read <immintrin.h> as text (~8x slower). They wait."""
    import threading
    import time
    runtime = CPURuntime(cache_dir=tmp_path)
    if runtime.target.arch != "x86_64" or not runtime.is_gcc():
        return
    build, built = runtime._precompile_header, []

    def slow_build(flags):
        time.sleep(0.3)  # another thread arrives while it builds
        built.append(flags)
        return build(flags)
    monkeypatch.setattr(runtime, "_precompile_header", slow_build)
    flags, answers = runtime.flags(INTRINSICS), []
    threads = [threading.Thread(target=lambda: answers.append(runtime._header_flags(True, flags, None)))
               for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1 and len(answers) == 3
    assert all(answer[0] == "-include" and os.path.exists(answer[1] + ".gch") for answer in answers)


def test_disabling_the_compiler_cache_after_the_device_opened_compiles_again():
    """Context(DISABLE_COMPILER_CACHE=1) was read once, when the runtime was made: once a device
    existed, kernels still came from the disk cache (no compile counted)."""
    from tinylab import Context, GlobalCounters, Tensor
    x = Tensor(np.arange(9, dtype=np.float32)).realize()
    values = np.arange(9, dtype=np.float32)
    expected = [values * 2.5 - 7.25, np.sqrt(values) + 0.125]

    def run():  # two kernels in one schedule: compiled on parallel threads
        first, second = x * 2.5 - 7.25, x.sqrt() + 0.125
        Tensor.realize(first, second)
        for ours, theirs in zip((first, second), expected):
            np.testing.assert_allclose(ours.numpy(), theirs, rtol=1e-6)
    with Context(PARALLEL_COMPILE=1, THREADS=2):
        run()  # the device is open and both kernels are built (or loaded from disk)
        GlobalCounters.reset()
        with Context(DISABLE_COMPILER_CACHE=1):
            run()
            assert GlobalCounters.compile_count == 2, "both kernels compiled, not loaded"
            run()
        assert GlobalCounters.compile_count == 2, "then reused from memory"
        run()
        assert GlobalCounters.compile_count == 2, "the cached runners again"
