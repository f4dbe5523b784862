"""Golden files for the optimized source of the three canonical examples (elementwise, reduce,
and the README's matmul as multiply + sum, at the README's 64 x 64): the default plan of each
target rendered as C (CPU target pinned to the avx2 preset with 4 threads, so every machine
renders the same text), OpenCL and CUDA (render-only devices). Review changes as diffs."""
import numpy as np
import pytest

from tinylab import Context, Tensor
from tinylab.engine.realize import REALIZED, render_for
from tinylab.schedule.schedule import schedule

N = 64  # the README's example size
EXAMPLES = {
    "elementwise": lambda a, b: ((a + b) * 2).relu().exp(),
    "reduce": lambda a, b: (a * b).sum(1).sqrt(),
    "matmul": lambda a, b: (a.reshape(N, 1, N) * b.T.reshape(1, N, N)).sum(axis=2),
}
TARGETS = {"c": "NULL:C", "cl": "NULL:CL", "cu": "NULL:CUDA"}  # file suffix -> render-only device


def _kernel_ast(name: str):
    rng = np.random.default_rng(0)
    a, b = (Tensor(rng.standard_normal((N, N)).astype(np.float32)).realize() for _ in range(2))
    (kernel,) = schedule([EXAMPLES[name](a, b).node], realized=REALIZED).kernels
    return kernel.ast


@pytest.mark.parametrize("suffix", list(TARGETS))
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_optimized_source(name, suffix, golden):
    with Context(CPU_TARGET="avx2", THREADS=4, NOOPT=0, BEAM=0):
        source = render_for(_kernel_ast(name), TARGETS[suffix])
    golden(f"optimized/{name}.{suffix}", source)
