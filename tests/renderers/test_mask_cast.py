"""A comparison cast to a number in vector code (renderers/c.py): the lane mask (-1 or 0) is
negated and converted in one vector op, giving exactly 1 or 0 in float32, int32 and uint32, NaN
compares included; checked against numpy, on the kernel this CPU runs, and in the max-pool
gradient that counts ties with it (against PyTorch)."""
import numpy as np
import pytest

from tinylab import Device, Tensor
from tinylab.codegen.linearize import linearize
from tinylab.codegen.plan import KernelPlan
from tinylab.engine.realize import REALIZED
from tinylab.schedule.schedule import schedule

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 3.5], np.float32)
A = np.repeat(SPECIAL, len(SPECIAL))
B = np.tile(SPECIAL, len(SPECIAL))


def _source(out: Tensor) -> str:
    (kernel,) = schedule([out.node], realized=REALIZED).kernels
    plan = KernelPlan.from_ast(kernel.ast)
    device = Device["CPU"]
    from tinylab.codegen.heuristic import choose_opts
    plan = plan.apply_all(choose_opts(plan, device.renderer.supported_actions, device.target))
    return device.renderer.render(linearize(plan))


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint32"])
@pytest.mark.parametrize("compare", ["lt", "eq", "ne"])
def test_compare_cast_is_one_or_zero(dtype, compare):
    a, b = Tensor(A).realize(), Tensor(B).realize()
    op = {"lt": lambda x, y: x < y, "eq": lambda x, y: x == y, "ne": lambda x, y: x != y}[compare]
    out = op(a, b).cast(dtype) * 3
    want = op(A, B).astype(dtype) * np.array(3, dtype)
    source = _source(out)  # before it runs (a realized graph schedules no kernel)
    got = out.numpy()
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)
    if "__builtin_convertvector((-" not in source:  # scalar code (a CPU without vectors)
        assert Device["CPU"].target.lanes_of(4) == 1
    assert "!=0)))" not in source  # no lane-by-lane conversion


def test_max_pool_gradient_matches_pytorch():
    import torch
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8, 20, 20)).astype(np.float32)
    g = rng.standard_normal((4, 8, 10, 10)).astype(np.float32)
    ours = Tensor(x, requires_grad=True)
    (ours.max_pool2d(2) * Tensor(g)).sum().backward()
    theirs = torch.tensor(x, requires_grad=True)
    (torch.nn.functional.max_pool2d(theirs, 2) * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_max_pool_gradient_splits_ties_evenly():
    """A window of equal values shares its gradient among them (tinygrad's rule): each of the
    four gets a quarter, a window with one maximum gives it all."""
    x = np.zeros((1, 1, 4, 4), np.float32)
    x[0, 0, 0, 0] = 1.0  # the top-left window has one maximum; the others are ties of zeros
    ours = Tensor(x, requires_grad=True)
    ours.max_pool2d(2).sum().backward()
    want = np.full((4, 4), 0.25, np.float32)
    want[:2, :2] = 0.0
    want[0, 0] = 1.0
    np.testing.assert_array_equal(ours.grad.numpy()[0, 0], want)
