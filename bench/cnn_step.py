"""The beautiful_mnist train step at batch 512 under TinyJit, beside the same model and Adam in
PyTorch; and TinyJit's replay cost per kernel for a step of 50 tiny kernels."""
from __future__ import annotations

import time

import numpy as np

from bench.common import Row, median_times, optional_torch
from bench.demo import torch_cnn
from tinylab import Context, Tensor, TinyJit, nn
from tinylab.examples.beautiful_mnist import Model


def _tinylab_step(batch: int):
    Tensor.manual_seed(0)
    model = Model()
    optimizer = nn.optim.Adam(nn.state.get_parameters(model))

    @TinyJit
    @Tensor.train()
    def step(images, labels):
        optimizer.zero_grad()
        loss = model(images).sparse_categorical_crossentropy(labels).backward()
        optimizer.step()
        return loss

    rng = np.random.default_rng(0)
    images = Tensor(rng.random((batch, 1, 28, 28), dtype=np.float32)).realize()
    labels = Tensor(rng.integers(0, 10, batch).astype(np.int32)).realize()
    return (lambda: step(images, labels).item()), step


def _torch_step(torch, batch: int):
    nn_ = torch.nn
    model = torch_cnn(torch)
    optimizer = torch.optim.Adam(model.parameters())
    rng = np.random.default_rng(0)
    images = torch.from_numpy(rng.random((batch, 1, 28, 28), dtype=np.float32))
    labels = torch.from_numpy(rng.integers(0, 10, batch))

    def step():
        optimizer.zero_grad()
        loss = nn_.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss.item()
    return step


def _plain(batch: int):
    """The same step with RELAYOUT=0 (no operand relayout, schedule/relayout.py), measured
    beside: what the rewrite is worth."""
    with Context(RELAYOUT=0):
        ours, step = _tinylab_step(batch)

    def run():
        with Context(RELAYOUT=0):
            return ours()
    return run, step


def run(batch: int = 512, runs: int = 5) -> list[Row]:
    ours, step = _tinylab_step(batch)
    plain, plain_step = _plain(batch)
    fns = {"tinylab": ours, "RELAYOUT=0": plain}
    torch = optional_torch()
    if torch is not None:
        fns["torch"] = _torch_step(torch, batch)
    values = median_times(fns, runs, warmup=3)  # steps interleaved: noise hits both alike
    ratio = values["torch"] / values["tinylab"] if "torch" in values else None
    notes = [f"{step.kernel_count} kernels per step, memory planner saved "
             f"{step.bytes_saved / 2**20:.1f} MiB; RELAYOUT=0: {plain_step.kernel_count} kernels"
             + (f", {values['torch'] / values['RELAYOUT=0']:.2f}x torch" if "torch" in values
                else "")]
    return [Row(f"beautiful_mnist train step b{batch}", "s/step", values,
                "≤ 1.15× torch's time (ratio ≥ 0.87)", ratio, "torch", notes), jit_overhead()]


def jit_overhead(kernels: int = 50, runs: int = 200) -> Row:
    """Replay cost of a step of `kernels` one-element kernels: an upper bound on TinyJit's cost per
    kernel beyond the kernel itself (each kernel does almost nothing)."""
    @TinyJit
    def step(x):
        for _ in range(kernels):
            x = (x + 1).contiguous()
        return x.realize()

    x = Tensor([0.0]).realize()
    for _ in range(3):
        step(x)
    start = time.perf_counter()
    for _ in range(runs):
        step(x)
    per_kernel = (time.perf_counter() - start) / runs / step.kernel_count
    return Row(f"TinyJit replay, {step.kernel_count} tiny kernels", "µs/kernel",
               {"tinylab": per_kernel * 1e6}, "≤ 20 µs per kernel beyond kernel time")
