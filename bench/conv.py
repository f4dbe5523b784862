"""Each conv layer of the beautiful_mnist CNN at batch 512: forward, and backward (input and
weight gradients together), tinylab under TinyJit beside PyTorch."""
from __future__ import annotations

import numpy as np

from bench.common import Row, median_time, optional_torch
from tinylab import Tensor, TinyJit

# (name, in channels, out channels, kernel, input size) as the CNN sees them
LAYERS = [("conv1 1->32 5x5 @28", 1, 32, 5, 28), ("conv2 32->32 5x5 @24", 32, 32, 5, 24),
          ("conv3 32->64 3x3 @10", 32, 64, 3, 10), ("conv4 64->64 3x3 @8", 64, 64, 3, 8)]


def _tinylab_times(x_np, w_np, g_np, runs):
    x, w, g = Tensor(x_np).realize(), Tensor(w_np).realize(), Tensor(g_np).realize()
    forward = TinyJit(lambda x, w: x.conv2d(w).realize())
    backward = TinyJit(lambda x, w, g: Tensor.realize(*(x.conv2d(w) * g).sum().gradient(x, w)))
    return (median_time(lambda: forward(x, w), runs, warmup=3),
            median_time(lambda: backward(x, w, g), runs, warmup=3))


def _torch_times(torch, x_np, w_np, g_np, runs):
    x = torch.from_numpy(x_np).requires_grad_()
    w = torch.from_numpy(w_np).requires_grad_()
    g = torch.from_numpy(g_np)
    conv = torch.nn.functional.conv2d

    def backward():
        x.grad = w.grad = None
        (conv(x, w) * g).sum().backward()

    with torch.no_grad():
        fwd = median_time(lambda: conv(x, w), runs)
    return fwd, median_time(backward, runs)


def run(batch: int = 512, runs: int = 5) -> list[Row]:
    rng = np.random.default_rng(0)
    torch = optional_torch()
    rows = []
    for name, cin, cout, k, size in LAYERS:
        x_np = rng.standard_normal((batch, cin, size, size), dtype=np.float32)
        w_np = rng.standard_normal((cout, cin, k, k), dtype=np.float32) * 0.1
        g_np = rng.standard_normal((batch, cout, size - k + 1, size - k + 1), dtype=np.float32)
        ours = _tinylab_times(x_np, w_np, g_np, runs)
        for label, index in (("forward", 0), ("backward", 1)):
            values = {"tinylab": ours[index] * 1e3}
            ratio = None
            if torch is not None:
                theirs = _torch_times(torch, x_np, w_np, g_np, runs)
                values["torch"] = theirs[index] * 1e3
                ratio = values["torch"] / values["tinylab"]
            target = "≤ 1.0× torch's time (ratio ≥ 1)" if name.startswith("conv2") else \
                "reported against torch"  # issue 30 sets a bar for conv2 only
            rows.append(Row(f"{name} {label} b{batch}", "ms", values, target, ratio, "torch"))
    return rows
