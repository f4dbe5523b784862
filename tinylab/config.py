"""Layer 0: settings. The ONLY module that reads os.environ, once, at import.

Gives `DEBUG`, `BEAM`, `NOOPT`, `DEV`, ... as `Setting`s (`DEBUG >= 2`, `DEBUG.value`) and
`Context(DEBUG=4, BEAM=2)`, a `with` block that overrides settings for its duration (per thread /
task, via contextvars). The engine reads settings and passes plain values down to the stages.
"""
from __future__ import annotations

import contextvars
import numbers
import os
from contextlib import ContextDecorator, contextmanager
from pathlib import Path

from .memo import Role, register

_ENV = dict(os.environ)  # read once; nothing else in tinylab touches os.environ


def getenv(name: str, default=None):
    """Environment value converted to the type of `default` (int settings accept '0'/'1')."""
    raw = _ENV.get(name)
    if raw is None:
        return default
    if isinstance(default, bool):
        return raw not in ("", "0", "false", "False")
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            return default
    return raw


class Setting:
    """A named setting with an environment default and contextvar overrides."""

    def __init__(self, name: str, default, doc: str):
        self.name, self.doc, self.default = name, doc, default
        self._var = contextvars.ContextVar(name, default=getenv(name, default))  # noqa: B039
        SETTINGS[name] = self

    @property
    def value(self):
        return self._var.get()

    def set(self, value):
        """Set for the rest of this context (prefer `Context(...)` which restores)."""
        return self._var.set(value)

    def set_default(self, value) -> None:
        """The value every context reads unless it overrides it, for the rest of the process
        (a notebook's cells run in copies of a context, where `set` would not last)."""
        self._var = contextvars.ContextVar(self.name, default=value)

    def __bool__(self):
        return bool(self.value)

    def __int__(self):
        return int(self.value)

    def __eq__(self, other):
        return self.value == other

    def __hash__(self):
        return hash(self.name)

    def __ge__(self, other):
        return self.value >= other

    def __gt__(self, other):
        return self.value > other

    def __le__(self, other):
        return self.value <= other

    def __lt__(self, other):
        return self.value < other

    def __repr__(self):
        return f"{self.name}={self.value!r}"


SETTINGS: dict[str, Setting] = register("settings", {}, Role.ROWS)  # name -> its Setting

DEBUG = Setting("DEBUG", 0, "1 devices+schedules, 2 kernel lines, 3 fusion/opts, 4 source, 5 IR")
BEAM = Setting("BEAM", 0, "beam width for the kernel optimizer search (0 = heuristic)")
IGNORE_BEAM_CACHE = Setting("IGNORE_BEAM_CACHE", 0, "1 = search again instead of reusing the "
                            "BEAM / TUNE winners cached on disk (new winners are still written)")
TUNE = Setting("TUNE", 0, "1 = time the heuristic's few candidate plans for big kernels "
               "(cached on disk; costs compile time once); 0 = take the heuristic's first choice")
NOOPT = Setting("NOOPT", 0, "1 = no optimization actions (plain loops)")
DEV = Setting("DEV", "", "device to use: CPU, PYTHON, CL, CUDA, WEBGPU, NULL:<renderer>")
CC = Setting("CC", "", "C compiler for the CPU backend (default: cc, gcc or clang)")
CPU_CFLAGS = Setting("TINYLAB_CPU_CFLAGS", "", "extra C compiler flags for CPU kernels, after "
                     "tinylab's own (part of the cache key), e.g. '-fsanitize=address' for a "
                     "bounds sweep run with libasan preloaded (make asan)")
CPU_TARGET = Setting("CPU_TARGET", "", "CPU to plan, render and compile for: '' or 'native' = "
                     "detect (cc -march=native, /sys caches); a preset: sse4, avx2, avx512, neon. "
                     "A preset this CPU cannot execute only renders (NULL:C)")
THREADS = Setting("THREADS", 0, "CPU threads for parallel loops; 0 = OMP_NUM_THREADS, else the "
                  "cgroup's CPU quota, else the CPUs this process may run on (target/threads.py)")
TRAINING = Setting("TRAINING", 0, "1 = Tensor.training (dropout, batchnorm batch stats)")
JIT = Setting("JIT", 1, "0 disables TinyJit capture (runs the function every time)")
FUSE = Setting("FUSE", 1, "0 = one kernel per op (the scheduler's fuse=False)")
RELAYOUT = Setting("RELAYOUT", 1, "1 = a big reduce whose vectors would run mostly masked reads "
                   "its windowed operand from a relaid-out copy (schedule/relayout.py; faster CNN "
                   "weight gradients); 0 = never")
CALIBRATE = Setting("TINYLAB_CALIBRATE", 1, "1 = on first use of a CPU, time a few matmul "
                    "micro-kernels (~10 s, kept in the kernel cache per CPU, target and compiler) "
                    "and plan from the fastest; 0 = plan from the model alone")
CACHE = Setting("TINYLAB_CACHE", "", "directory for compiled kernels (default ~/.cache/tinylab)")
DISABLE_CACHE = Setting("DISABLE_COMPILER_CACHE", 0, "1 = always recompile")
DATA = Setting("TINYLAB_DATA", "", "directory searched first for datasets")
SEED = Setting("SEED", 0, "initial seed for Tensor.manual_seed")
SCHEDULE_CACHE = Setting("SCHEDULE_CACHE", 1, "1 = a graph whose structure was scheduled "
                         "before reuses that schedule over its own buffers; 0 = schedule every "
                         "realize afresh")
OMP_WAIT = Setting("TINYLAB_OMP_WAIT", "passive", "how the OpenMP threads of CPU kernels wait "
                   "between launches: passive (sleep; on a loaded 2-core machine a jitted MLP "
                   "step took 0.9 ms, spinning 84 ms) or active (spin); OMP_WAIT_POLICY or "
                   "GOMP_SPINCOUNT in the environment win")
OMP_BIND = Setting("TINYLAB_OMP_BIND", 1, "1 = bind each OpenMP worker of CPU kernels to a CPU "
                   "of its own, and the launching thread to the first while a parallel kernel "
                   "runs (runtimes/cpu.py: unbound, a woken worker shared the launcher's CPU); "
                   "OMP_PROC_BIND, OMP_PLACES or GOMP_CPU_AFFINITY in the environment win")
PARALLEL_COMPILE = Setting("PARALLEL_COMPILE", 1, "compile a schedule's kernels in parallel")
QUICK_BUILD = Setting("TINYLAB_QUICK_BUILD", 24, "a realize that builds at least this many CPU "
                      "kernels runs them from a quick -O1 build while a background thread "
                      "makes the -O2 build and swaps it in (engine/build_tiers.py); 0 = off")
COLOR = Setting("COLOR", 1, "colour kernel names in the terminal")
TINYGRAD_VALUES = Setting("TINYGRAD_VALUES", 0, "1 = tinygrad's values where it and PyTorch "
                          "give different ones for the same call (gelu's tanh form, interpolate's "
                          "default mode linear, cummax's first index); `python -m "
                          "tinylab.as_tinygrad` sets it. 0 = PyTorch's")
PROGRESS = Setting("PROGRESS", 1, "1 = show compile / TUNE / BEAM / download progress on a "
                   "terminal (stderr) for work that lasts over a second; 0 = never")


class CompilerCacheOn:
    """Whether compiled binaries come from and go to the disk cache, read at each use (bool()):
    runtimes, made once when their device opens, follow a later Context(DISABLE_COMPILER_CACHE=)."""

    def __bool__(self) -> bool:
        return not DISABLE_CACHE.value


COMPILER_CACHE_ON = CompilerCacheOn()


def check_value(setting: Setting, value) -> None:
    """Text settings take a str, the others a non-negative int (True/False count as 1/0)."""
    if isinstance(setting.default, str):
        if not isinstance(value, str):
            raise TypeError(f"Context: {setting.name} must be a string, got {value!r}")
    elif not isinstance(value, numbers.Integral):
        raise TypeError(f"Context: {setting.name} must be an int, got {value!r} "
                        f"({type(value).__name__}); {setting.name}: {setting.doc}")
    elif value < 0:
        raise ValueError(f"Context: {setting.name} must be >= 0, got {value}")


class Context(ContextDecorator):
    """`with Context(DEBUG=4, BEAM=2): ...` overrides settings inside the block only; as a
    decorator, `@Context(DEBUG=2)`, it overrides them for each call of the function."""

    def __init__(self, **overrides):
        unknown = [k for k in overrides if k not in SETTINGS]
        if unknown:
            raise ValueError(f"unknown setting(s) {unknown}; known: {sorted(SETTINGS)}")
        for key, value in overrides.items():
            check_value(SETTINGS[key], value)
        self.overrides = overrides
        self._tokens: list = []

    def _recreate_cm(self):
        return Context(**self.overrides)  # each call (recursive, or on another thread) its own

    def __enter__(self):
        self._tokens = [SETTINGS[k].set(v) for k, v in self.overrides.items()]
        return self

    def __exit__(self, *exc):
        for key, token in zip(reversed(list(self.overrides)), reversed(self._tokens)):
            SETTINGS[key]._var.reset(token)
        return False


def cache_dir() -> Path:
    """The per-user cache directory (created 0700 by whoever writes to it)."""
    if CACHE.value:
        return Path(CACHE.value)
    base = _ENV.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tinylab"


def child_environment() -> dict:
    """The environment to give a compiler (which may start on a thread): a copy of os.environ,
    so the child never reads the process's C `environ` while openmp_environment (below) changes
    it on another thread (a compiler started as setenv moved that array failed with EFAULT, "Bad
    address", at a first kernel load beside a schedule's compiles)."""
    return dict(os.environ)


@contextmanager
def openmp_environment():
    """Around the load of the first OpenMP kernel (when libgomp reads its environment):
    OMP_WAIT_POLICY from OMP_WAIT, unless the user chose a wait policy; restored after, so
    other libraries loaded later see the environment the user gave."""
    if "OMP_WAIT_POLICY" in _ENV or "GOMP_SPINCOUNT" in _ENV or "OMP_WAIT_POLICY" in os.environ:
        yield
        return
    os.environ["OMP_WAIT_POLICY"] = str(OMP_WAIT.value).upper()
    try:
        yield
    finally:
        os.environ.pop("OMP_WAIT_POLICY", None)
