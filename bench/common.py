"""Timing helpers shared by the benchmarks: median wall time of several runs after warm-up, and
the row format the table and the JSON file use. Machines are shared and noisy: report medians
and ratios measured in the same run, never a lone absolute time."""
from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field


def full_builds() -> None:
    """Wait for tinylab's background full builds (engine/build_tiers.py): until they are swapped
    in, a big first batch runs its quick -O1 build and the compiler shares the cores."""
    tiers = sys.modules.get("tinylab.engine.build_tiers")
    if tiers is not None:
        tiers.wait()


def median_time(fn, runs: int = 5, warmup: int = 2) -> float:
    """Median seconds of fn() over `runs` calls after `warmup` calls (and the full builds)."""
    for _ in range(warmup):
        fn()
    full_builds()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# pause before each timed run: thread pools (OpenBLAS's, PyTorch's OpenMP, ours) keep spinning
# for a while after a call, and would take the cores from whichever contender runs next
SETTLE = 0.3


def median_times(fns: dict, runs: int = 5, warmup: int = 2) -> dict:
    """Median seconds of each fn, their runs interleaved (a, b, c, a, b, c, ...) so that a burst
    of load from other processes on a shared machine hits every contender alike."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    full_builds()
    times: dict = {name: [] for name in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            time.sleep(SETTLE)
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


@dataclass
class Row:
    workload: str
    metric: str                 # what `values` hold, e.g. "GFLOPS" or "ms/step"
    values: dict                # implementation -> number
    target: str = ""            # the target, in words
    ratio: float | None = None  # tinylab relative to the reference (higher is better)
    reference: str = ""
    notes: list = field(default_factory=list)
    cpu: dict = field(default_factory=dict)  # cpu_description() of the machine it ran on

    def as_dict(self) -> dict:
        return asdict(self)


def optional_torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


def optional_tinygrad():
    try:
        import tinygrad
        return tinygrad
    except ImportError:
        return None


def lscpu() -> dict:
    """`lscpu`'s fields (Model name, Flags, L2 cache...), {} where it is missing."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return {key.strip(): value.strip() for key, _, value in
            (line.partition(":") for line in out.splitlines()) if value}


SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_fp16",
              "amx_tile", "asimd", "sve")


def reference_isa() -> dict:
    """What the references were held to (bench/__init__.py, under a CPU_TARGET preset) and the
    ISA PyTorch reports it dispatches to."""
    from bench import REFERENCE_ISA
    out = dict(REFERENCE_ISA)
    torch = optional_torch()
    if torch is not None:
        out["torch capability"] = torch.backends.cpu.get_cpu_capability()
    return out


def cpu_description() -> dict:
    """The CPU every figure was measured on (lscpu's model and SIMD flags) and the CPU target
    the planner uses (tinylab.target.cpu_target where this tree has it)."""
    info = lscpu()
    flags = set(info.get("Flags", "").split())
    model = info.get("Model name") or platform.processor() or platform.machine()
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    family = f"family {info.get('CPU family', '?')} model {info.get('Model', '?')}"
    described = {"model": f"{model}, {family}", "isa": [f for f in SIMD_FLAGS if f in flags], "cores": cores,
                 "l1d": info.get("L1d cache", ""), "l2": info.get("L2 cache", ""),
                 "l3": info.get("L3 cache", ""), "references": reference_isa()}
    try:
        from tinylab.target.cpu_target import current_target
    except ImportError:  # a tree without the CPU target: what lscpu says is all there is
        described["target"] = f"(no CPU target in this tree) lscpu ISA: {' '.join(described['isa'])}"
        return described
    target = current_target()
    try:  # the CPU device's target: the one it runs, with its calibration
        from tinylab import Device
        target = Device["CPU"].target
    except Exception:  # noqa: BLE001 - a tree or a machine without it: the planner's
        pass
    described["target"] = target.describe()
    described["target_fields"] = target.as_dict()
    return described
