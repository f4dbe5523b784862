"""Resident memory over a training loop: a small CNN (conv-relu-conv-relu-pool-linear, Adam,
TinyJit) trained on random data for 200 steps; prints RSS after warm-up, at the end, the growth
per step and the allocator's live buffers. Measures only (the flat-count assertion lives in
tests/reliability/test_resources.py). `python -m bench.memory [--steps 200] [--batch 32]`.
"""
from __future__ import annotations

import argparse
import gc

import numpy as np

from tinylab import Tensor, TinyJit, nn
from tinylab.runtimes.buffer import LIVE_BUFFERS


def rss_bytes() -> int:
    """Resident set size of this process (Linux /proc; 0 where unavailable)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class SmallCNN:
    def __init__(self):
        self.layers = [nn.Conv2d(1, 8, 3), Tensor.relu, nn.Conv2d(8, 16, 3), Tensor.relu,
                       Tensor.max_pool2d, lambda x: x.flatten(1), nn.Linear(16 * 12 * 12, 10)]

    def __call__(self, x: Tensor) -> Tensor:
        return x.sequential(self.layers)


def train(steps: int, batch: int, warmup: int = 20) -> list[tuple[int, int, int]]:
    """(step, RSS bytes, live buffers) after warm-up and every 20 steps after it."""
    rng = np.random.default_rng(0)
    model = SmallCNN()
    optimizer = nn.optim.Adam(nn.state.get_parameters(model), lr=1e-3)

    @TinyJit
    @Tensor.train()
    def step(images: Tensor, labels: Tensor) -> Tensor:
        optimizer.zero_grad()
        loss = model(images).sparse_categorical_crossentropy(labels).backward()
        optimizer.step()
        return loss

    samples = []
    for i in range(steps):
        images = Tensor(rng.standard_normal((batch, 1, 28, 28)).astype(np.float32))
        labels = Tensor(rng.integers(0, 10, batch).astype(np.int32))
        step(images, labels).item()
        if i + 1 >= warmup and (i + 1 - warmup) % 20 == 0 or i + 1 == steps:
            gc.collect()
            samples.append((i + 1, rss_bytes(), len(LIVE_BUFFERS)))
    return samples


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args(argv)
    samples = train(args.steps, args.batch)
    print(f"{'step':>6} {'RSS MiB':>9} {'live buffers':>13}")
    for step, rss, live in samples:
        print(f"{step:6d} {rss / 2 ** 20:9.1f} {live:13d}")
    (first, rss0, live0), (last, rss1, live1) = samples[0], samples[-1]
    per_step = (rss1 - rss0) / max(1, last - first)
    print(f"RSS growth after warm-up: {(rss1 - rss0) / 2 ** 20:+.1f} MiB over {last - first} "
          f"steps ({per_step / 1024:+.1f} KiB/step); live buffers {live0} -> {live1}")


if __name__ == "__main__":
    main()
