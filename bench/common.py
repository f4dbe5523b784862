"""Timing helpers shared by the benchmarks: median wall time of several runs after warm-up, and
the row format the table and the JSON file use. Machines are shared and noisy: report medians
and ratios measured in the same run, never a lone absolute time."""
from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, field


def median_time(fn, runs: int = 5, warmup: int = 2) -> float:
    """Median seconds of fn() over `runs` calls after `warmup` calls."""
    for _ in range(warmup):
        fn()
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
