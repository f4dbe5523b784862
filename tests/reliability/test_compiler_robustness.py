"""Compiler failures are clear errors and leave everything usable: a compile error, a missing or
vanished compiler, one killed by a signal, one that writes nothing or garbage. Each raises
CompileError / CompilerNotFoundError saying what happened, and the next kernel still works."""
import numpy as np
import pytest

from tinylab import Context, Device, Tensor
from tinylab.errors import CompileError, CompilerNotFoundError
from tinylab.runtimes.cpu import CPURuntime

GOOD = "void answer(float* out) { out[0] = 7.0f; }\n"
BROKEN = "void answer(float* out) { out[0] = no_such_name; }\n"

SCRIPTS = {  # a fake compiler's shell body
    "killed": "kill -9 $$",
    "silent": "exit 0",
    "garbage": 'for a in "$@"; do [ "$prev" = "-o" ] && echo garbage > "$a"; prev="$a"; done',
    "noisy_failure": "echo 'internal compiler error: out of cheese' >&2; exit 4",
}


def fake_compiler(tmp_path, kind: str) -> str:
    path = tmp_path / f"cc-{kind}"
    path.write_text(f"#!/bin/sh\n{SCRIPTS[kind]}\n")
    path.chmod(0o700)
    return str(path)


def run_answer(runtime: CPURuntime) -> float:
    library, _ = runtime.compile(GOOD)
    out = np.zeros(1, np.float32)
    runtime.load(library, "answer")(out)
    return float(out[0])


def test_compile_error_names_the_problem_and_the_next_kernel_works(tmp_path):
    runtime = CPURuntime(cache_dir=tmp_path)
    with pytest.raises(CompileError) as info:
        runtime.compile(BROKEN)
    assert "no_such_name" in info.value.log and "exit status" in str(info.value)
    assert "   1 | void answer" in str(info.value)
    assert run_answer(runtime) == 7.0


@pytest.mark.parametrize("kind, message", [
    ("killed", r"C compile failed \(.*cc-killed, signal 9\)"),
    ("silent", "succeeded but wrote no shared object"),
    ("noisy_failure", r"exit status 4\)\n--- compiler said ---\ninternal compiler error"),
])
def test_broken_compiler_is_a_clear_error(tmp_path, kind, message):
    runtime = CPURuntime(compiler=fake_compiler(tmp_path, kind), cache_dir=tmp_path / "cache")
    with pytest.raises(CompileError, match=message):
        runtime.compile(GOOD)
    assert not [p for p in (tmp_path / "cache").iterdir()], "a failed build left files"
    assert run_answer(CPURuntime(cache_dir=tmp_path / "cache")) == 7.0


def test_garbage_output_is_not_kept_in_the_cache(tmp_path):
    """Regression: a compiler that 'succeeded' with a non-library output got it cached, and every
    later load failed with a bare OSError."""
    cache = tmp_path / "cache"
    runtime = CPURuntime(compiler=fake_compiler(tmp_path, "garbage"), cache_dir=cache)
    for _ in range(2):  # rebuilt (and refused) every time, never served from the cache
        library, hit = runtime.compile(GOOD)
        assert hit is False
        with pytest.raises(CompileError, match="does not load .*cache entry was removed"):
            runtime.load(library, "answer")
        assert list(cache.iterdir()) == []
    assert run_answer(CPURuntime(cache_dir=cache)) == 7.0


def test_missing_compiler_says_how_to_install(tmp_path):
    for name in ["no-such-cc", str(tmp_path / "not-there" / "cc")]:
        with pytest.raises(CompilerNotFoundError, match="no C compiler found .*apt-get install"):
            CPURuntime(compiler=name, cache_dir=tmp_path).compile(GOOD)


def test_compiler_that_vanishes_after_being_found(tmp_path):
    compiler = tmp_path / "cc-gone"
    compiler.write_text("#!/bin/sh\nexec cc \"$@\"\n")
    compiler.chmod(0o700)
    runtime = CPURuntime(compiler=str(compiler), cache_dir=tmp_path / "cache")
    runtime.check()  # found
    compiler.unlink()
    with pytest.raises(CompilerNotFoundError, match="vanished"):
        runtime.compile(GOOD)


def test_compiler_that_cannot_run(tmp_path):
    compiler = tmp_path / "cc-not-a-program"
    compiler.write_text("#!/bin/sh\nexec cc \"$@\"\n")
    compiler.chmod(0o700)
    runtime = CPURuntime(compiler=str(compiler), cache_dir=tmp_path / "cache")
    runtime.check()
    compiler.write_bytes(b"\x7fELF-not-really")  # still executable, no longer a program
    with pytest.raises(CompileError, match="cannot run the C compiler"):
        runtime.compile(GOOD)


def test_engine_recovers_after_a_killed_compiler(tmp_path, monkeypatch):
    """Through realize(): the CPU device's compiler dies; the error is clear and, with the
    compiler back, the very same expression compiles and is right."""
    runtime = Device["CPU"].runtime
    data = np.arange(6, dtype=np.float32)
    with Context(DEV="CPU"):
        monkeypatch.setattr(runtime, "_compiler", fake_compiler(tmp_path, "killed"))
        monkeypatch.setattr(runtime, "_version", "killed-cc")
        with pytest.raises(CompileError, match="signal 9"):
            (Tensor(data) * 3.25 - 0.125).numpy()
        monkeypatch.undo()
        np.testing.assert_allclose((Tensor(data) * 3.25 - 0.125).numpy(), data * 3.25 - 0.125)
