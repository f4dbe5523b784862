"""A device's peak compute (FLOP/s) and memory bandwidth (bytes/s): the roof a kernel's measured
speed is compared with. `device_peak(name)` -> Peak, once per process per device.

CPU compute: float32 lanes of the target's vector width x 2 when it has FMA (a multiply and an
add) x the vector FMA pipes per core typical of the ISA (FMA_PIPES) x cores x clock. The clock
comes from the OS (cpufreq's maximum, else /proc/cpuinfo's "cpu MHz"), else FALLBACK_CLOCK_HZ.
CL: the device's compute units x clock x preferred float vector width x 2 (FMA assumed). CUDA:
SMs x FP32 cores per SM (by compute capability, documented table) x 2 x clock. Bandwidth: a
generated copy kernel (in reverse order: a plain contiguous() of a buffer is no kernel) is timed
once, best of COPY_RUNS, and cached on disk beside the compile cache; CUDA also declares the
bandwidth of its memory bus. Used by inspection/roofline.py and the training monitor.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import config
from ..dtype import dtypes
from ..ir import node as ir
from ..runtimes.buffer import Buffer
from .devices import Device

FALLBACK_CLOCK_HZ = 3.0e9     # no clock from the OS: a typical desktop / server boost clock
COPY_BYTES = 1 << 26          # the copy kernel moves 64 MiB each way: larger than any L3 here
COPY_RUNS = 5
CUDA_CORES_PER_SM = {(6, 0): 64, (6, 1): 128, (7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128,
                     (8, 9): 128, (9, 0): 128}   # NVIDIA's CUDA C programming guide, table 21
# vector FMA (or multiply + add) pipes per core, typical of the CPUs each ISA preset stands for:
# Haswell..Alder Lake, Zen 2-4 and AVX-512 Xeons (Skylake-SP Gold/Platinum, Ice Lake-SP,
# Sapphire Rapids) issue two vector FMAs a cycle; Graviton 2/3 two NEON FMAs; SSE-era cores one
FMA_PIPES = {"avx512": 2, "avx2": 2, "avx": 1, "sse4": 1, "sse2": 1, "neon": 2, "generic": 1}
_PEAKS: dict = {}


@dataclass(frozen=True)
class Peak:
    device: str
    flops_per_s: float | None     # None: not known for this device
    bytes_per_s: float | None
    compute_from: str             # how the compute roof was found, in words
    bandwidth_from: str

    def as_dict(self) -> dict:
        return asdict(self)


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
    compute, compute_from, declared = None, "not known for this device", None
    if spec.target is not None:
        clock, clock_from = cpu_clock_hz()
        compute = cpu_compute_peak(spec.target, clock)
        compute_from = (f"{spec.target.lanes_of(4)} float32 lanes x "
                        f"{'2 (FMA)' if spec.target.fma else '1 (no FMA)'} x "
                        f"{FMA_PIPES.get(spec.target.isa, 1)} pipes x "
                        f"{spec.target.cores} cores x {clock / 1e9:.2f} GHz ({clock_from})")
    elif spec.name == "CL" and not spec.render_only:
        compute, compute_from = _cl_compute(spec)
    elif spec.name == "CUDA" and not spec.render_only:
        compute, compute_from, declared = _cuda_peak(spec)
    if spec.render_only:
        return Peak(spec.name, compute, None, compute_from, "render-only: nothing runs")
    if spec.target is None and spec.name not in ("CL", "CUDA"):
        return Peak(spec.name, None, None, "not known for this device", "not measured here")
    bandwidth, bandwidth_from = measured_bandwidth(spec)
    if declared is not None:
        bandwidth_from += f"; the memory bus declares {declared / 1e9:.0f} GB/s"
    return Peak(spec.name, compute, bandwidth, compute_from, bandwidth_from)


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


def measured_bandwidth(spec) -> tuple[float, str]:
    """Bytes/s of a generated copy kernel (read + write), cached on disk per device."""
    key = spec.target.key if spec.target is not None else spec.runtime.describe()  # CL, CUDA
    path = config.cache_dir() / "peak" / f"{spec.name}-{_safe(key)}.json"
    use_cache = not config.DISABLE_CACHE.value
    if use_cache and path.exists():
        try:
            saved = json.loads(path.read_text())
            return float(saved["bytes_per_s"]), saved["how"]
        except (OSError, ValueError, KeyError):
            pass
    bytes_per_s, how = _time_copy(spec)
    if use_cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            path.write_text(json.dumps({"bytes_per_s": bytes_per_s, "how": how}))
        except OSError:
            pass   # a read-only cache: measure again next process
    return bytes_per_s, how


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:80]


def _time_copy(spec) -> tuple[float, str]:
    from ..schedule.schedule import schedule
    from .realize import compile_kernel
    size = COPY_BYTES // 4
    allocator = spec.allocator
    source = Buffer(spec.name, size, dtypes.float32, allocator)
    source.copyin(_ones(size))
    leaf = ir.buffer(source, (size,), dtypes.float32, spec.name)
    # reversed, so the copy is a kernel (a plain contiguous() of a buffer is no work at all)
    item = schedule([ir.contiguous(leaf.flip((0,)))], realized={}).kernels[0]
    runner = compile_kernel(spec.name, item.ast)
    buffers = [Buffer(spec.name, size, dtypes.float32, allocator), source]
    best = min(_timed(runner, buffers) for _ in range(COPY_RUNS))
    return (runner.bytes_moved / best,
            f"a generated copy kernel ({runner.bytes_moved / 2**20:.0f} MiB read + written), "
            f"best of {COPY_RUNS}, measured {time.strftime('%Y-%m-%d')}")


def _timed(runner, buffers) -> float:
    start = time.perf_counter()
    seconds = runner(buffers)
    return seconds or (time.perf_counter() - start)


def _ones(size: int):
    import numpy as np
    return np.ones(size, dtype=np.float32)
