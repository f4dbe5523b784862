"""The CPU that kernels are planned, rendered and compiled for, as data (`CPUTarget`): ISA, vector
width and lanes, vector registers, FMA, cache sizes, cores and the compiler flags that select it.

`current_target()` is the process's target: the preset `CPU_TARGET` names (`PRESETS`), else the
one detected once per process from the compiler's view of -march=native and from the OS.
`runnable_target()` is what the CPU device may run: a preset this CPU cannot execute warns once and
the device keeps the detected target (NULL:C still renders for the preset). The engine calls these
and passes the target down to the heuristic, the C renderer and the CPU runtime.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import platform
import shutil
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from .. import config
from ..memo import Role, cached, register
from ..errors import CompilerNotFoundError, DeviceError, TinylabError
from .threads import machine_threads, thread_count

KIB, MIB = 1 << 10, 1 << 20
DTYPE_BYTES = MappingProxyType({
    "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "int16": 2,
    "int32": 4, "int64": 8
})


class TargetError(DeviceError, ValueError):
    """An unknown CPU target name (the CPU devices cannot open); the message lists the presets."""


class TargetWarning(UserWarning):
    """A preset this CPU cannot execute: kernels are rendered for it, never run."""


@dataclass(frozen=True)
class CPUTarget:
    name: str                  # "native" (detected) or a preset's name
    isa: str                   # avx512, avx2, avx, sse4, sse2, neon, generic
    arch: str                  # x86_64, aarch64, or what the compiler reports
    vector_bits: int           # width of one vector register
    vector_registers: int      # architectural vector registers
    fma: bool                  # fused multiply-add instructions
    l1d_bytes: int             # per core
    l2_bytes: int              # per core (or per cluster where the OS says so)
    l3_bytes: int              # shared
    cores: int                 # cores this process may use
    flags: tuple[str, ...]     # compiler flags that select the ISA
    features: frozenset = frozenset()  # ISA macros those flags define (__AVX2__, __ARM_NEON...)
    cache_line_bytes: int = 64  # x86 and most ARM cores; Apple's are 128
    model: str = ""            # the CPU's name, or what a preset stands for
    notes: tuple[str, ...] = ()  # values that are documented defaults, not measured
    micro_kernel: tuple[int, ...] = ()  # measured (rows, vectors, reduce block) of the fastest
                                        # register tile (engine/calibrate.py); () = the model's
    measured: str = ""         # what the calibration timed, one line ("" = not calibrated)

    def lanes_of(self, itemsize: int) -> int:
        """Elements of `itemsize` bytes in one vector register."""
        return max(1, self.vector_bits // (8 * itemsize))

    @property
    def lanes(self) -> dict[str, int]:
        return {name: self.lanes_of(size) for name, size in DTYPE_BYTES.items()}

    @property
    def masked_loads(self) -> str:
        """How the ISA loads a vector with lanes switched off: "mask registers" (AVX-512),
        "maskload" (AVX/AVX2 vmaskmov) or "select" (a full load and a lane select, where no
        instruction exists: SSE, NEON)."""
        if "__AVX512F__" in self.features:
            return "mask registers"
        return "maskload" if "__AVX__" in self.features else "select"

    def executable_on(self, host: CPUTarget) -> bool:
        """Can a CPU described by `host` (a detected target) run code compiled for this one?"""
        return self.arch == host.arch and self.features <= host.features

    @functools.cached_property
    def key(self) -> str:
        """A stable name for cache keys: every field that changes a plan or a binary."""
        digest = hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode())
        return f"{self.name}-{self.isa}-{digest.hexdigest()[:12]}"

    @property
    def machine_key(self) -> str:
        """`key` without what calibration timed: the machine and the ISA alone (its roofs are the
        same whichever register tile calibration chose)."""
        return dataclasses.replace(self, micro_kernel=(), measured="").key

    def as_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out.update(flags=list(self.flags), features=sorted(self.features), notes=list(self.notes),
                   lanes=self.lanes, masked_loads=self.masked_loads)
        return out

    def describe(self) -> str:
        """One line: what the planner and the compiler assume."""
        caches = "/".join(_size(b) for b in (self.l1d_bytes, self.l2_bytes, self.l3_bytes))
        model = f", {self.model}" if self.model else ""
        flags = " ".join(self.flags) or "no ISA flags"
        default = f"; defaults for {', '.join(self.notes)}" if self.notes else ""
        default += f"; measured: {self.measured}" if self.measured else ""
        return (f"{self.name} ({self.isa}{model}): {self.vector_bits}-bit vectors "
                f"({self.lanes_of(4)} float32 lanes) x {self.vector_registers} registers, "
                f"{'FMA' if self.fma else 'no FMA'}, L1d/L2/L3 {caches}, {self.cores} core"
                f"{'s' if self.cores != 1 else ''}, "
                f"{flags}{default}")


def _size(nbytes: int) -> str:
    return f"{nbytes // MIB} MiB" if nbytes >= MIB and not nbytes % MIB else f"{nbytes // KIB} KiB"


def _preset(name, isa, arch, bits, registers, fma, caches, flags, features, model) -> CPUTarget:
    l1d, l2, l3 = caches
    return CPUTarget(name, isa, arch, bits, registers, fma, l1d, l2, l3, 1, tuple(flags),
                     frozenset(features), model=model)


_X86_BASE = ("__SSE__", "__SSE2__")
_SSE4 = _X86_BASE + ("__SSE3__", "__SSSE3__", "__SSE4_1__", "__SSE4_2__")
_AVX2 = _SSE4 + ("__AVX__", "__AVX2__", "__FMA__", "__F16C__")
# Each preset's caches are those typical of the CPUs it stands for (per core, L3 shared):
PRESETS: dict[str, CPUTarget] = MappingProxyType({
    # Nehalem..Westmere-class x86-64-v2: 16 xmm registers, 32 KiB L1d, 256 KiB L2, 8 MiB L3
    "sse4": _preset("sse4", "sse4", "x86_64", 128, 16, False, (32 * KIB, 256 * KIB, 8 * MIB),
                    ("-msse4.2",), _SSE4, "x86-64-v2 (SSE4.2)"),
    # AVX2 laptops and servers (Zen 2/3: 32 KiB L1d, 512 KiB L2; Skylake client: 256 KiB L2):
    # 16 ymm registers of 8 float32
    "avx2": _preset("avx2", "avx2", "x86_64", 256, 16, True, (32 * KIB, 512 * KIB, 32 * MIB),
                    ("-mavx2", "-mfma", "-mf16c"), _AVX2, "x86-64-v3 (AVX2 + FMA)"),
    # AVX-512 servers (Ice Lake / Sapphire Rapids: 48 KiB L1d, 1.25-2 MiB L2; Zen 4: 32 KiB,
    # 1 MiB): 32 zmm registers of 16 float32
    "avx512": _preset("avx512", "avx512", "x86_64", 512, 32, True, (48 * KIB, 1 * MIB, 32 * MIB),
                      ("-mavx512f", "-mavx512vl", "-mavx512bw", "-mavx512dq", "-mavx2", "-mfma",
                       "-mf16c"),
                      _AVX2 + ("__AVX512F__", "__AVX512VL__", "__AVX512BW__", "__AVX512DQ__"),
                      "x86-64-v4 (AVX-512)"),
    # AArch64 (Apple M1: 128 KiB L1d, 12 MiB L2 per cluster; Graviton 2/3: 64 KiB, 1 MiB): 32
    # NEON registers of 4 float32; NEON is part of the AArch64 baseline, so no flag is needed
    "neon": _preset("neon", "neon", "aarch64", 128, 32, True, (64 * KIB, 1 * MIB, 32 * MIB),
                    (), ("__ARM_NEON", "__aarch64__"), "AArch64 (NEON)"),
})
# when the compiler or the OS says nothing: the ISA's preset values, else these
GENERIC = _preset("generic", "generic", platform.machine() or "unknown", 128, 16, False,
                  (32 * KIB, 256 * KIB, 8 * MIB), (), (), "portable C vector extensions")


# ---- detection -----------------------------------------------------------------------------
INSTALL_HINT = ("install one: `apt-get install gcc` (Debian/Ubuntu), `dnf install gcc` (Fedora), "
                "`xcode-select --install` (macOS), or point CC at a compiler")


def find_compiler(preferred: str = "") -> str:
    """The path of the C compiler to use: `preferred` (CC) if given, else cc, gcc or clang."""
    candidates = [preferred] if preferred else ["cc", "gcc", "clang"]
    for name in candidates:
        path = shutil.which(name)
        if path:
            return path
    tried = ", ".join(candidates)
    raise CompilerNotFoundError(f"no C compiler found (tried {tried}); {INSTALL_HINT}")


def _compiler() -> str | None:
    try:
        return find_compiler(config.CC.value)
    except TinylabError:
        return None


def compiler_macros(compiler: str, flags: tuple[str, ...]) -> set[str] | None:
    """Names of the macros `compiler` predefines with `flags` (None if it refuses them)."""
    try:
        done = subprocess.run([compiler, *flags, "-dM", "-E", "-x", "c", os.devnull],
                              capture_output=True, text=True, timeout=30,
                              env=config.child_environment())
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return {line.split()[1] for line in done.stdout.splitlines() if line.startswith("#define ")}


def _isa(macros: set[str]) -> tuple[str, str, int, int]:
    """(isa, arch, vector bits, vector registers) from predefined macros."""
    if "__aarch64__" in macros or "__ARM_NEON" in macros:
        return "neon", "aarch64", 128, 32
    if "__x86_64__" in macros:
        for isa, macro, bits, registers in (("avx512", "__AVX512F__", 512, 32),
                                            ("avx2", "__AVX2__", 256, 16),
                                            ("avx", "__AVX__", 256, 16),
                                            ("sse4", "__SSE4_1__", 128, 16)):
            if macro in macros:
                return isa, "x86_64", bits, registers
        return "sse2", "x86_64", 128, 16
    return "generic", GENERIC.arch, 128, 16


def _cache_sizes() -> dict[str, int]:
    """{"l1d", "l2", "l3", "line"} bytes of cpu0's caches from /sys (Linux), or sysctl (macOS)."""
    found: dict[str, int] = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = _parse_size((index / "size").read_text().strip())
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified") and level in (1, 2, 3):
            found.setdefault("l1d" if level == 1 else f"l{level}", size)
            if level == 1:
                try:
                    found["line"] = int((index / "coherency_line_size").read_text())
                except (OSError, ValueError):
                    pass
    if not found and platform.system() == "Darwin":
        for key, name in (("l1d", "hw.l1dcachesize"), ("l2", "hw.l2cachesize"),
                          ("l3", "hw.l3cachesize"), ("line", "hw.cachelinesize")):
            try:
                value = int(subprocess.run(["sysctl", "-n", name], capture_output=True,
                                           text=True, timeout=10).stdout.strip())
            except (OSError, ValueError, subprocess.SubprocessError):
                continue
            if value > 0:
                found[key] = value
    return found


def _parse_size(text: str) -> int:
    units = {"K": KIB, "M": MIB, "G": 1 << 30}
    if text and text[-1].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


def _model_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "Model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or ""


@cached("detected CPU targets", 8)   # by compiler
def detect(compiler: str | None = None) -> CPUTarget:
    """The target of the machine in front of us, once per process (and compiler): the ISA the
    compiler enables for -march=native (or -mcpu=native), caches from the OS; where either
    says nothing, the documented defaults of the matching preset (listed in `notes`)."""
    compiler = compiler or _compiler()
    macros, flags = None, ()
    for native in (("-march=native",), ("-mcpu=native",), ()):
        macros = compiler_macros(compiler, native) if compiler else None
        if macros is not None:
            flags = native
            break
    notes = []
    if macros is None:  # no compiler answered: the machine's baseline
        notes.append("ISA (no C compiler answered)")
        isa = "neon" if platform.machine().lower() in ("arm64", "aarch64") else \
            "sse2" if platform.machine().lower() in ("x86_64", "amd64") else "generic"
        base = PRESETS.get(isa, GENERIC)
        isa, arch, bits, registers = isa, base.arch, base.vector_bits, base.vector_registers
        macros = set(base.features)
    else:
        isa, arch, bits, registers = _isa(macros)
    fma = "__FMA__" in macros or "__ARM_FEATURE_FMA" in macros
    defaults = PRESETS.get({"avx": "avx2", "sse2": "sse4"}.get(isa, isa), GENERIC)
    caches = _cache_sizes()
    fallback = {"l1d": defaults.l1d_bytes, "l2": defaults.l2_bytes, "l3": defaults.l3_bytes}
    for level, size in fallback.items():
        if level not in caches:
            notes.append(level.upper() if level != "l1d" else "L1d")
            caches[level] = size
    isa_macros = {m for m in macros if m.startswith(("__AVX", "__SSE", "__SSSE3", "__FMA", "__F16C",
                                                     "__ARM_NEON", "__ARM_FEATURE", "__aarch64"))}
    return CPUTarget("native", isa, arch, bits, registers, fma, caches["l1d"], caches["l2"],
                     caches["l3"], machine_threads().count, flags, frozenset(isa_macros),
                     caches.get("line", defaults.cache_line_bytes), _model_name(), tuple(notes))


# ---- the process's target -------------------------------------------------------------------
def preset(name: str) -> CPUTarget:
    """A preset by name ("native" or "" is the detected target); unknown names list the rest."""
    name = name.strip().lower()
    if name in ("", "native"):
        return detect()
    if name not in PRESETS:
        raise TargetError(f"unknown CPU target {name!r}; presets: {', '.join(PRESETS)} "
                          f"(or '' / 'native' to detect this CPU)")
    return PRESETS[name]


def current_target() -> CPUTarget:
    """The target CPU_TARGET names (else the detected one), with this process's threads."""
    return _with_cores(preset(config.CPU_TARGET.value), thread_count().count)


@cached("CPU targets with cores", 64)
def _with_cores(target: CPUTarget, cores: int) -> CPUTarget:
    return dataclasses.replace(target, cores=cores)


# preset names warned about once (at most one per preset)
_WARNED: set[str] = register("CPU target warnings", set(), Role.CACHE, limit=64)


def runnable_target() -> CPUTarget:
    """The target the CPU device compiles and runs for: `current_target()` when this CPU can
    execute it, else (after one warning per preset) the detected target."""
    chosen, host = current_target(), detect()
    if chosen.executable_on(host):
        return chosen
    if chosen.name not in _WARNED:
        _WARNED.add(chosen.name)
        warnings.warn(f"CPU_TARGET={chosen.name}: this CPU ({host.isa}, {host.arch}) cannot "
                      f"execute {chosen.isa} code; the CPU device keeps the detected target "
                      f"({host.isa}) and {chosen.name} is used only for rendering (DEV=NULL:C)",
                      TargetWarning, stacklevel=2)
    return _with_cores(host, chosen.cores)
