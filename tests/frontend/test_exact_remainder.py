"""Float remainders (%, fmod, //, with quotients below 2**24) are exact on every CPU target,
with or without a fused multiply-add: SSE4 has none, and a - trunc(a/b)*b rounded its product
there (4e6 % 1.7 was off by up to 1.4). Checked against PyTorch bit for bit, natively and under
CPU_TARGET=sse4 (x86 code any x86-64 machine runs), with the gradients of fmod and %."""
import numpy as np
import pytest
import torch

from tinylab import Context, Tensor

RNG = np.random.default_rng(11)
A = (RNG.uniform(1e3, 4e6, 64) * RNG.choice([-1, 1], 64)).astype(np.float32)
B = (RNG.uniform(0.3, 3.0, 64) * RNG.choice([-1, 1], 64)).astype(np.float32)
OPS = {"mod": (lambda x, y: x % y, torch.remainder), "fmod": (lambda x, y: x.fmod(y), torch.fmod),
       "floordiv": (lambda x, y: x // y, torch.floor_divide)}


@pytest.mark.parametrize("target", ["", "sse4"])
@pytest.mark.parametrize("op", list(OPS))
def test_remainders_of_large_floats_are_exact(target, op):
    ours, theirs = OPS[op]
    with Context(CPU_TARGET=target):
        got = ours(Tensor(A), Tensor(B)).numpy()
    np.testing.assert_array_equal(got, theirs(torch.from_numpy(A), torch.from_numpy(B)).numpy())


@pytest.mark.parametrize("target", ["", "sse4"])
def test_remainder_gradients_follow_the_formula(target):
    with Context(CPU_TARGET=target):
        a, b = Tensor(A[:16], requires_grad=True), Tensor(B[:16], requires_grad=True)
        (a.fmod(b).sum() + (a % b).sum()).backward()
        grads = a.grad.numpy(), b.grad.numpy()
    ta, tb = torch.from_numpy(A[:16]).requires_grad_(), torch.from_numpy(B[:16]).requires_grad_()
    (torch.fmod(ta, tb).sum() + torch.remainder(ta, tb).sum()).backward()
    np.testing.assert_allclose(grads[0], ta.grad.numpy())
    np.testing.assert_allclose(grads[1], tb.grad.numpy(), rtol=1e-6)
