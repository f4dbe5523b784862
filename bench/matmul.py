"""matmul N×N fp32: tinylab's generated kernel beside numpy (OpenBLAS) and PyTorch."""
from __future__ import annotations

import numpy as np

from bench.common import Row, median_time, optional_torch
from tinylab import Tensor, TinyJit


def run(n: int, runs: int = 5) -> Row:
    rng = np.random.default_rng(0)
    a_np = rng.random((n, n), dtype=np.float32)
    b_np = rng.random((n, n), dtype=np.float32)
    a, b = Tensor(a_np).realize(), Tensor(b_np).realize()
    step = TinyJit(lambda a, b: (a @ b).realize())  # a replay runs the kernel every time
    flops = 2 * n ** 3
    values = {"tinylab": flops / median_time(lambda: step(a, b), runs, warmup=3) / 1e9,
              "numpy": flops / median_time(lambda: a_np @ b_np, runs) / 1e9}
    torch = optional_torch()
    if torch is not None:
        at, bt = torch.from_numpy(a_np), torch.from_numpy(b_np)
        values["torch"] = flops / median_time(lambda: at @ bt, runs) / 1e9
    target = "≥ 0.8× numpy" if n == 1024 else "≥ 0.7× numpy"
    return Row(f"matmul {n}x{n} fp32", "GFLOPS", values, target,
               values["tinylab"] / values["numpy"], "numpy")
