"""Long scans (frontend/reduce.py): cumprod's values and gradient against PyTorch at lengths where
its scan has many levels, zeros and negatives included; and the plan's size: the kernels of a
scan (cumprod, cumsum, cummax, logcumsumexp) with its backward stay few (about log n) and each
stays small as n grows (one backward kernel of a 1,024-cumprod was 3.6 MB of C and took 25-43 s
to compile)."""
import numpy as np
import pytest

from tinylab import Tensor
from tinylab.engine.realize import REALIZED, render_for
from tinylab.schedule.schedule import schedule


def values(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (1 + 0.02 * rng.standard_normal(n)).astype(np.float32)
    x[n // 3] = 0.0          # the gradient through a zero (PyTorch's rule)
    x[n // 5] *= -1.0
    return x


@pytest.mark.parametrize("n", [300, 1024, 2049])
def test_long_cumprod_and_its_gradient_match_pytorch(n):
    import torch
    x = values(n)
    weights = np.linspace(-1, 1, n, dtype=np.float32)
    ours = Tensor(x, requires_grad=True)
    out = ours.cumprod(0)
    (out * Tensor(weights)).sum().backward()
    theirs = torch.tensor(x, requires_grad=True)
    expected = torch.cumprod(theirs, 0)
    (expected * torch.from_numpy(weights)).sum().backward()
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_batched_cumprod_gradient_along_the_last_axis_matches_pytorch():
    import torch
    x = np.stack([values(700, seed) for seed in range(3)])
    ours = Tensor(x, requires_grad=True)
    ours.cumprod(1).sum().backward()
    theirs = torch.tensor(x, requires_grad=True)
    torch.cumprod(theirs, 1).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-4, atol=1e-4)


def scan_kernels(op: str, n: int) -> list[str]:
    """The C source of every kernel of `op` over n elements with its backward (planned and
    rendered, not compiled)."""
    x = Tensor(values(n), requires_grad=True)
    out = getattr(x, op)(0)
    (out[0] if isinstance(out, tuple) else out).sum().backward()  # cummax: (values, indices)
    kernels = schedule([x.grad.node], realized=REALIZED).kernels
    return [render_for(kernel.ast, "CPU") for kernel in kernels]


@pytest.mark.parametrize("op,largest", [("cumprod", 16_000), ("cumsum", 16_000),
                                        ("cummax", 32_000), ("logcumsumexp", 32_000)])
def test_a_scans_kernels_stay_few_and_small_as_it_grows(op, largest):
    """The bars were set for 8-lane (AVX2) vectors; wider targets write each lane-wise constant
    and gather out over more lanes, so the bars scale with the target's float32 lanes. The plan
    of a small scan may differ from a long one's (the 256-scan's reduce is too short to upcast),
    so growth is judged against the larger of the two smaller sizes: 4x a 1,024-scan's length
    may not bring much more source than it already has."""
    from tinylab.target.cpu_target import current_target
    wide = max(1.0, current_target().lanes_of(4) / 8)
    sizes = {n: scan_kernels(op, n) for n in (256, 1024, 4096)}
    for n, sources in sizes.items():
        assert len(sources) <= 3 * np.log2(n), (n, len(sources))
        assert max(map(len, sources)) < largest * wide, (n, max(map(len, sources)))
    smaller = max(len(source) for n in (256, 1024) for source in sizes[n])
    assert max(map(len, sizes[4096])) < 1.5 * smaller + 8_000 * wide
