"""A device's roofs: peak compute (FLOP/s) and one memory bandwidth (bytes/s) per level, which no
kernel on this machine, numpy's included, may beat. `device_peak(name)` -> Peak, once per process
per device; `raise_roof(...)` lifts a roof a kernel was measured above.

CPU compute: max(float32 lanes x 2 (FMA) x FMA pipes per core x cores x clock, numpy's matmul
measured here). The clock: cpufreq's maximum where the OS says, else measured with a generated FMA
kernel of the target's vector width using half its vector registers as independent chains.
CPU bandwidth: L1, L2, L3 and DRAM roofs, each measured by a loop kernel over a working set of
that level (engine/roofs.py). The disk cache keeps the best ever seen per CPU and level; a process
measures again and keeps the larger, so one loaded run never lowers a roof.
CL: compute units x clock x float width x 2; CUDA: SMs x FP32 cores x 2 x clock; both with a
timed copy kernel (one DRAM roof). Used by inspection/roofline.py, the training monitor and
`python -m tinylab.device`.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType

from .. import config
from ..memo import Memo
from ..dtype import dtypes
from ..ir import node as ir
from ..runtimes.buffer import Buffer
from .devices import Device
from .roofs import memory_roofs

FALLBACK_CLOCK_HZ = 3.0e9     # no clock from the OS nor a measurement: a typical boost clock
COPY_BYTES = 1 << 26          # a device's copy kernel (CL, CUDA) moves 64 MiB each way
COPY_RUNS = 5
STEADY_ROUNDS, STEADY_GAIN = 6, 0.03   # copies are timed again while a round still gains 3%
CACHE_VERSION = 2             # 2: a roof per level, loop kernels (1: DRAM and L2 copies)
MATMUL_SIZE = 1024            # numpy's matmul, timed for the compute floor
FMA_ITERATIONS = 1 << 20      # vector FMAs per chain in the clock kernel
CUDA_CORES_PER_SM = MappingProxyType({
    (6, 0): 64, (6, 1): 128, (7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128,
    (8, 9): 128, (9, 0): 128
})  # NVIDIA's CUDA C programming guide, table 21
# vector FMA (or multiply + add) pipes per core, typical of the CPUs each ISA preset stands for:
# Haswell..Alder Lake, Zen 2-4 and AVX-512 Xeons (Skylake-SP Gold/Platinum, Ice Lake-SP,
# Sapphire Rapids) issue two vector FMAs a cycle; Graviton 2/3 two NEON FMAs; SSE-era cores one
FMA_PIPES = MappingProxyType({
    "avx512": 2, "avx2": 2, "avx": 1, "sse4": 1, "sse2": 1, "neon": 2, "generic": 1
})
_PEAKS = Memo("device peaks", 64)   # device name -> Peak, measured once per process


@dataclass
class Peak:
    device: str
    flops_per_s: float | None     # None: not known for this device
    bytes_per_s: float | None     # DRAM: the roof of a working set larger than every cache
    compute_from: str             # how the compute roof was found, in words
    bandwidth_from: str           # how the DRAM roof was found
    levels: list = field(default_factory=list)   # [{"level", "fits_bytes", "bytes_per_s",
                                                 # "how"}], L1 first, DRAM (fits None) last
    raised: list = field(default_factory=list)   # "roof raised by kernel k: ..." notes

    def as_dict(self) -> dict:
        out = asdict(self)
        out["raised"] = list(self.raised)
        return out

    def roofs_text(self) -> str:
        """'L1 459.1 GB/s (up to 64 KiB), ..., DRAM 13.6 GB/s': the figures the notebooks, the
        inspector and `python -m tinylab.device` show."""
        return roofs_text(self.levels)


def roofs_text(levels: list[dict]) -> str:
    return ", ".join(f"{row['level']} {row['bytes_per_s'] / 1e9:.1f} GB/s"
                     + (f" (up to {size_words(row['fits_bytes'])})" if row["fits_bytes"] else "")
                     for row in levels)


def size_words(nbytes: int) -> str:
    return f"{nbytes / 2**20:g} MiB" if nbytes >= 1 << 20 else f"{nbytes / 2**10:g} KiB"


def cpu_clock_hz(cpufreq: Path = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"),
                 cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[float, str]:
    """(clock in Hz, where it came from): the OS's maximum frequency, else the current one."""
    try:
        return int(cpufreq.read_text().strip()) * 1e3, "cpufreq maximum"
    except (OSError, ValueError):
        pass
    try:
        for line in cpuinfo.read_text().splitlines():
            name, _, value = line.partition(":")
            if name.strip() in ("cpu MHz", "CPU MHz"):
                return float(value) * 1e6, "/proc/cpuinfo cpu MHz"
    except (OSError, ValueError):
        pass
    return FALLBACK_CLOCK_HZ, f"no clock from the OS: {FALLBACK_CLOCK_HZ / 1e9:.1f} GHz assumed"


def cpu_compute_peak(target, clock_hz: float) -> float:
    """float32 FLOP/s: lanes x (2 with FMA: a multiply and an add per lane) x FMA pipes per core
    x cores x clock."""
    return (target.lanes_of(4) * (2 if target.fma else 1) * FMA_PIPES.get(target.isa, 1)
            * target.cores * clock_hz)


def device_peak(name: str | None = None) -> Peak:
    spec = Device[name or Device.DEFAULT]
    if spec.name not in _PEAKS:
        _PEAKS[spec.name] = _find_peak(spec)
    return _PEAKS[spec.name]


def _find_peak(spec) -> Peak:
    family = spec.backend.peak   # the backend registry's row says how (engine/backends.py)
    compute, compute_from, declared = None, "not known for this device", None
    if family == "cpu" and not spec.render_only:
        compute, compute_from = _cpu_compute(spec)
    elif family == "cpu":
        clock, clock_from = cpu_clock_hz()
        compute = cpu_compute_peak(spec.target, clock)
        compute_from = _compute_words(spec.target, clock, clock_from)
    elif family == "opencl" and not spec.render_only:
        compute, compute_from = _cl_compute(spec)
    elif family == "cuda" and not spec.render_only:
        compute, compute_from, declared = _cuda_peak(spec)
    if spec.render_only:
        return Peak(spec.name, compute, None, compute_from, "render-only: nothing runs")
    if family is None:
        return Peak(spec.name, None, None, "not known for this device", "not measured here")
    if spec.target is not None:   # a CPU: a roof per level
        levels = [dict(_keep_best(spec, roof.level, roof.bytes_per_s, roof.how),
                       fits_bytes=roof.fits_bytes) for roof in memory_roofs(spec, steady_best)]
    else:
        value, how = _time_copy(spec, COPY_BYTES // 4, COPY_RUNS)
        levels = [dict(_keep_best(spec, "DRAM", value, how), fits_bytes=None)]
    levels = monotone(levels)
    how = levels[-1]["how"] + (f"; the memory bus declares {declared / 1e9:.0f} GB/s"
                               if declared is not None else "")
    return Peak(spec.name, compute, levels[-1]["bytes_per_s"], compute_from, how, levels)


def monotone(levels: list[dict]) -> list[dict]:
    """Each level's roof at least the next larger level's (what streams from DRAM streams from a
    cache at least as fast), so a roof kept from a quiet run never sits above a smaller level's."""
    for index in range(len(levels) - 2, -1, -1):
        larger = levels[index + 1]
        if levels[index]["bytes_per_s"] < larger["bytes_per_s"]:
            levels[index] = dict(levels[index], bytes_per_s=larger["bytes_per_s"],
                                 how=levels[index]["how"] + f"; raised to the {larger['level']} "
                                 "roof")
    return levels


def _compute_words(target, clock: float, clock_from: str) -> str:
    return (f"{target.lanes_of(4)} float32 lanes x {'2 (FMA)' if target.fma else '1 (no FMA)'}"
            f" x {FMA_PIPES.get(target.isa, 1)} pipes x {target.cores} cores x "
            f"{clock / 1e9:.2f} GHz ({clock_from})")


def _cpu_compute(spec) -> tuple[float, str]:
    """max(the theoretical peak at the real clock, numpy's matmul measured now)."""
    target = spec.target
    clock, clock_from = cpu_clock_hz()
    if clock_from != "cpufreq maximum":
        measured, how = _best_ever(spec, "clock", lambda: _fma_clock(spec))
        if measured > 0:
            clock, clock_from = measured, how
    theoretical = cpu_compute_peak(target, clock)
    words = _compute_words(target, clock, clock_from)
    numpy_rate = _numpy_matmul_rate()
    if numpy_rate > theoretical:
        return numpy_rate, (f"numpy's {MATMUL_SIZE}x{MATMUL_SIZE} matmul measured "
                            f"{numpy_rate / 1e9:.0f} GFLOPS here, above {words}")
    return theoretical, words + f"; numpy's matmul reached {numpy_rate / 1e9:.0f} GFLOPS"


def _cl_compute(spec) -> tuple[float, str]:
    _, device, _, _ = spec.runtime.open()
    units, clock = device.max_compute_units, device.max_clock_frequency * 1e6
    width = max(1, device.preferred_vector_width_float)
    return (units * clock * width * 2,
            f"{units} compute units x {clock / 1e9:.2f} GHz x {width} float lanes x 2 (FMA "
            "assumed), from the OpenCL device info")


def _cuda_peak(spec) -> tuple[float, str, float]:
    cuda, device, _ = spec.runtime.open()
    attribute = cuda.device_attribute
    sms = device.get_attribute(attribute.MULTIPROCESSOR_COUNT)
    clock = device.get_attribute(attribute.CLOCK_RATE) * 1e3                 # kHz
    memory_clock = device.get_attribute(attribute.MEMORY_CLOCK_RATE) * 1e3  # kHz
    bus_bytes = device.get_attribute(attribute.GLOBAL_MEMORY_BUS_WIDTH) / 8
    capability = device.compute_capability()
    cores = CUDA_CORES_PER_SM.get(capability, 128)
    return (sms * cores * 2 * clock,
            f"{sms} SMs x {cores} FP32 cores (sm_{capability[0]}{capability[1]}) x 2 (FMA) x "
            f"{clock / 1e9:.2f} GHz, from the CUDA device attributes",
            2 * memory_clock * bus_bytes)   # double data rate


def _best_ever(spec, level: str, measure) -> tuple[float, str]:
    """(value, how): `measure()` now, or the best this CPU ever reached if that is larger."""
    saved = _keep_best(spec, level, *measure())
    return saved["bytes_per_s"], saved["how"]


def _keep_best(spec, level: str, value: float, how: str) -> dict:
    """{"level", "bytes_per_s", "how"}: `value` measured now, compared with the best this CPU
    ever reached (kept on disk per device, target and level); the larger is kept, so a loaded
    run never lowers a roof. (For "clock" the value is Hz, kept the same way.)"""
    path = _cache_path(spec)
    saved = _read(path).get(level) if not config.DISABLE_CACHE.value else None
    if saved is not None and float(saved["value"]) > value:
        return {"level": level, "bytes_per_s": float(saved["value"]),
                "how": saved["how"] + " (best ever seen on this CPU)"}
    _write(path, level, value, how)
    return {"level": level, "bytes_per_s": value, "how": how}


def raise_roof(device: str, level: str, value: float, why: str) -> None:
    """A kernel ran above a roof: that roof ("compute", or a memory level: "L1" ... "DRAM")
    becomes what it reached, in this process and on disk; the smaller levels' roofs follow, so
    L1 >= L2 >= L3 >= DRAM holds. `why` names the kernel and the level its working set fits."""
    peak = device_peak(device)
    if level == "compute":
        if (peak.flops_per_s or 0) < value:
            peak.flops_per_s = value
            peak.raised.append(f"compute roof raised to {value / 1e9:.1f} GFLOPS: {why}")
        return
    row = next(r for r in peak.levels if r["level"] == level)
    if row["bytes_per_s"] >= value:
        return
    row.update(bytes_per_s=value, how=f"raised by a kernel: {why}")
    peak.levels[:] = monotone(peak.levels)
    peak.bytes_per_s = peak.levels[-1]["bytes_per_s"]
    peak.raised.append(f"{level} roof raised to {value / 1e9:.1f} GB/s: {why}")
    _write(_cache_path(Device[device]), level, value, f"raised by a kernel: {why}")


def _cache_path(spec) -> Path:
    # a CPU's roofs belong to the machine and its ISA, calibrated or not (one figure per roof)
    key = spec.target.machine_key if spec.target is not None else spec.runtime.describe()
    return (config.cache_dir() / "peak" /
            f"{spec.name}-{_safe(key)}-best-v{CACHE_VERSION}.json")


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _write(path: Path, level: str, value: float, how: str) -> None:
    if config.DISABLE_CACHE.value:
        return
    saved = _read(path)
    if level in saved and float(saved[level]["value"]) >= value:
        return
    saved[level] = {"value": value, "how": how}
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = path.with_suffix(f".{id(saved)}.part")
        partial.write_text(json.dumps(saved))
        partial.replace(path)
    except OSError:
        pass   # a read-only cache: measure again next process


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:80]


def _time_copy(spec, size: int, runs: int) -> tuple[float, str]:
    from ..schedule.schedule import schedule
    from .realize import compile_kernel
    allocator = spec.allocator
    source = Buffer(spec.name, size, dtypes.float32, allocator)
    source.copyin(_ones(size))
    leaf = ir.buffer(source, (size,), dtypes.float32, spec.name)
    # reversed, so the copy is a kernel (a plain contiguous() of a buffer is no work at all)
    item = schedule([ir.contiguous(leaf.flip((0,)))], realized={}).kernels[0]
    runner = compile_kernel(spec.name, item.ast)
    buffers = [Buffer(spec.name, size, dtypes.float32, allocator), source]
    best = steady_best(lambda: _timed(runner, buffers), runs)
    return (runner.bytes_moved / best,
            f"a generated copy kernel ({runner.bytes_moved / 2**20:.0f} MiB read + written), "
            f"best of {runs}, measured {time.strftime('%Y-%m-%d')}")


def _timed(runner, buffers) -> float:
    start = time.perf_counter()
    seconds = runner(buffers)
    return seconds or (time.perf_counter() - start)


def steady_best(once, runs: int, rounds: int = STEADY_ROUNDS) -> float:
    """The shortest of `once()`'s times, taken in rounds of `runs` until a round no longer beats
    the best by STEADY_GAIN (at most `rounds` rounds): a roof first measured while another
    process held the cores would otherwise stay low until a quieter run raised it."""
    best = min(once() for _ in range(runs))
    for _ in range(rounds - 1):
        this = min(once() for _ in range(runs))
        if this > best * (1 - STEADY_GAIN):
            return min(best, this)
        best = this
    return best


def _numpy_matmul_rate() -> float:
    import numpy as np
    a = np.random.default_rng(0).random((MATMUL_SIZE, MATMUL_SIZE), dtype=np.float32)
    best = float("inf")
    for _ in range(4):
        start = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - start)
    return 2 * MATMUL_SIZE ** 3 / best


FMA_KERNEL = """typedef float tl_vec __attribute__((vector_size({bytes})));
void tl_fma_clock(float* out, float* seed) {{
  tl_vec m = {{0}}, c = {{0}};
  for (int i = 0; i < {lanes}; i++) {{ m[i] = seed[0]; c[i] = seed[1]; }}
{declare}
  for (long n = 0; n < {iterations}; n++) {{
{body}
  }}
  tl_vec total = {sum};
  for (int i = 0; i < {lanes}; i++) out[0] += total[i];
}}
"""


def _fma_clock(spec) -> tuple[float, str]:
    """The clock one core runs vector FMAs at: chains = half the vector registers, each an FMA
    per iteration; clock = FMAs per second / (FMA pipes per core)."""
    import numpy as np
    target = spec.target
    chains, lanes = max(2, target.vector_registers // 2), target.lanes_of(4)
    source = FMA_KERNEL.format(
        bytes=lanes * 4, lanes=lanes, iterations=FMA_ITERATIONS,
        declare="\n".join(f"  tl_vec a{i} = c * {i + 1}.0f;" for i in range(chains)),
        body="\n".join(f"    a{i} = a{i} * m + c;" for i in range(chains)),
        sum=" + ".join(f"a{i}" for i in range(chains)))
    try:
        library, _ = spec.runtime.compile(source)
        program = spec.runtime.load(library, "tl_fma_clock")
    except Exception:   # no compiler that takes vector extensions: the OS's figure stands
        return 0.0, "FMA kernel did not compile"
    out, seed = np.zeros(1, dtype=np.float32), np.array([0.999, 0.001], dtype=np.float32)
    best = min(program(out, seed) for _ in range(5))
    fmas = chains * FMA_ITERATIONS / best
    clock = fmas / max(1, FMA_PIPES.get(target.isa, 1))
    return clock, (f"measured: {chains} chains of {lanes}-lane FMAs on one core, "
                   f"{fmas / 1e9:.2f} G vector FMA/s over {FMA_PIPES.get(target.isa, 1)} pipes")


def _ones(size: int):
    import numpy as np
    return np.ones(size, dtype=np.float32)
