"""Backend against backend: the same workloads on two devices (default CL vs CPU), median of
several runs after warm-up, printed as time ratios. `python -m bench.backends [--devices CL,CPU]
[--runs 7] [--quick]`; bench/run.py can call `main([...])` or `compare(...)` for the rows.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from tinylab import Context, Device, GlobalCounters, Tensor


def workloads(quick: bool = False) -> dict:
    """name -> (input shapes, function of the inputs, FLOPs); `quick` shrinks every size."""
    n, m, batch = (512, 128, 1) if quick else (2048, 512, 8)
    return {
        f"elementwise ((a+b)*2).exp() {n}^2": ([(n, n)] * 2, lambda a, b: ((a + b) * 2).exp(),
                                              3 * n * n),
        f"row sum {n}^2": ([(n, n)], lambda x: x.sum(1), n * n),
        f"full sum {n * n}": ([(n * n,)], lambda x: x.sum(), n * n),
        f"softmax {n // 2}^2": ([(n // 2, n // 2)], lambda x: x.softmax(1), 5 * (n // 2) ** 2),
        f"matmul {m}": ([(m, m), (m, m)], lambda a, b: a @ b, 2 * m ** 3),
        f"conv2d 16->32 3x3 32x32, batch {batch}": (
            [(batch, 16, 32, 32), (32, 16, 3, 3)], lambda x, w: x.conv2d(w, padding=1),
            2 * batch * 32 * 32 * 32 * 16 * 9),
    }


def measure(device: str, shapes, f, runs: int) -> tuple[float, float]:
    """(median wall seconds per call, median kernel seconds per call) on `device`."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    walls, kernels = [], []
    with Context(DEV=device):
        for run in range(runs + 2):  # 2 warm-up calls compile and load the kernels
            # fresh input buffers: the same expression on realized inputs is not recomputed
            inputs = [Tensor(a).realize() for a in arrays]
            GlobalCounters.reset()
            start = time.perf_counter()
            f(*inputs).realize()
            if run >= 2:
                walls.append(time.perf_counter() - start)
                kernels.append(GlobalCounters.time_sum_s)
    return statistics.median(walls), statistics.median(kernels)


def compare(devices=("CL", "CPU"), runs: int = 7, quick: bool = False) -> list[dict]:
    """One row per workload: {"workload", "flops", device: (wall s, kernel s) per device}."""
    rows = []
    for name, (shapes, f, flops) in workloads(quick).items():
        row = {"workload": name, "flops": flops}
        for device in devices:
            row[device] = measure(device, shapes, f, runs)
        rows.append(row)
    return rows


def as_rows(devices=("WEBGPU", "CPU"), runs: int = 5, quick: bool = False) -> list:
    """compare() as bench/run.py's Rows: wall ms per device, ratio = second / first device's
    wall time (above 1: the first device is faster). Empty when the first cannot run here."""
    from bench.common import Row
    first, second = devices
    if not Device[first].available:
        return []
    out = []
    for row in compare(devices, runs, quick):
        (wall_a, _), (wall_b, _) = row[first], row[second]
        out.append(Row(f"{first} vs {second}: {row['workload']}", "ms",
                       {first: wall_a * 1e3, second: wall_b * 1e3}, ratio=wall_b / wall_a,
                       reference=second, notes=[Device[first].describe()]))
    return out


def _print(rows, devices) -> None:
    first, second = devices
    print(f"{'workload':<38} {first + ' ms':>10} {second + ' ms':>10} {'wall ratio':>11} "
          f"{'kernel ratio':>13} {first + ' GFLOPS':>12}")
    for row in rows:
        (wall_a, kern_a), (wall_b, kern_b) = row[first], row[second]
        gflops = row["flops"] / kern_a / 1e9 if kern_a else 0.0
        print(f"{row['workload']:<38} {wall_a * 1e3:10.2f} {wall_b * 1e3:10.2f} "
              f"{wall_a / wall_b:10.2f}x {kern_a / kern_b if kern_b else 0:12.2f}x {gflops:12.2f}")
    print(f"ratio = {first} time / {second} time (below 1: {first} is faster); "
          f"median of runs after 2 warm-up calls")


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default="CL,CPU", help="two devices, e.g. CUDA,CPU")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    args = parser.parse_args(argv)
    devices = tuple(d.strip().upper() for d in args.devices.split(","))
    for device in devices:
        Device[device].check()
    print("devices: " + "; ".join(f"{d} = {Device[d].describe()}" for d in devices))
    rows = compare(devices, args.runs, args.quick)
    _print(rows, devices)
    return rows


if __name__ == "__main__":
    main()
