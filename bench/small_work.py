"""Small work is cheap (issue 30 item 7): per-call costs of a learner's small cells beside
PyTorch in the same process. A small graph seen before (its schedule and kernels cached) must
realize in ≤ 0.2 ms; the jitted MLP eval step (64×784 -> 128 -> 10, argmax) in ≤ 1 ms.
`python -m bench.small_work [--calls 200]`; also a `make bench` suite ("small").
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from bench.common import Row, cpu_description
from tinylab import Tensor, TinyJit, nn


def per_call(fn, calls: int) -> float:
    """Median milliseconds of one call, over batches of ten after a warm-up."""
    for _ in range(5):
        fn()
    batches = []
    for _ in range(max(1, calls // 10)):
        start = time.perf_counter()
        for _ in range(10):
            fn()
        batches.append((time.perf_counter() - start) / 10)
    return statistics.median(batches) * 1e3


class MLP:
    def __init__(self):
        self.l1, self.l2 = nn.Linear(784, 128), nn.Linear(128, 10)

    def __call__(self, x: Tensor) -> Tensor:
        return self.l2(self.l1(x).relu())


def _torch_rows(torch, images, logits):
    model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10))
    x, o = torch.from_numpy(images), torch.from_numpy(logits)

    def eval_step():
        with torch.no_grad():
            return model(x).argmax(-1).numpy()
    return {"add": lambda: (torch.tensor([1., 2, 3]) + 1).numpy(),
            "argmax": lambda: o.argmax(-1).numpy(), "eval": eval_step}


def run(calls: int = 200) -> list[Row]:
    rng = np.random.default_rng(0)
    images = rng.random((64, 784), dtype=np.float32)
    logits = rng.standard_normal((64, 10)).astype(np.float32)
    model = MLP()
    jitted = TinyJit(lambda x: model(x).realize())
    batch = Tensor(images).realize()
    realized = Tensor(logits).realize()
    ours = {"add": lambda: (Tensor([1., 2, 3]) + 1).numpy(),
            "argmax": lambda: realized.argmax(-1).numpy(),
            "eval": lambda: jitted(batch).argmax(-1).numpy(),
            "replay": lambda: jitted(batch)}
    try:
        import torch
        torch.set_num_threads(len(__import__("os").sched_getaffinity(0)))
        theirs = _torch_rows(torch, images, logits)
    except ImportError:
        theirs = {}
    measured = {name: per_call(fn, calls) for name, fn in ours.items()}
    reference = {name: per_call(fn, calls) for name, fn in theirs.items()}
    rows_spec = [
        ("add", "(Tensor([1., 2, 3]) + 1).numpy(), seen before", "≤ 0.2 ms"),
        ("argmax", "o.argmax(-1).numpy() on a realized (64, 10)", "reported"),
        ("eval", "jitted MLP 784-128-10 on 64×784, argmax(-1).numpy()", "≤ 1 ms"),
        ("replay", "JIT replay alone (same MLP step)", "reported")]
    rows = []
    for name, workload, target in rows_spec:
        values = {"tinylab": measured[name]}
        ratio = None
        if name in reference:
            values["torch"] = reference[name]
            ratio = reference[name] / measured[name]
        rows.append(Row(workload, "ms/call", values, target, ratio,
                        "torch" if ratio is not None else ""))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    cpu = cpu_description()
    print(f"CPU: {cpu['model']} ({cpu['cores']} cores usable)")
    from bench.run import format_row
    for row in run(args.calls):
        print(format_row(row))


if __name__ == "__main__":
    main()
