"""The CPU runtime: compile C source with the system compiler into a shared object (cached on
disk by source, compiler, flags and CPU target), load it with ctypes and call the kernel on host
buffers. The ISA flags come from the CPUTarget it is made for (-march=native when detected, a
preset's -m flags otherwise).

Takes source text, its BuildFacts (OpenMP, float16, intrinsics: read, never searched for in the
text) and buffers; knows nothing of the IR. `CC` picks the compiler (gcc or clang);
a missing compiler or a failed compile raises with the kernel source and the compiler's message.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from .. import config
from ..errors import CompileError, CompilerNotFoundError
from ..target.build_facts import BuildFacts
from ..target.cpu_target import INSTALL_HINT, CPUTarget, detect, find_compiler
from .base import Program, Runtime, c_scalar
from . import c_math_header
from .buffer import HostAllocator
from .c_units import UnitCompiler
from .compile_cache import cached_build, discard, key_of, secure_dir, write_once
from .x86_headers import X86Headers

# -fno-tree-loop-vectorize: gcc 12.2's loop vectorizer miscompiles an in-order float sum read
# with a negative stride (x.flip((0, 1)).sum() of arange(12) gave 90, not 66, at plain -O2);
# kernels spell their own vectors, so the vectorizer only ever saw their scalar loops
BASE_FLAGS = ("-O2", "-fPIC", "-shared", "-ffp-contract=fast", "-fno-tree-loop-vectorize",
              "-fno-math-errno", "-fno-trapping-math", "-fno-semantic-interposition")
OPENMP_FLAGS = ("-fopenmp",)
# The quick tier (engine/build_tiers.py, docs/speed.md): a big first batch builds at -O1 and runs
# while the -O2 build is made in the background and swapped in. -fexpensive-optimizations: FMA
# contraction as at -O2 (the same rounding); -fcaller-saves: tile accumulators stay in registers
# when the stores after the reduce loop call a helper (2x slower steps without); -fno-ivopts
# -fno-tree-loop-ivcanon: integer loop work only, a tenth less gcc time, steps as fast;
# -fno-tree-ccp: gcc's costliest pass left at -O1, an eighth of a quick unit's time (the CNN
# step's six units: 1.34 -> 1.17 CPU s on Zen 4); the same float instructions, the cold zoo's
# results bit-identical to -O2's (later passes fold the constants kernels spell).
FULL_LEVEL = ("-O2",)
QUICK_LEVEL = ("-O1", "-fexpensive-optimizations", "-fcaller-saves", "-fno-ivopts",
               "-fno-tree-loop-ivcanon", "-fno-tree-ccp")
# float16 arithmetic rounds after every op (as in PyTorch): a fused a*b+c rounds once, which in
# half precision moves results by up to a unit in the last place (far more after cancellation)
FLOAT16_FLAGS = ("-ffp-contract=off",)
# gcc 12 (-march=native on an AVX512-FP16 CPU) if-converts float16 selects into zero-masked
# vmovsh stores, which do not exist; the assembler rejects them. Such a build is retried once
# with float16 computed through float32 conversions (same rounding after every op).
FLOAT16_FALLBACK_FLAGS = ("-mno-avx512fp16",)

# The link. gcc's default one reads libc's and libm's linker scripts, libgcc_s and libc's static
# part for every kernel: ~18 ms of a small kernel's ~53 ms of CPU. A kernel needs libgomp (its
# parallel loops), libm (a call gcc did not inline) and libgcc's helpers (float16 conversions
# without F16C); the libc functions gcc may call (memcpy, memset) resolve from the process,
# which always has libc loaded. LEAN_LINK links just those, with the usual start files: ~9 ms
# less per compile (Zen 4, medians of 30 interleaved). gcc on Linux; a lean link that fails
# (another libgomp layout) is redone with the default libraries, which the runtime then keeps.
LEAN_LINK = ("-nodefaultlibs", "-lgomp", "-lm", "-lgcc")
DEFAULT_LINK = ("-lm",)

_FIRST_LOAD = threading.Lock()  # one first kernel load at a time sets libgomp's environment

class CPURuntime(X86Headers, UnitCompiler, Runtime):
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
        self._init_headers()  # x86_headers.py: where kernels' intrinsics come from
        self._threads_started = False  # OpenMP's thread pool (_start_threads)
        self._parallel: dict[tuple[str, str], bool] = {}  # (library, symbol) -> runs threads
        self._tiers: dict[tuple[str, str], str] = {}      # (library, symbol) -> "quick"/"full"
        self._lean_link: bool | None = None  # LEAN_LINK works with this compiler (None: not tried)

    @property
    def compiler(self) -> str:
        if self._compiler is None:
            self._compiler = find_compiler(self.preferred)
        return self._compiler

    def version(self) -> str:
        if self._version is None:
            try:
                out = subprocess.run([self.compiler, "--version"], capture_output=True,
                                     text=True, timeout=30, env=config.child_environment())
                self._version = out.stdout.splitlines()[0] if out.stdout else self.compiler
            except (OSError, subprocess.SubprocessError):
                self._version = self.compiler
        return self._version

    def check(self) -> None:
        """Raise if this runtime cannot work here (no compiler)."""
        _ = self.compiler

    @contextlib.contextmanager
    def launching_many(self):
        """The launching thread bound once for a run of launches (a TinyJit replay), not twice
        per parallel kernel: each sched_setaffinity may migrate the thread, ~0.5 ms under load
        (25 ms of a 45-kernel ResNet forward). Nothing bound yet, or binding refused: as before."""
        cpus = getattr(_BOUND, "cpus", None)
        if cpus is None or getattr(_BOUND, "held", False):
            yield
            return
        try:
            os.sched_setaffinity(0, cpus[0])
        except OSError:
            yield
            return
        _BOUND.held = True
        try:
            yield
        finally:
            _BOUND.held = False
            os.sched_setaffinity(0, cpus[1])

    def describe(self) -> str:
        return f"{self.target.name} target ({self.target.isa})"

    def flags(self, facts: BuildFacts | None = None, quick: bool = False) -> tuple[str, ...]:
        """Every kernel builds with OpenMP on (one flag set: kernels of a schedule share units,
        and at most one precompiled <immintrin.h>, x86_headers.py); whether a
        kernel runs threads is its facts' `openmp` (load). `quick`: the quick tier's
        optimization level (QUICK_LEVEL) in place of the full one."""
        base = tuple(f for flag in BASE_FLAGS
                     for f in (QUICK_LEVEL if (flag,) == FULL_LEVEL else (flag,))) if quick \
            else BASE_FLAGS
        return (base + self.target.flags + OPENMP_FLAGS
                + (FLOAT16_FLAGS if facts is not None and facts.float16 else ())
                + tuple(config.CPU_CFLAGS.value.split()))

    def _key(self, text: str, flags: tuple[str, ...]) -> str:
        return key_of(text, self.compiler, self.version(), " ".join(flags), self.target.key,
                      *self.intrinsics_key(text),
                      *((c_math_header.VERSION,) if self._reads_math_header(text) else ()))

    def compile(self, source: str, facts: BuildFacts | None = None,
                flags: tuple[str, ...] | None = None) -> tuple[Path, bool]:
        """(shared object for `source`, True if it came from the on-disk cache); built with
        `flags` (default: the full build's, `flags(facts)`). `facts` None (hand-written
        source): no float16 flags, no precompiled header, threads found when it loads."""
        flags = self.flags(facts) if flags is None else flags
        key = self._key(source, flags)
        intrinsics = facts is not None and facts.intrinsics

        def build(out: Path) -> None:
            try:
                self._built_with_fallback(lambda given: self._build(source, given, out), flags,
                                          self._header_flags(intrinsics, flags, source))
            except CompileError as error:
                if facts is None or not facts.float16 or "vmovsh" not in error.log:
                    raise
                self._build(source, flags + FLOAT16_FALLBACK_FLAGS, out)

        built = cached_build(self.cache_dir, key, build, ".so", self.use_cache)
        if facts is not None:
            self._parallel[(str(built[0]), "")] = facts.openmp  # its one kernel
        return built

    compile_kernel = compile  # (source, facts): a rendered kernel reads its facts here

    @staticmethod
    def full_flags(flags: tuple[str, ...]) -> tuple[str, ...]:
        """The full build's flags for a quick build's (QUICK_LEVEL back to FULL_LEVEL)."""
        if QUICK_LEVEL[0] not in flags:
            return flags
        at = flags.index(QUICK_LEVEL[0])   # flags() put the quick level where the full one was
        return flags[:at] + FULL_LEVEL + flags[at + len(QUICK_LEVEL):]

    def _reads_math_header(self, source: str) -> bool:
        """Whether gcc reads c_math_header.TEXT for `source`'s <math.h> (gcc on Linux, a cache
        to keep it in, a source it covers)."""
        return self.use_cache and self._gcc_on_linux() and c_math_header.covers(source)

    def _gcc_on_linux(self) -> bool:
        return sys.platform.startswith("linux") and self.is_gcc()

    def _build(self, source: str, flags: tuple[str, ...], out: Path) -> None:
        """Compile `source` with `flags` into `out` (-pipe: ~4 ms less); with c_math_header's
        TEXT for its <math.h> where that covers it, once more with <math.h> where that fails."""
        start, end = [self.compiler, "-pipe", *flags], ["-x", "c", "-", "-o", str(out)]
        if self._reads_math_header(source):
            header = write_once(secure_dir(self.cache_dir) / c_math_header.FILE_NAME,
                                c_math_header.TEXT)
            try:
                return self._link(source, start + ["-include", str(header),
                                                   "-Werror=implicit-function-declaration"] + end)
            except CompileError:
                pass   # <math.h> itself: the error, if any, is then the source's own
        self._link(source, start + end)
        if not out.exists() or out.stat().st_size == 0:
            raise CompileError(f"the C compiler {self.compiler} succeeded but wrote no "
                               f"shared object", source)

    def _link(self, source: str, command: list[str]) -> None:
        """Run the compile `command` with the link's libraries: LEAN_LINK or DEFAULT_LINK (keys
        omit them, the kernels are the same)."""
        if self._lean_link is None:
            self._lean_link = self._gcc_on_linux()
        if self._lean_link:
            try:
                return self._run(command + list(LEAN_LINK), source)
            except CompileError as error:
                if "collect2" not in error.log and "ld:" not in error.log:
                    raise   # the source's own error, not the link's
                self._lean_link = False
        self._run(command + list(DEFAULT_LINK), source)

    def _run(self, cmd: list[str], source: str) -> None:
        """Run the compiler command `cmd` with `source` on its standard input."""
        try:
            result = subprocess.run(cmd, input=source, capture_output=True, text=True,
                                    timeout=300, env=config.child_environment())
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

    def load(self, library: Path, name: str):
        try:
            if self._threads_started:
                lib = ctypes.CDLL(str(library))
            else:  # libgomp may load now, reading its wait policy (config.OMP_WAIT)
                with _FIRST_LOAD, config.openmp_environment():
                    lib = ctypes.CDLL(str(library))
        except OSError as exc:  # not a shared object: drop the entry so the next compile rebuilds
            discard(library)
            raise CompileError(f"the compiled kernel {name} does not load ({exc}); its cache "
                               f"entry was removed") from exc
        if not self.use_cache:  # a private build: loaded now, so it need not stay on disk
            library.unlink(missing_ok=True)
        fn = getattr(lib, name)
        fn.restype = None
        if not self._threads_started:
            self._start_threads(lib)
        parallel = self._parallel.get((str(library), name), self._parallel.get(
            (str(library), ""), hasattr(lib, "GOMP_parallel")))  # known from its facts
        return CPUProgram(name, lib, fn, self.target.cores if parallel else 0)

    def _start_threads(self, lib) -> None:
        """Start OpenMP's threads when the first kernel that uses them loads, not in its first
        launch: libgomp makes its thread pool in the first parallel region of the process,
        which took ~7 ms (of a 0.1 ms matmul launch) on a loaded 2-core machine. An empty
        region of the pool's full size, each thread calling libc's free(NULL), starts them."""
        if not hasattr(lib, "GOMP_parallel"):  # resolves only in a library that links libgomp
            return
        self._threads_started = True
        libc = ctypes.CDLL(None)
        _gomp_parallel(lib)(ctypes.cast(libc.free, ctypes.c_void_p), None, self.target.cores, 0)


def _gomp_parallel(lib):
    """libgomp's GOMP_parallel(fn, data, threads, flags), through `lib` (which links libgomp):
    runs fn(data) once in each thread of the calling thread's pool."""
    parallel = lib.GOMP_parallel
    parallel.restype = None
    parallel.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint)
    return parallel


# Where OpenMP's threads run. libgomp keeps one pool of workers per launching thread; the first
# parallel kernel a thread launches binds that pool's worker t to the t-th CPU this process may
# use (_bind_pool), and while each parallel kernel runs the launching thread holds the first
# CPU. Unbound, Linux woke a sleeping worker on the launcher's own CPU and left both there: a
# 1024 matmul after 50 ms idle took 17.8 ms where back to back it took 11.1 (AMD EPYC Zen 4,
# 2 cores); bound, 11.1 after any pause. The launcher is held only for the call: threads it
# starts later inherit its CPUs, and other libraries' pools must see all of them.
_BOUND = threading.local()  # .cpus: (the launcher's CPU set, the set to restore) or None;
# .held: the launcher stays bound across launches (CPURuntime.launching_many)


def _placement(threads: int) -> tuple[list | None, str]:
    """(the CPUs a launcher's pool is bound to, or None where nothing is bound; why, in words)."""
    if threads < 2:
        return None, "one thread: kernels run on the thread that launches them"
    user = [n for n in ("OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY")
            if config.getenv(n) is not None]
    if user:
        return None, f"{user[0]} is set: OpenMP places them"
    if not config.OMP_BIND.value:
        return None, "TINYLAB_OMP_BIND=0: the OS places them"
    if not hasattr(os, "sched_setaffinity"):
        return None, "no thread affinity on this OS: the OS places them"
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None, "one CPU allowed: the OS places them"
    workers = ", ".join(f"{t} on CPU {cpus[t % len(cpus)]}" for t in range(1, threads))
    return cpus, (f"bound: worker {workers}; the launching thread on CPU {cpus[0]} while a "
                  "parallel kernel runs")


def thread_placement(threads: int, source: str = "") -> str:
    """How many OpenMP threads a CPU kernel runs (and `source`, the rule that chose the count,
    target/threads.py), how they wait and where they run (python -m tinylab.device)."""
    wait = config.getenv("OMP_WAIT_POLICY") or str(config.OMP_WAIT.value)
    count = f"{threads} OpenMP thread{'s' if threads != 1 else ''}"
    return f"{count}{f' (from {source})' if source else ''}, {wait.lower()} wait; " \
        f"{_placement(threads)[1]}"


def _bind_pool(lib, threads: int):
    """(the launcher's CPUs during a kernel, the CPUs to give back), or None (_placement: no
    binding wanted or possible)."""
    cpus = _placement(threads)[0]
    if cpus is None:
        return None
    thread_num = lib.omp_get_thread_num
    thread_num.restype = ctypes.c_int
    failed = []

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def bind(_):  # runs once in every thread of this launcher's pool
        t = thread_num()
        if t:
            try:
                os.sched_setaffinity(0, {cpus[t % len(cpus)]})
            except OSError as exc:  # a container that refuses: leave the threads where they are
                failed.append(exc)
    _gomp_parallel(lib)(ctypes.cast(bind, ctypes.c_void_p), None, threads, 0)
    return None if failed else ({cpus[0]}, set(cpus))


class CPUProgram(Program):
    """A loaded kernel. Call with buffers (handles are numpy arrays); returns seconds taken."""

    def __init__(self, name: str, lib, fn, threads: int = 0):
        self.name, self.lib, self.fn = name, lib, fn
        self.threads = threads  # OpenMP threads it runs (0: none); the launcher holds a CPU

    def __call__(self, *handles, wait: bool = True, scalars=(), **launch) -> float:
        pointers = [h.ctypes.data for h in handles]
        ints = [c_scalar(v) for v in scalars]  # symbolic sizes, by value after the buffers
        start = time.perf_counter()
        self.pointers_call([*[ctypes.c_void_p(p) for p in pointers], *ints])
        return time.perf_counter() - start

    def swap(self, other: CPUProgram) -> None:
        """Launch `other`'s code from now on (the same kernel, another build: build_tiers.py).
        Whoever holds this program (a TinyJit replay's bound pointers_call) runs the new code;
        the old library stays loaded (ctypes never unloads one), so a launch under way ends."""
        self.lib, self.fn, self.threads = other.lib, other.fn, other.threads

    def pointers_call(self, pointers) -> None:
        """The fastest call: pre-made ctypes pointers (used by TinyJit replay)."""
        if not self.threads or getattr(_BOUND, "held", False):  # held: launching_many bound it
            self.fn(*pointers)
            return
        try:
            cpus = _BOUND.cpus
        except AttributeError:  # this thread's first parallel kernel
            cpus = _BOUND.cpus = _bind_pool(self.lib, self.threads)
        if cpus is not None:
            try:
                os.sched_setaffinity(0, cpus[0])
            except OSError:  # the CPUs allowed changed under us: stop binding this thread
                cpus = _BOUND.cpus = None
        try:
            self.fn(*pointers)
        finally:
            if cpus is not None:
                os.sched_setaffinity(0, cpus[1])
