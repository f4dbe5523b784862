"""CUDA without a GPU: representative kernels (elementwise, reduces, matmul, conv2d, pooling,
softmax, a training step's backward, float16 and every dtype) rendered on the NULL:CUDA device
and compiled to PTX by nvcc. conftest does the same for every kernel a test session produced."""
import numpy as np
import pytest

import cuda_check
from tinylab import Context, Tensor, dtypes, nn, trace

pytestmark = pytest.mark.skipif(not cuda_check.nvcc_present(), reason="nvcc not installed")
N = 32


def _tensor(*shape):
    return Tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))


def _workloads():
    a, b = _tensor(N, N), _tensor(N, N)
    x, w = _tensor(2, 3, 16, 16), _tensor(4, 3, 3, 3)
    yield (a.reshape(N, 1, N) * b.T.reshape(1, N, N)).sum(axis=2)
    yield x.conv2d(w, padding=1)
    yield x.max_pool2d(2)
    yield a.softmax(1)
    yield _tensor(1 << 14).sum()
    yield a.half() * 3 + 1
    for dtype in (dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.int64, dtypes.uint64,
                  dtypes.float64, dtypes.bool):
        yield (a * 10).cast(dtype) + (a * 10).cast(dtype)
    layer = nn.Linear(N, 8)
    loss = layer(a).relu().sum()
    loss.backward()
    yield layer.weight.grad


def test_representative_kernels_compile_for_cuda():
    with Context(DEV="NULL:CUDA"), trace() as t:
        for out in _workloads():
            out.realize()
    asts = list(dict.fromkeys(k.ast for k in t.kernels))
    assert len(asts) >= 10
    sources = [k.source for k in t.kernels]
    assert any("__shared__" in s and "__syncthreads();" in s for s in sources)
    assert any("__half2float" in s for s in sources)
    assert cuda_check.compile_for_cuda(asts) == len(asts)


def test_cuda_source_is_what_render_only_prints(capsys):
    with Context(DEV="NULL:CUDA", DEBUG=4):
        x = Tensor(np.ones((12, 12), np.float32))  # not 8x8: golden files name r_8_8_8
        (x @ x).realize()
    out = capsys.readouterr().out
    assert 'extern "C" __global__ void r_' in out and "*** NULL:CUDA" in out
