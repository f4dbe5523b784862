"""matmul N×N fp32: tinylab's generated kernel beside numpy (OpenBLAS) and PyTorch."""
from __future__ import annotations

import numpy as np

from bench.common import Row, median_times, optional_torch
from tinylab import Tensor, TinyJit


def run(n: int, runs: int = 5) -> Row:
    rng = np.random.default_rng(0)
    a_np = rng.random((n, n), dtype=np.float32)
    b_np = rng.random((n, n), dtype=np.float32)
    a, b = Tensor(a_np).realize(), Tensor(b_np).realize()
    step = TinyJit(lambda a, b: (a @ b).realize())  # a replay runs the kernel every time
    flops = 2 * n ** 3
    fns = {"tinylab": lambda: step(a, b), "numpy": lambda: a_np @ b_np}
    torch = optional_torch()
    if torch is not None:
        at, bt = torch.from_numpy(a_np), torch.from_numpy(b_np)
        fns["torch"] = lambda: at @ bt
    values = {name: flops / seconds / 1e9
              for name, seconds in median_times(fns, runs, warmup=3).items()}
    target = "≥ 0.9× numpy"  # issue 30: both sizes, on the default path (no TUNE)
    return Row(f"matmul {n}x{n} fp32", "GFLOPS", values, target,
               values["tinylab"] / values["numpy"], "numpy")
