"""Deep graphs walk iteratively: at Python's default recursion limit a chain of 20,000
elementwise ops realizes (CPU; 5,000 on PYTHON and CL), backpropagates, renders for every backend
and shows in the inspector, all against numpy; and no tinylab module touches the recursion limit.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

import tinylab
from tinylab import Context, Device, Tensor, inspection
from tinylab.engine.realize import render_for
from tinylab.ir.evaluate import evaluate
from tinylab.schedule.schedule import schedule

PYTHON_DEFAULT_LIMIT = 1000


@pytest.fixture
def default_recursion_limit():
    """Run the test at Python's default limit, whatever pytest or a plugin set."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(PYTHON_DEFAULT_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


START = np.random.default_rng(0).random(16, dtype=np.float32)


def chain(length: int, device: str = "CPU", requires_grad: bool = False):
    """A chain of `length` ops alternating +0.0001 and *1.0001 (one fused kernel), with its
    float64 numpy value and d sum / d input."""
    x = Tensor(START, device=device, requires_grad=requires_grad)
    y, expected, slope = x, START.astype(np.float64), 1.0
    for i in range(length):
        if i % 2:
            y, expected, slope = y * 1.0001, expected * 1.0001, slope * 1.0001
        else:
            y, expected = y + 0.0001, expected + 0.0001
    return x, y, expected, slope


def test_no_tinylab_module_touches_the_recursion_limit(default_recursion_limit):
    source = Path(tinylab.__file__).parent
    callers = [str(p) for p in source.rglob("*.py") if "setrecursionlimit" in p.read_text()]
    assert callers == []
    _, y, expected, _ = chain(5000)  # the kernel of the PYTHON / CL test: compiled once
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-4)
    assert sys.getrecursionlimit() == PYTHON_DEFAULT_LIMIT


def test_a_20000_op_chain_realizes_and_backpropagates_on_the_cpu(default_recursion_limit):
    x, y, expected, slope = chain(20000, requires_grad=True)
    assert len(schedule([y.node]).kernels) == 1
    np.testing.assert_allclose(evaluate(y.node), expected, rtol=1e-3)  # the numpy oracle too
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-3)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(16, slope), rtol=1e-3)
    assert sys.getrecursionlimit() == PYTHON_DEFAULT_LIMIT


@pytest.mark.parametrize("device", ["PYTHON", "CL"])
def test_a_5000_op_chain_realizes_and_backpropagates(device, default_recursion_limit):
    if not Device[device].available:
        pytest.skip(f"no {device} device")
    x, y, expected, slope = chain(5000, device, requires_grad=True)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-4)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(16, slope), rtol=1e-4)


def test_deep_unary_chain_with_padding_masks(default_recursion_limit):
    """exp2 under a pad needs a validity mask at each level (lowering's NOT_ZERO_AT_ZERO)."""
    x, expected = Tensor(START), START.astype(np.float64)
    for _ in range(300):
        x = x.pad(((1, 1),)).exp2().shrink(((1, 17),)) * 0.5
        expected = np.exp2(expected) * 0.5
    x, expected = x.log2(), np.log2(expected)
    for _ in range(1200):
        x = (x * 0.5 + 0.25).exp2().log2()
        expected = np.log2(np.exp2(expected * 0.5 + 0.25))
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-3)


def test_a_deep_kernel_renders_for_every_backend(default_recursion_limit):
    _, y, _, _ = chain(5000)
    (kernel,) = schedule([y.node]).kernels
    for device in ("CPU", "PYTHON", "CL", "CUDA", "METAL", "WEBGPU"):
        source = render_for(kernel.ast, device)
        assert "1.0001" in source and len(source) > 5000 * 10, device  # every op is in it


def test_inspector_shows_a_deep_kernel(default_recursion_limit):
    _, y, expected, _ = chain(1500)
    with Context(DEV="CPU"), tinylab.trace() as recorded:
        np.testing.assert_allclose(y.numpy(), expected, rtol=1e-4)
    (name,) = [k.name for k in recorded.kernels]
    text = inspection.to_text(recorded, source=True)
    assert name in text and "1.0001" in text
    assert name in inspection.to_html(recorded)
