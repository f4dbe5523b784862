"""What tracing costs: the beautiful_mnist train step without TinyJit (so every realize runs
through the engine, where the Trace records), untraced and inside `tinylab.trace()`, interleaved
in one process. Issue 17: tracing must not slow an untraced step and may add at most 2x to a
traced one. `python -m bench.trace_overhead [--batch 64] [--runs 5]`; also a `make bench` suite.
"""
from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

import tinylab
from bench.common import Row, cpu_description, median_times
from tinylab import Tensor, nn
from tinylab.examples.beautiful_mnist import Model
from tinylab.inspection import build_model


def plain_step(batch: int):
    """One Adam step of the demo's CNN on random data, no TinyJit; returns the step function."""
    Tensor.manual_seed(0)
    model = Model()
    optimizer = nn.optim.Adam(nn.state.get_parameters(model))
    rng = np.random.default_rng(0)
    images = Tensor(rng.random((batch, 1, 28, 28), dtype=np.float32)).realize()
    labels = Tensor(rng.integers(0, 10, batch).astype(np.int32)).realize()

    @Tensor.train()
    def step():
        optimizer.zero_grad()
        loss = model(images).sparse_categorical_crossentropy(labels).backward()
        optimizer.step()
        return loss.item()
    return step


def run(batch: int = 64, runs: int = 5) -> list[Row]:
    step = plain_step(batch)
    kept = []

    def traced():
        with tinylab.trace() as recorded:
            step()
        kept[:] = [recorded]

    values = median_times({"untraced": step, "traced": traced}, runs, warmup=2)
    start = time.perf_counter()
    model = build_model(kept[0], backends=("CL", "CUDA"))
    shown = time.perf_counter() - start
    notes = [f"{len(kept[0].kernels)} kernels recorded per traced step; building the inspector's "
             f"model (line maps, passes, C/OpenCL/CUDA) afterwards took {shown:.2f} s for "
             f"{len(model['programs'])} distinct kernels (not part of the step)"]
    return [Row(f"beautiful_mnist step b{batch}, no TinyJit: traced", "s/step", values,
                "traced ≤ 2× untraced (ratio ≥ 0.5)", values["untraced"] / values["traced"],
                "untraced", notes)]


def many_kernels_html(kernels: int = 10_000) -> Row:
    """A trace of `kernels` launches (a few distinct small kernels, realized one at a time): the
    seconds and peak Python memory (tracemalloc) of `to_html` on it. Issue 28: within 2x of the
    tree before compile records (run this file from both trees to compare)."""
    from tinylab.inspection import to_html
    x = Tensor(np.arange(64, dtype=np.float32)).realize()
    with tinylab.trace() as recorded:
        for i in range(kernels // 2):
            ((x + (i % 5)) * 2).realize()
            (x * x).sum().realize()
    start = time.perf_counter()
    tracemalloc.start()
    page = to_html(recorded)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    seconds = time.perf_counter() - start
    return Row(f"to_html of a trace of {len(recorded.kernels)} kernels", "s / MiB",
               {"seconds": seconds, "peak_mib": peak / 2**20}, "within 2x of the tree before "
               "compile records", None, "", [f"{len(page) / 2**20:.1f} MiB of HTML"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--html-kernels", type=int, default=0,
                        help="only time to_html of a trace of this many kernels (issue 28)")
    args = parser.parse_args()
    if args.html_kernels:
        row = many_kernels_html(args.html_kernels)
        print(f"{row.workload}: {row.values['seconds']:.2f} s, peak {row.values['peak_mib']:.1f}"
              f" MiB traced ({row.notes[0]})")
        return
    cpu = cpu_description()
    print(f"CPU: {cpu['model']} ({cpu['cores']} cores usable)")
    for row in run(args.batch, args.runs):
        values = ", ".join(f"{k} {v:.4f}" for k, v in row.values.items())
        print(f"{row.workload}: {values} {row.metric}; untraced/traced {row.ratio:.2f}")
        for note in row.notes:
            print("  " + note)


if __name__ == "__main__":
    main()
