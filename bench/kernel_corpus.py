"""Dump the generated kernel sources of a fixed corpus (a CNN train step and compositions) to a
folder, one file per kernel and backend, so a refactor can show its kernels are byte-identical:

    TINYLAB_CALIBRATE=0 python -m bench.kernel_corpus /tmp/before   # then change code, then
    TINYLAB_CALIBRATE=0 python -m bench.kernel_corpus /tmp/after && diff -r /tmp/before /tmp/after

CPU kernels are the sources that compiled here (CPU_TARGET applies); CL, CUDA, WGSL and PYTHON are
rendered only (no hardware needed). Calibration off keeps plans independent of this run's timings.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from tinylab import Tensor, nn, trace
from tinylab.examples.beautiful_mnist import Model

RENDERED = ("CL", "CUDA", "WGSL", "PYTHON")


def _compositions(rng):
    x = Tensor(rng.random((16, 24), dtype=np.float32))
    w = Tensor(rng.random((24, 8), dtype=np.float32))
    v = Tensor(rng.random((7, 5), dtype=np.float32))
    yield "matmul_relu_sum", lambda: (x @ w).relu().sum()
    yield "softmax", lambda: x.softmax(-1)
    yield "log_softmax_grad", lambda: _grad(lambda t: t.log_softmax(-1).mean(), x)
    yield "index_after_pad", lambda: (v.pad(((1, 2), (0, 3)))[2:5, 1:7] * 2).exp()
    yield "unary_chain", lambda: (x.exp2().log2() + x.sqrt().reciprocal() + x.sin() * x.cos()).tanh()
    yield "where_max", lambda: (x > 0.5).where(x.max(-1, keepdim=True), x.min(0))
    yield "cumsum", lambda: x.cumsum(1)
    yield "int_ops", lambda: (x * 100).cast("int32") % 7 + ((x * 100).cast("int32") // 3)
    yield "conv_pool", lambda: Tensor(rng.random((2, 3, 12, 12), dtype=np.float32)).conv2d(
        Tensor(rng.random((4, 3, 3, 3), dtype=np.float32))).max_pool2d()
    yield "half", lambda: (x.cast("float16") * 2).cast("float32").erf()
    yield "layernorm_gelu", lambda: x.layernorm().gelu()
    yield "argmax_topk", lambda: x.argmax(-1) + x.topk(3)[1].sum(-1)


def _grad(fn, x):
    leaf = Tensor(x.numpy(), requires_grad=True)
    fn(leaf).backward()
    return leaf.grad


def _cnn_step(rng):
    Tensor.training = True
    model = Model()
    opt = nn.optim.Adam(nn.state.get_parameters(model))
    images = Tensor(rng.random((8, 1, 28, 28), dtype=np.float32))
    labels = Tensor(rng.integers(0, 10, 8).astype(np.int32))
    opt.zero_grad()
    loss = model(images).sparse_categorical_crossentropy(labels).backward()
    opt.step()
    Tensor.training = False
    return loss


def dump(folder: str) -> int:
    """Run the corpus, write every kernel's sources under `folder`; returns the kernel count."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    cases = [("cnn_step", lambda: _cnn_step(rng))] + list(_compositions(rng))
    count = 0
    for case, build in cases:
        with trace() as record:
            result = build()
            (result if isinstance(result, Tensor) else result[0]).realize()
        for index, kernel in enumerate(record.kernels):
            stem = os.path.join(folder, f"{case}.{index:03d}.{kernel.name}")
            with open(stem + ".CPU.txt", "w") as out:
                out.write(kernel.source)
            for backend in RENDERED:
                with open(f"{stem}.{backend}.txt", "w") as out:
                    out.write(kernel.render(backend))
            count += 1
    return count


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(f"{dump(sys.argv[1])} kernels written to {sys.argv[1]}")
