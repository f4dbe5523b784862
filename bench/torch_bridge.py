"""PyTorch models through the bridge beside PyTorch eager and Inductor (torch.compile's default
backend, C++ on the CPU), all in the same run: transformers' ResNet (batch 16, 64x64) and GPT-2
(batch 4, 32 tokens), inference and a training step (forward, backward, SGD). Each row gives the
warm medians (interleaved), the first call of each compiled model in a new process with empty
caches (tinylab's and Inductor's), and the kernels each compiled call launches.

    python -m bench.torch_bridge            (or make bench, suite torch_bridge)
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile

from bench.common import Row, interleaved_times, optional_torch

MODELS = {
    "resnet": "transformers ResNet (32-256 channels, 4 stages) b16 64x64",
    "gpt2": "transformers GPT-2 (2 layers, 64 wide, 500 tokens) b4 t32",
}


def build(name: str):
    """(model, input) of a bench model, random weights from a fixed seed."""
    import torch
    import transformers as tf
    torch.manual_seed(0)
    if name == "resnet":
        model = tf.ResNetForImageClassification(tf.ResNetConfig(
            num_labels=10, embedding_size=32, hidden_sizes=[32, 64, 128, 256], depths=[1, 1, 1, 1],
            layer_type="basic"))
        return model, torch.randn(16, 3, 64, 64)
    model = tf.GPT2LMHeadModel(tf.GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=500,
                                             n_positions=64, attn_pdrop=0.0, resid_pdrop=0.0,
                                             embd_pdrop=0.0))
    return model, torch.randint(0, 500, (4, 32))


def step_function(model, x, mode: str, fn=None):
    """A zero-argument call: inference (no_grad) or a training step with SGD."""
    import torch
    fn = model if fn is None else fn
    if mode == "inference":
        model.eval()

        def infer():
            with torch.no_grad():
                return fn(x).logits
        return infer
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    def train():
        optimizer.zero_grad()
        loss = (fn(x).logits.float() ** 2).mean()
        loss.backward()
        optimizer.step()
        return loss
    return train


def first_call(name: str, mode: str, backend: str) -> dict:
    """The first compiled call, in a new process with empty caches: seconds, kernels."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "TINYLAB_CACHE": cache, "TORCHINDUCTOR_CACHE_DIR": cache,
               "TORCHINDUCTOR_FX_GRAPH_CACHE": "0"}
        run = subprocess.run([sys.executable, "-m", "bench.torch_bridge", "--first", name, mode,
                              backend], capture_output=True, text=True, env=env, timeout=1800)
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    if run.returncode or not lines:
        return {"error": (run.stderr or run.stdout).strip().splitlines()[-1:]}
    return json.loads(lines[-1])


def _first_in_this_process(name: str, mode: str, backend: str) -> dict:
    import time
    import torch
    from tinylab import GlobalCounters
    model, x = build(name)
    compiled = torch.compile(model, backend=backend)
    call = step_function(model, x, mode, compiled)
    start = time.perf_counter()
    call()
    seconds = time.perf_counter() - start
    kernels = GlobalCounters.kernel_count if backend == "tinylab" else _inductor_kernels()
    return {"seconds": seconds, "kernels": kernels}


def _inductor_kernels() -> int:
    from torch._inductor import metrics
    return metrics.generated_kernel_count


def _tinylab_launches(call) -> int:
    """Kernels one warm compiled call launches (counted in a traced call: no replay)."""
    import tinylab
    with tinylab.trace() as record:
        call()
    return len(record.kernels)


def run_model(name: str, mode: str, runs: int = 5) -> Row:
    import torch
    eager_model, x = build(name)
    ours_model, _ = build(name)
    inductor_model, _ = build(name)
    torch._dynamo.reset()
    fns = {"tinylab": step_function(ours_model, x, mode, torch.compile(ours_model,
                                                                       backend="tinylab")),
           "torch eager": step_function(eager_model, x, mode),
           "inductor": step_function(inductor_model, x, mode, torch.compile(inductor_model))}
    times = interleaved_times(fns, runs, warmup=3)
    values = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    spread = ", ".join(f"{k} {min(v) * 1e3:.1f}-{max(v) * 1e3:.1f}" for k, v in times.items())
    launches = _tinylab_launches(fns["tinylab"])
    cold = {backend: first_call(name, mode, backend) for backend in ("tinylab", "inductor")}
    notes = [f"min-max of {runs} interleaved runs, ms: {spread}",
             f"tinylab: {launches} kernels per call; first call (empty cache, new process) "
             f"{_first_text(cold['tinylab'])}",
             f"inductor: first call {_first_text(cold['inductor'])}",
             f"tinylab/inductor warm: {values['tinylab'] / values['inductor']:.2f}x its time"]
    return Row(f"{MODELS[name]}, {mode}", "ms/call", values,
               "≤ 1.0× eager's time (ratio ≥ 1)" if name == "resnet" else "",
               values["torch eager"] / values["tinylab"], "torch eager", notes)


def _first_text(found: dict) -> str:
    if "error" in found:
        return f"failed ({found['error']})"
    return f"{found['seconds']:.1f} s, {found['kernels']} kernels"


def run(runs: int = 9, quick: bool = False) -> list[Row]:
    if optional_torch() is None:
        return []
    try:
        import transformers  # noqa: F401
    except ImportError:
        return []
    modes = ("inference",) if quick else ("inference", "training")
    return [run_model(name, mode, runs) for name in MODELS for mode in modes]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--first"]:
        print(json.dumps(_first_in_this_process(*sys.argv[2:5])))
    else:
        from bench.run import format_row
        for row in run():
            print(format_row(row))
            for note in row.notes:
                print("   ", note)
