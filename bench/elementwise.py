"""The fused chain ((a+b)*2).exp() on 16M floats: one tinylab kernel beside numpy's three passes
(and PyTorch). Reported as GB/s equivalent (3 arrays of 4-byte floats per element)."""
from __future__ import annotations

import numpy as np

from bench.common import Row, median_times, optional_torch
from tinylab import Tensor, TinyJit


def run(n: int = 1 << 24, runs: int = 5) -> Row:
    rng = np.random.default_rng(0)
    a_np = rng.random(n, dtype=np.float32)
    b_np = rng.random(n, dtype=np.float32)
    a, b = Tensor(a_np).realize(), Tensor(b_np).realize()
    step = TinyJit(lambda a, b: ((a + b) * 2).exp().realize())
    moved = 3 * 4 * n
    fns = {"tinylab": lambda: step(a, b), "numpy": lambda: np.exp((a_np + b_np) * 2)}
    torch = optional_torch()
    if torch is not None:
        at, bt = torch.from_numpy(a_np), torch.from_numpy(b_np)
        fns["torch"] = lambda: ((at + bt) * 2).exp()
    values = {name: moved / seconds / 1e9
              for name, seconds in median_times(fns, runs, warmup=3).items()}
    return Row("((a+b)*2).exp() 16M fp32", "GB/s eq.", values, "≥ 2× numpy",
               values["tinylab"] / values["numpy"], "numpy")
