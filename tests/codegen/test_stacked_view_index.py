"""Indices through a stack of views that no stride can merge (reshape a permuted range, flip,
repeat) nest each view's index inside the next one's divisions. Written out, the kernel text grew
exponentially with the stack (200 KB at 7 levels); the C-style renderers declare each repeated
sub-expression once, so it grows linearly. Values and gradients against PyTorch.
"""
import numpy as np
import pytest

from tinylab import Tensor
from tinylab.engine.realize import render_for
from tinylab.ir import symbolic as sym
from tinylab.schedule.schedule import schedule

torch = pytest.importorskip("torch")
START = np.random.default_rng(3).uniform(-1, 1, 24).astype(np.float32)


def stacked(x, levels: int, permute):
    for _ in range(levels):
        x = permute(x.reshape(2, 3, 4), (2, 0, 1)).reshape(24).flip(0) * 1.0 + 1.0
    return x


def kernel_sources(levels: int, device: str) -> list[str]:
    x = stacked(Tensor(START), levels, lambda t, order: t.permute(order))
    return [render_for(item.ast, device) for item in schedule([x.node]).items
            if item.kind == "kernel"]


@pytest.mark.parametrize("device", ["CPU", "CL", "CUDA", "WEBGPU", "PYTHON"])
def test_source_grows_linearly(device):
    """Every level adds a bounded amount of text (about 2 KB on CPU with 8 gathered lanes);
    written out, 12 levels were megabytes."""
    sizes = [sum(len(s) for s in kernel_sources(levels, device)) for levels in (1, 6, 12)]
    per_level = (sizes[1] - sizes[0]) / 5
    assert sizes[2] <= sizes[0] + 11 * per_level * 1.25, sizes
    assert sizes[2] <= 4000 * 12, sizes


def check_against_torch(levels: int, device: str):
    start = Tensor(START, device=device, requires_grad=True)
    y = stacked(start, levels, lambda t, order: t.permute(order))
    (y * y).sum().backward()
    reference_start = torch.tensor(START, requires_grad=True)
    reference = stacked(reference_start, levels, lambda t, order: t.permute(*order))
    (reference * reference).sum().backward()
    np.testing.assert_allclose(y.numpy(), reference.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(start.grad.numpy(), reference_start.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("levels", range(1, 13))
def test_values_and_gradient_match_torch(levels):
    check_against_torch(levels, "CPU")


@pytest.mark.parametrize("device", ["PYTHON", "CL", "WEBGPU"])
def test_other_backends_match_torch(device):
    """The renderers that name sub-expressions their own way (Python, OpenCL, WGSL)."""
    from tinylab import Device
    if not Device[device].available:
        pytest.skip(f"{device} does not run here")  # rendering is checked above
    check_against_torch(12, device)


def test_small_repeats_stay_written_out():
    """Naming kicks in only where it at least halves the text: (g//3) read twice stays
    inline; a sub-expression nested in the divisions of another repeated one is named, inner
    first."""
    g = sym.var("g", 0, 99)
    assert sym.repeated_parts([(g // 3) % 4 + (g // 3) // 4]) == []
    inner = (g // 3) % 5 + g // 7
    middle = inner % 3 + (inner // 3) * 2 + g
    outer = (middle % 4) * 5 + (middle // 4) % 6 + (inner % 2)
    assert sym.repeated_parts([outer]) == [inner, middle]
    assert sym.render(outer, names={inner: "a", middle: "b"}) == "(((b//4)%6)+(a%2)+(b%4)*5)"
    assert sym.render(middle, names={inner: "a"}) == "(g+(a//3)*2+(a%3))"
