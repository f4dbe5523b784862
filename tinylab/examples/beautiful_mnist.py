"""Train the MNIST-style CNN (tinygrad's beautiful_mnist model) on the CPU: `make demo`.

    python -m tinylab.examples.beautiful_mnist          # Fashion-MNIST, 70 steps, batch 512
    STEPS=300 BS=512 MNIST=1 TARGET_EVAL_ACC_PCT=82 python -m tinylab.examples.beautiful_mnist

Conv2d(1,32,5)-relu-Conv2d(32,32,5)-relu-BatchNorm-maxpool-Conv2d(32,64,3)-relu-Conv2d(64,64,3)-
relu-BatchNorm-maxpool-Linear(576,10), Adam, TinyJit on the train step. Prints a progress line
with loss and test accuracy, the kernels of one step and their timings, and the final accuracy;
while kernels compile (the first step, the first evaluation) a terminal shows a progress bar
(engine/progress.py; PROGRESS=0 hides it). Batches are picked on the host (a data loader's job);
everything else runs as generated kernels.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from tinylab import GlobalCounters, Tensor, TinyJit, dtypes, nn
from tinylab.config import getenv


class Model:
    def __init__(self):
        self.layers = [
            nn.Conv2d(1, 32, 5), Tensor.relu,
            nn.Conv2d(32, 32, 5), Tensor.relu,
            nn.BatchNorm(32), Tensor.max_pool2d,
            nn.Conv2d(32, 64, 3), Tensor.relu,
            nn.Conv2d(64, 64, 3), Tensor.relu,
            nn.BatchNorm(64), Tensor.max_pool2d,
            lambda x: x.flatten(1), nn.Linear(576, 10),
        ]

    def __call__(self, x: Tensor) -> Tensor:
        return x.sequential(self.layers)


def load(fashion: bool):
    X_train, Y_train, X_test, Y_test = nn.datasets.mnist(fashion=fashion)  # noqa: N806
    # host copies for batch picking; the model sees float images in [0, 1)
    return (X_train.numpy().astype(np.float32) / 255.0, Y_train.numpy().astype(np.int32),
            X_test.numpy().astype(np.float32) / 255.0, Y_test.numpy().astype(np.int32))


def make_steps(model: Model, optimizer):
    @TinyJit
    @Tensor.train()
    def train_step(images: Tensor, labels: Tensor) -> Tensor:
        optimizer.zero_grad()
        loss = model(images).sparse_categorical_crossentropy(labels).backward()
        optimizer.step()
        return loss

    @TinyJit
    @Tensor.test()
    def correct(images: Tensor, labels: Tensor) -> Tensor:
        return (model(images).argmax(axis=1) == labels).sum()

    return train_step, correct


EVAL_BATCH = 2500  # 4 batches for the 10,000 test images: big enough that each kernel's
                  # parallel loops fill the cores (the forward pass only: no gradients held)


def test_accuracy(correct, X_test, Y_test, batch: int = EVAL_BATCH) -> float:  # noqa: N803
    total = 0
    for start in range(0, len(X_test) - batch + 1, batch):
        images = Tensor(X_test[start:start + batch])
        labels = Tensor(Y_test[start:start + batch])
        total += int(correct(images, labels).item())
    return 100.0 * total / (len(X_test) // batch * batch)


def print_step_kernels(train_step, rounds: int = 9) -> None:
    """One line per kernel of the captured step, slowest first: each kernel's median time over
    `rounds` replays of the whole step, interleaved (engine/timing.py), with its quartiles."""
    from ..engine.timing import interleaved
    launches = [launch for launch in train_step.step.launches if launch.runner is not None]
    timed = interleaved({index: (lambda launch=launch: launch.runner(launch.buffers))
                         for index, launch in enumerate(launches)}, rounds=rounds)
    rows = [(timed[index], launch.runner) for index, launch in enumerate(launches)]
    total = sum(spread.median for spread, _ in rows)
    print(f"one train step: {len(rows)} kernels, {total * 1e3:.1f} ms of kernel time (the sum of "
          f"each kernel's median over {rounds} interleaved replays)")
    for spread, runner in sorted(rows, key=lambda r: -r[0].median)[:12]:
        seconds = spread.median
        gflops = runner.flops / seconds / 1e9 if seconds else 0
        print(f"  {runner.name:<36} {seconds * 1e3:8.2f} ms ({spread.low * 1e3:.2f}-"
              f"{spread.high * 1e3:.2f}) {gflops:8.1f} GFLOPS {100 * seconds / total:5.1f}%")
    if len(rows) > 12:
        print(f"  ... {len(rows) - 12} more")


def main() -> int:
    steps, batch = getenv("STEPS", 70), getenv("BS", 512)
    fashion = not getenv("MNIST", 0)
    target = float(getenv("TARGET_EVAL_ACC_PCT", 0.0) or 0.0)
    Tensor.manual_seed(getenv("SEED", 0))
    X_train, Y_train, X_test, Y_test = load(fashion)  # noqa: N806
    print(f"{'Fashion-MNIST' if fashion else 'MNIST'}: {len(X_train)} train, {len(X_test)} test "
          f"images; batch {batch}, {steps} steps")
    model = Model()
    optimizer = nn.optim.Adam(nn.state.get_parameters(model))
    train_step, correct = make_steps(model, optimizer)
    rng = np.random.default_rng(getenv("SEED", 0))
    start, accuracy, evaluating = time.perf_counter(), float("nan"), 0.0
    GlobalCounters.reset()
    for i in range(steps):
        picked = rng.integers(0, len(X_train), batch)
        images, labels = Tensor(X_train[picked]), Tensor(Y_train[picked])
        step_start = time.perf_counter()
        loss = train_step(images, labels).item()
        step_time = time.perf_counter() - step_start
        if i % 10 == 9 or i == steps - 1:
            eval_start = time.perf_counter()
            accuracy = test_accuracy(correct, X_test, Y_test)
            evaluating += time.perf_counter() - eval_start
        shown = "   -  " if np.isnan(accuracy) else f"{accuracy:5.2f}%"  # before the first test
        print(f"\rstep {i + 1:4d}/{steps}  loss {loss:6.3f}  test accuracy {shown}  "
              f"{step_time * 1e3:7.1f} ms/step  ({time.perf_counter() - start:6.1f} s)",
              end="" if i < steps - 1 else "\n", flush=True)
    print(f"compiled {GlobalCounters.compile_count} kernels in "
          f"{GlobalCounters.compile_time_s:.1f} s; memory planner saved "
          f"{train_step.bytes_saved / 2**20:.1f} MiB in the step")
    print_step_kernels(train_step)
    total = time.perf_counter() - start
    training = total - evaluating  # model init and the steps, compile included (bench.demo's)
    print(f"test accuracy {accuracy:.2f}% after {steps} steps in {total:.1f} s: training wall "
          f"{training:.1f} s, evaluating {evaluating:.1f} s")
    wall_file = getenv("DEMO_WALL_FILE", "")
    if wall_file:  # `make demo` then runs the same loop in PyTorch (bench.demo --beside)
        with open(wall_file, "w") as out:
            out.write(f"{training} {steps} {batch}\n")
    if target and accuracy < target:
        print(f"below the target {target}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["Model", "main", "dtypes"]
