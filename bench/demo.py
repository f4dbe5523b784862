"""`make demo` as a user meets it, beside the same loop in PyTorch, each run in a fresh process:
the cold start (empty kernel cache: import, model init and step 1, compile included), the warm
start (every kernel cached), the 70-step training wall and the evaluation of the 10,000 test
images. `python -m bench.demo [--steps 70] [--rounds 2] [--also NAME=PATH]` (another tree's
tinylab measured in the same rounds, e.g. `--also main=/work/main` for a before/after). The
children run this file with --child and print JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BATCH, EVAL_BATCH = 512, 1000


# ---- the children: one framework, one fresh process ----------------------------------------
def _tinylab_child(data, steps: int, eval_repeats: int, mark) -> dict:
    from tinylab import GlobalCounters, Tensor, nn
    from tinylab.examples.beautiful_mnist import Model, make_steps, test_accuracy
    mark("imported")
    Tensor.manual_seed(0)
    model = Model()
    train_step, correct = make_steps(model, nn.optim.Adam(nn.state.get_parameters(model)))
    images, labels = data["train_images"], data["train_labels"]
    rng = np.random.default_rng(0)
    mark("model")
    for step in range(steps):
        picked = rng.integers(0, len(images), BATCH)
        train_step(Tensor(images[picked]), Tensor(labels[picked])).item()
        if step == 0:
            mark("first_step")
            first = {"kernels_compiled": GlobalCounters.compile_count,
                     "compile_s": GlobalCounters.compile_time_s}
    mark("trained")
    evals, accuracy = [], 0.0
    for _ in range(eval_repeats):
        start = time.perf_counter()
        accuracy = test_accuracy(correct, data["test_images"], data["test_labels"], EVAL_BATCH)
        evals.append(time.perf_counter() - start)
    return {"evals": evals, "accuracy": accuracy, **first}


def torch_cnn(torch):
    """The beautiful_mnist model in PyTorch (also bench/cnn_step.py's contender)."""
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 5), nn.ReLU(), nn.Conv2d(32, 32, 5), nn.ReLU(),
        nn.BatchNorm2d(32), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
        nn.Conv2d(64, 64, 3), nn.ReLU(), nn.BatchNorm2d(64), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(576, 10))


def _torch_child(data, steps: int, eval_repeats: int, mark) -> dict:
    import torch
    nn = torch.nn
    mark("imported")
    torch.manual_seed(0)
    model = torch_cnn(torch)
    optimizer = torch.optim.Adam(model.parameters())
    images, labels = data["train_images"], data["train_labels"]
    rng = np.random.default_rng(0)
    mark("model")
    model.train()
    for step in range(steps):
        picked = rng.integers(0, len(images), BATCH)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(torch.from_numpy(images[picked])),
                                           torch.from_numpy(labels[picked]).long())
        loss.backward()
        optimizer.step()
        loss.item()
        if step == 0:
            mark("first_step")
    mark("trained")
    model.eval()
    evals, accuracy = [], 0.0
    test_images, test_labels = data["test_images"], data["test_labels"]
    for _ in range(eval_repeats):
        start, hits = time.perf_counter(), 0
        with torch.no_grad():
            for at in range(0, len(test_images) - EVAL_BATCH + 1, EVAL_BATCH):
                guess = model(torch.from_numpy(test_images[at:at + EVAL_BATCH])).argmax(1)
                hits += int((guess.numpy() == test_labels[at:at + EVAL_BATCH]).sum())
        evals.append(time.perf_counter() - start)
        accuracy = 100.0 * hits / (len(test_images) // EVAL_BATCH * EVAL_BATCH)
    return {"evals": evals, "accuracy": accuracy}


def child(argv) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("framework", choices=["tinylab", "torch"])
    parser.add_argument("data")
    parser.add_argument("--steps", type=int, default=70)
    parser.add_argument("--eval-repeats", type=int, default=2)
    args = parser.parse_args(argv)
    marks, cpu = {}, {}

    def mark(name):  # wall clock (the parent knows when it spawned us) and CPU seconds so far
        marks[name] = time.time()
        own, compilers = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                               resource.RUSAGE_CHILDREN))
        cpu[name] = own.ru_utime + own.ru_stime + compilers.ru_utime + compilers.ru_stime
    with np.load(args.data) as stored:  # uint8 as shipped: scaled here, as the demo's load does
        data = {"train_images": stored["train_images"].astype(np.float32) / 255.0,
                "train_labels": stored["train_labels"].astype(np.int32),
                "test_images": stored["test_images"].astype(np.float32) / 255.0,
                "test_labels": stored["test_labels"].astype(np.int32)}
    run = _tinylab_child if args.framework == "tinylab" else _torch_child
    result = run(data, args.steps, args.eval_repeats, mark)
    print(json.dumps({"marks": marks, "cpu_at": cpu, **result}))


# ---- the parent: fresh processes, interleaved --------------------------------------------------
def _save_data(folder: Path) -> Path | None:
    """Fashion-MNIST as the demo finds it (TINYLAB_DATA, cache, /usr/share), saved for children."""
    from tinylab.nn import datasets
    from tinylab.nn.idx import read_idx
    paths = [datasets.find_file(datasets.FASHION_MNIST, name) for name in datasets.FILES]
    if any(p is None for p in paths):
        return None
    train_images, train_labels, test_images, test_labels = (read_idx(p) for p in paths)
    out = folder / "fashion_mnist.npz"
    np.savez(out, train_images=train_images.reshape(-1, 1, 28, 28), train_labels=train_labels,
             test_images=test_images.reshape(-1, 1, 28, 28), test_labels=test_labels)
    return out


def run_child(framework: str, data: Path, cache: Path, steps: int, eval_repeats: int,
              tinylab_path: str | None = None) -> dict:
    """One fresh process: its marks as seconds since it was spawned, and its CPU seconds (its
    own and its compilers')."""
    env = dict(os.environ, TINYLAB_CACHE=str(cache), TUNE="0")  # the demo's settings
    if tinylab_path:
        env["PYTHONPATH"] = tinylab_path
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    spawned = time.time()
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", framework,
                           str(data), "--steps", str(steps), "--eval-repeats", str(eval_repeats)],
                          env=env, capture_output=True, text=True, timeout=3600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{framework} child failed:\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["at"] = {name: t - spawned for name, t in result.pop("marks").items()}
    result["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result


def measure(steps: int = 70, rounds: int = 2, eval_repeats: int = 2, torch: bool = True,
            trees: dict | None = None) -> dict | None:
    """Child results per contender: {"tinylab": {"cold": [...], "warm": [...]}, "torch": [...]},
    plus one entry per extra tinylab tree (`trees`: name -> PYTHONPATH). The rounds interleave
    the contenders (every tinylab cold, torch, every tinylab warm) so that a burst of load from
    elsewhere hits all alike."""
    trees = {"tinylab": None, **(trees or {})}
    with tempfile.TemporaryDirectory(prefix="tinylab-bench-demo-") as folder:
        data = _save_data(Path(folder))
        if data is None:
            return None
        runs: dict = {name: {"cold": [], "warm": []} for name in trees}
        runs["torch"] = []
        for index in range(rounds):
            for name, path in trees.items():  # an empty cache each: every kernel compiles
                cache = Path(folder) / f"{name}-cache{index}"
                runs[name]["cold"].append(run_child("tinylab", data, cache, steps, eval_repeats,
                                                    path))
            if torch:
                runs["torch"].append(run_child("torch", data, Path(folder) / "unused", steps,
                                               eval_repeats))
            for name, path in trees.items():
                cache = Path(folder) / f"{name}-cache{index}"
                runs[name]["warm"].append(run_child("tinylab", data, cache, steps, eval_repeats,
                                                    path))
        return runs


def _median(runs, pick) -> float:
    return statistics.median(pick(r) for r in runs)


def _split(results) -> str:
    """When each stage ended (seconds since spawned) and the CPU seconds spent by then."""
    return ", ".join(f"{name} {_median(results, lambda r: r['at'][name]):.1f} s "
                     f"({_median(results, lambda r: r['cpu_at'][name]):.1f} CPU s)"
                     for name in ("imported", "model", "first_step"))


def _training_wall(result) -> float:
    return result["at"]["trained"] - result["at"]["imported"]


def rows(runs: dict, steps: int) -> list:
    """The table rows: tinylab (this tree) against torch; other trees as extra values."""
    from bench.common import Row
    trees = {name: r for name, r in runs.items() if name != "torch"}
    theirs = runs["torch"]
    out = []

    def row(workload, kind, pick, target, notes):
        values = {("tinylab" if name == "tinylab" else f"tinylab@{name}"):
                  _median(tree[kind], pick) for name, tree in trees.items()}
        ratio = None
        if theirs:
            values["torch"] = _median(theirs, pick)
            ratio = values["torch"] / values["tinylab"]
        out.append(Row(workload, "s", values, target, ratio, "torch" if theirs else "", notes))

    def per_tree(describe):
        return [f"{name}: {describe(tree)}" for name, tree in trees.items()]
    torch_note = [f"torch: {_split(theirs)}"] if theirs else []
    row("demo cold start: fresh process, empty cache, step 1 done", "cold",
        lambda r: r["at"]["first_step"], "≤ 20 s on 2 cores",
        per_tree(lambda t: f"{_split(t['cold'])}; {t['cold'][0]['kernels_compiled']} kernels "
                 f"compiled by step 1") + torch_note)
    row("demo warm start: fresh process, every kernel cached, step 1 done", "warm",
        lambda r: r["at"]["first_step"], "reported", per_tree(lambda t: _split(t["warm"])))
    row(f"demo training wall: model init + {steps} steps b{BATCH}, compile included", "cold",
        _training_wall, "≤ 1.5× torch's wall (ratio ≥ 0.67)",
        per_tree(lambda t: f"with every kernel cached {_median(t['warm'], _training_wall):.1f} s"))
    accuracy = per_tree(lambda t: f"test accuracy after {steps} steps "
                        f"{t['warm'][0]['accuracy']:.2f}%, first eval (compiling) "
                        f"{_median(t['cold'], lambda r: r['evals'][0]):.1f} s")
    row(f"demo eval: 10,000 test images, batches of {EVAL_BATCH}", "warm",
        lambda r: min(r["evals"][1:] or r["evals"]), "reported against torch",
        accuracy + ([f"torch: test accuracy {theirs[0]['accuracy']:.2f}%"] if theirs else []))
    return out


def run(steps: int = 70, rounds: int = 2, eval_repeats: int = 2) -> list:
    runs = measure(steps, rounds, eval_repeats)
    if runs is None:
        from bench.common import Row
        return [Row("demo rows", "-", {}, "skipped: Fashion-MNIST not found (make system)")]
    return rows(runs, steps)


def beside(wall_file: str) -> None:
    """`make demo`'s last line: the demo's training wall (written to `wall_file` by
    beautiful_mnist) beside the same loop in PyTorch, run now in a fresh process."""
    training, steps, batch = Path(wall_file).read_text().split()
    if int(batch) != BATCH:
        print(f"PyTorch's loop not run: the demo used batch {batch}, the loop runs {BATCH}")
        return
    try:
        import torch  # noqa: F401 - only whether it is there
    except ImportError:
        print(f"training wall {float(training):.1f} s (PyTorch is not installed: no comparison)")
        return
    with tempfile.TemporaryDirectory(prefix="tinylab-demo-torch-") as folder:
        data = _save_data(Path(folder))
        if data is None:
            print("PyTorch's loop not run: Fashion-MNIST not found")
            return
        theirs = _training_wall(run_child("torch", data, Path(folder) / "unused", int(steps), 0))
    print(f"training wall ({steps} steps of batch {batch}, evaluations excluded): tinylab "
          f"{float(training):.1f} s, PyTorch {theirs:.1f} s on this machine now "
          f"({float(training) / theirs:.2f}x PyTorch's)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--beside", metavar="WALL_FILE", default=None,
                        help="print the demo's training wall beside PyTorch's loop and stop")
    parser.add_argument("--steps", type=int, default=70)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--eval-repeats", type=int, default=2)
    parser.add_argument("--also", action="append", default=[], metavar="NAME=PATH",
                        help="another tinylab tree (its PYTHONPATH) to measure in the same rounds")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--json", default=None, help="also write the raw child results here")
    args = parser.parse_args(argv)
    if args.beside:
        return beside(args.beside)
    trees = dict(item.split("=", 1) for item in args.also)
    runs = measure(args.steps, args.rounds, args.eval_repeats, not args.no_torch, trees)
    if runs is None:
        sys.exit("Fashion-MNIST not found")
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))
    from bench.run import format_row
    for row in rows(runs, args.steps):
        print(format_row(row))
        for note in row.notes:
            print(f"    {note}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        main()
