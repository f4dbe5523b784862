"""Per-example gradients of a small MLP (64 examples, 32 -> 64 -> 10): tinylab.func's
vmap(grad(loss)) as one batched graph, beside a Python loop of grad calls and torch.func's
vmap(grad). Reported as ms per batch of per-example gradients (lower is better)."""
from __future__ import annotations

import numpy as np

from bench.common import Row, median_times, optional_torch
from tinylab import Tensor
from tinylab import func


def loss(params, x, y):
    hidden = (x @ params[0] + params[1]).relu()
    return ((hidden @ params[2] - y) ** 2).mean()


def run(batch: int = 64, runs: int = 5) -> Row:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((32, 64)).astype(np.float32) * 0.2,
              np.zeros(64, np.float32), rng.standard_normal((64, 10)).astype(np.float32) * 0.2]
    x_np = rng.standard_normal((batch, 32)).astype(np.float32)
    y_np = rng.standard_normal((batch, 10)).astype(np.float32)
    params = [Tensor(a).realize() for a in arrays]
    x, y = Tensor(x_np).realize(), Tensor(y_np).realize()
    mapped = func.vmap(func.grad(loss), in_dims=(None, 0, 0))

    def loop():
        grads = [func.grad(loss)(params, x[i], y[i]) for i in range(batch)]
        Tensor.realize(*[g for example in grads for g in example])
    fns = {"vmap(grad)": lambda: Tensor.realize(*mapped(params, x, y)), "loop": loop}
    torch = optional_torch()
    if torch is not None:
        torch_params = [torch.from_numpy(a) for a in arrays]
        torch_mapped = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))
        xt, yt = torch.from_numpy(x_np), torch.from_numpy(y_np)
        fns["torch.func"] = lambda: torch_mapped(torch_params, xt, yt)
    values = {name: seconds * 1e3 for name, seconds in median_times(fns, runs).items()}
    reference = "torch.func" if "torch.func" in values else "loop"
    return Row(f"per-example grads MLP b{batch}", "ms/batch", values,
               "vmap(grad) beats the loop", values[reference] / values["vmap(grad)"], reference,
               notes=[f"loop / vmap(grad): {values['loop'] / values['vmap(grad)']:.1f}x"])
