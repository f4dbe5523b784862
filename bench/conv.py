"""Each conv layer of the beautiful_mnist CNN at batch 512: forward, and backward (input and
weight gradients together), tinylab under TinyJit beside PyTorch, their runs interleaved.
PyTorch's backward runs its forward too (autograd keeps what the gradients need); tinylab's
gradients of a conv need no forward values and skip it."""
from __future__ import annotations

import numpy as np

from bench.common import Row, median_times, optional_torch
from tinylab import Tensor, TinyJit

# (name, in channels, out channels, kernel, input size) as the CNN sees them
LAYERS = [("conv1 1->32 5x5 @28", 1, 32, 5, 28), ("conv2 32->32 5x5 @24", 32, 32, 5, 24),
          ("conv3 32->64 3x3 @10", 32, 64, 3, 10), ("conv4 64->64 3x3 @8", 64, 64, 3, 8)]


def _tinylab_fns(x_np, w_np, g_np):
    x, w, g = Tensor(x_np).realize(), Tensor(w_np).realize(), Tensor(g_np).realize()
    forward = TinyJit(lambda x, w: x.conv2d(w).realize())
    backward = TinyJit(lambda x, w, g: Tensor.realize(*(x.conv2d(w) * g).sum().gradient(x, w)))
    return (lambda: forward(x, w)), (lambda: backward(x, w, g))


def _torch_fns(torch, x_np, w_np, g_np):
    x = torch.from_numpy(x_np).requires_grad_()
    w = torch.from_numpy(w_np).requires_grad_()
    g = torch.from_numpy(g_np)
    conv = torch.nn.functional.conv2d

    def forward():
        with torch.no_grad():
            conv(x, w)

    def backward():
        x.grad = w.grad = None
        (conv(x, w) * g).sum().backward()

    return forward, backward


def run(batch: int = 512, runs: int = 5) -> list[Row]:
    """Each direction's runs interleaved with PyTorch's (bench.common.median_times)."""
    rng = np.random.default_rng(0)
    torch = optional_torch()
    rows = []
    for name, cin, cout, k, size in LAYERS:
        x_np = rng.standard_normal((batch, cin, size, size), dtype=np.float32)
        w_np = rng.standard_normal((cout, cin, k, k), dtype=np.float32) * 0.1
        g_np = rng.standard_normal((batch, cout, size - k + 1, size - k + 1), dtype=np.float32)
        ours = _tinylab_fns(x_np, w_np, g_np)
        theirs = _torch_fns(torch, x_np, w_np, g_np) if torch is not None else None
        for label, index in (("forward", 0), ("backward", 1)):
            fns = {"tinylab": ours[index]}
            if theirs is not None:
                fns["torch"] = theirs[index]
            values = {name: seconds * 1e3
                      for name, seconds in median_times(fns, runs, warmup=3).items()}
            ratio = values["torch"] / values["tinylab"] if "torch" in values else None
            target = "reported against torch" if name.startswith("conv1") else \
                "≤ 1.0× torch's time (ratio ≥ 1)"  # issue 30's bar for conv2, conv3, conv4
            rows.append(Row(f"{name} {label} b{batch}", "ms", values, target, ratio, "torch"))
    return rows
