"""Long runs of movement ops lower in work linear in their length: a chain of pad / exp2 / shrink
levels (every exp2 read through the pads and shrinks of all the levels above it) realizes to
numpy's values, and lowering applies a number of movement ops that grows linearly with it.
"""
import numpy as np
import pytest

from tinylab import Tensor
from tinylab.schedule import graph
from tinylab.schedule.schedule import schedule

START = np.random.default_rng(1).uniform(-1, 1, 16).astype(np.float32)
OFFSET = np.random.default_rng(2).uniform(-0.3, 0.3, 16).astype(np.float32)


def pad_exp2_shrink(levels: int):
    """`levels` times x = (exp2(pad(x))[1:-1] - 1) * 0.5 + offset, in tinylab and numpy."""
    x, offset = Tensor(START), Tensor(OFFSET)
    expected = START.copy()
    for _ in range(levels):
        x = (x.pad(((1, 1),)).exp2()[1:-1] - 1.0) * 0.5 + offset
        padded = np.pad(expected, 1)
        expected = ((np.exp2(padded)[1:-1] - np.float32(1)) * np.float32(0.5) + OFFSET)
    return x, expected.astype(np.float32)


def test_two_thousand_levels_give_numpys_values():
    x, expected = pad_exp2_shrink(2000)
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-5, atol=1e-6)


def shifted_chain(values: np.ndarray, levels: int) -> np.ndarray:
    """numpy's value of `levels` times x = exp2(pad(x, (2, 1)))[1:-2] * 0.5 (a shift right)."""
    for _ in range(levels):
        values = np.exp2(np.concatenate([[0.0], values[:-1]])) * 0.5
    return values


@pytest.mark.parametrize("levels", [1, 2, 7, 40])
def test_shifting_chains_value_and_gradient(levels):
    """Each level shifts by one, so the padding (exp2(0) = 1 there) enters the value; the
    gradient against central differences of the float64 composition."""
    start = Tensor(START, requires_grad=True)
    x = start
    for _ in range(levels):
        x = x.pad(((2, 1),)).exp2()[1:-2] * 0.5
    x.sum().backward()
    start64, eps, grad = START.astype(np.float64), 1e-6, np.zeros(16)
    for k in range(16):
        bump = np.zeros(16)
        bump[k] = eps
        grad[k] = (shifted_chain(start64 + bump, levels).sum()
                   - shifted_chain(start64 - bump, levels).sum()) / (2 * eps)
    np.testing.assert_allclose(x.numpy(), shifted_chain(start64, levels), rtol=1e-5)
    np.testing.assert_allclose(start.grad.numpy(), grad, rtol=1e-4, atol=1e-6)


def test_lowering_work_grows_linearly(monkeypatch):
    """Movement ops applied while scheduling the chain, counted at 500, 1,000 and 2,000 levels:
    doubling the chain at most doubles the count (it was quadratic: each level's exp2 applied
    every op above it)."""
    applied = []
    original = graph.apply_movement

    def counting(view, op, arg):
        applied.append(op)
        return original(view, op, arg)

    monkeypatch.setattr(graph, "apply_movement", counting)
    counts = []
    for levels in (500, 1000, 2000):
        applied.clear()
        x, _ = pad_exp2_shrink(levels)
        schedule([x.node])
        counts.append(len(applied))
    assert counts[0] > 0
    assert counts[1] <= 2 * counts[0] + 16 and counts[2] <= 2 * counts[1] + 16, counts
    assert counts[2] < 10 * 2000, counts
