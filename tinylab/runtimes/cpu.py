"""The CPU runtime: compile C source with the system compiler into a shared object (cached on
disk by source, compiler, flags and CPU target), load it with ctypes and call the kernel on host
buffers. The ISA flags come from the CPUTarget it is made for (-march=native when detected, a
preset's -m flags otherwise).

Takes source text and buffers; knows nothing of the IR. `CC` picks the compiler (gcc or clang);
a missing compiler or a failed compile raises with the kernel source and the compiler's message.
"""
from __future__ import annotations

import ctypes
import shutil
import subprocess
import time
from pathlib import Path

from ..errors import CompileError, CompilerNotFoundError
from .base import Program, Runtime
from .buffer import HostAllocator
from .compile_cache import cached_build, discard, key_of
from .cpu_target import CPUTarget, detect

BASE_FLAGS = ("-O2", "-fPIC", "-shared", "-ffp-contract=fast",
              "-fno-math-errno", "-fno-trapping-math", "-fno-semantic-interposition")
OPENMP_FLAGS = ("-fopenmp",)
# float16 arithmetic rounds after every op (as in PyTorch): a fused a*b+c rounds once, which in
# half precision moves results by up to a unit in the last place (far more after cancellation)
FLOAT16_FLAGS = ("-ffp-contract=off",)
# gcc 12 (-march=native on an AVX512-FP16 CPU) if-converts float16 selects into zero-masked
# vmovsh stores, which do not exist; the assembler rejects them. Such a build is retried once
# with float16 computed through float32 conversions (same rounding after every op).
FLOAT16_FALLBACK_FLAGS = ("-mno-avx512fp16",)

INSTALL_HINT = ("install one: `apt-get install gcc` (Debian/Ubuntu), `dnf install gcc` (Fedora), "
                "`xcode-select --install` (macOS), or point CC at a compiler")


def find_compiler(preferred: str = "") -> str:
    candidates = [preferred] if preferred else ["cc", "gcc", "clang"]
    for name in candidates:
        path = shutil.which(name)
        if path:
            return path
    tried = ", ".join(candidates)
    raise CompilerNotFoundError(f"no C compiler found (tried {tried}); {INSTALL_HINT}")


class CPURuntime(Runtime):
    name = "CPU"

    def __init__(self, compiler: str = "", cache_dir: Path | None = None, use_cache: bool = True,
                 target: CPUTarget | None = None):
        self.preferred = compiler
        self.target = target if target is not None else detect()
        self.cache_dir = cache_dir
        self.use_cache = use_cache
        self.allocator = HostAllocator()
        self._compiler: str | None = None
        self._version: str | None = None

    @property
    def compiler(self) -> str:
        if self._compiler is None:
            self._compiler = find_compiler(self.preferred)
        return self._compiler

    def version(self) -> str:
        if self._version is None:
            try:
                out = subprocess.run([self.compiler, "--version"], capture_output=True,
                                     text=True, timeout=30)
                self._version = out.stdout.splitlines()[0] if out.stdout else self.compiler
            except (OSError, subprocess.SubprocessError):
                self._version = self.compiler
        return self._version

    def check(self) -> None:
        """Raise if this runtime cannot work here (no compiler)."""
        _ = self.compiler

    def describe(self) -> str:
        return f"{self.target.name} target ({self.target.isa})"

    def flags(self, source: str) -> tuple[str, ...]:
        return (BASE_FLAGS + self.target.flags + (OPENMP_FLAGS if "#pragma omp" in source else ())
                + (FLOAT16_FLAGS if "_Float16" in source else ()))

    def compile(self, source: str) -> tuple[Path, bool]:
        """(shared object for `source`, True if it came from the on-disk cache)."""
        flags = self.flags(source)
        key = key_of(source, self.compiler, self.version(), " ".join(flags), self.target.key)

        def build(out: Path) -> None:
            try:
                self._build(source, flags, out)
            except CompileError as error:
                if "_Float16" not in source or "vmovsh" not in error.log:
                    raise
                self._build(source, flags + FLOAT16_FALLBACK_FLAGS, out)

        return cached_build(self.cache_dir, key, build, ".so", self.use_cache)

    def _build(self, source: str, flags: tuple[str, ...], out: Path) -> None:
        """Compile `source` with `flags` into the shared object `out`."""
        cmd = [self.compiler, *flags, "-x", "c", "-", "-o", str(out), "-lm"]
        try:
            result = subprocess.run(cmd, input=source, capture_output=True, text=True,
                                    timeout=300)
        except FileNotFoundError as exc:
            raise CompilerNotFoundError(f"C compiler {self.compiler} vanished: {exc}; "
                                        f"{INSTALL_HINT}") from exc
        except OSError as exc:  # not executable, not a program...
            raise CompileError(f"cannot run the C compiler {self.compiler}: {exc}",
                               source) from exc
        except subprocess.TimeoutExpired as exc:
            raise CompileError("the C compiler timed out", source, str(exc)) from exc
        if result.returncode != 0:
            why = (f"signal {-result.returncode}" if result.returncode < 0
                   else f"exit status {result.returncode}")
            raise CompileError(f"C compile failed ({' '.join(cmd[:1])}, {why})", source,
                               result.stderr or result.stdout)
        if not out.exists() or out.stat().st_size == 0:
            raise CompileError(f"the C compiler {self.compiler} succeeded but wrote no "
                               f"shared object", source, result.stderr or result.stdout)

    def load(self, library: Path, name: str):
        try:
            lib = ctypes.CDLL(str(library))
        except OSError as exc:  # not a shared object: drop the entry so the next compile rebuilds
            discard(library)
            raise CompileError(f"the compiled kernel {name} does not load ({exc}); its cache "
                               f"entry was removed") from exc
        if not self.use_cache:  # a private build: loaded now, so it need not stay on disk
            library.unlink(missing_ok=True)
        fn = getattr(lib, name)
        fn.restype = None
        return CPUProgram(name, lib, fn)


class CPUProgram(Program):
    """A loaded kernel. Call with buffers (handles are numpy arrays); returns seconds taken."""

    def __init__(self, name: str, lib, fn):
        self.name, self.lib, self.fn = name, lib, fn

    def __call__(self, *handles, wait: bool = True, **launch) -> float:
        pointers = [h.ctypes.data for h in handles]
        start = time.perf_counter()
        self.fn(*[ctypes.c_void_p(p) for p in pointers])
        return time.perf_counter() - start

    def pointers_call(self, pointers) -> None:
        """The fastest call: pre-made ctypes pointers (used by TinyJit replay)."""
        self.fn(*pointers)
