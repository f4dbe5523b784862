"""A vector access's per-lane indices (codegen/linearize.py) are built once with the lane as a
variable, then each lane substituted (`substituted_lanes`), not built lane by lane through the
view stack (`built_lanes`, the way it was: three quarters of planning a cold CNN step). The two
must give the very same expressions, so the kernels stay byte-identical: compared here on whole
kernels (movement chains that stack views, conv backward, padding, flips, strided slices) for
every renderer family, on random view stacks lane by lane, and on values against numpy.
"""
import numpy as np
import pytest

from tinylab import Tensor
from tinylab.codegen import linearize as linearize_module
from tinylab.engine.realize import REALIZED, render_for
from tinylab.ir import symbolic as sym
from tinylab.ir.view import ViewStack, view_index
from tinylab.schedule.schedule import schedule

RNG = np.random.default_rng(53)


def _data(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _compositions():
    """(name, a function of fresh realized inputs -> lazy result, numpy reference)."""
    a, b = _data(4, 6, 10), _data(3, 2, 5, 5)
    w, img = _data(8, 3, 3, 3), _data(2, 3, 12, 12)
    yield "permute_reshape_chain", (a,), \
        lambda x: x.permute(2, 0, 1).reshape(10, 24).flip(1)[:, 3:19].reshape(4, 4, 10).exp(), \
        lambda x: np.exp(np.flip(x.transpose(2, 0, 1).reshape(10, 24), 1)[:, 3:19].reshape(4, 4, 10))
    yield "pad_then_index", (b,), \
        lambda x: (x.pad(((0, 0), (1, 1), (2, 0), (0, 3)))[1:, :, 1:6, ::2] * 2).relu(), \
        lambda x: np.maximum(np.pad(x, ((0, 0), (1, 1), (2, 0), (0, 3)))[1:, :, 1:6, ::2] * 2, 0)
    yield "expand_reshape_sum", (a,), \
        lambda x: x[:, :1].expand(4, 6, 10).reshape(24, 10).permute(1, 0).sum(1), \
        lambda x: np.broadcast_to(x[:, :1], (4, 6, 10)).reshape(24, 10).T.sum(1)
    yield "conv_forward", (img, w), lambda x, k: x.conv2d(k, padding=1).relu(), \
        lambda x, k: np.maximum(_conv_reference(x, k, 1), 0)
    yield "windows_max", (img,), lambda x: x.max_pool2d((3, 3), stride=2), _pool_reference


def _conv_reference(x, k, pad):
    """Cross-correlation (PyTorch's conv2d) in float64, stride 1."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kh, kw = k.shape[2:]
    out = np.zeros((x.shape[0], k.shape[0], x.shape[2] - kh + 1, x.shape[3] - kw + 1))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i:i + out.shape[2], j:j + out.shape[3]]
            out += np.einsum("nchw,oc->nohw", patch, k[:, :, i, j].astype(np.float64))
    return out


def _pool_reference(x):
    """3x3 windows, stride 2, no padding."""
    rows, cols = (x.shape[2] - 3) // 2 + 1, (x.shape[3] - 3) // 2 + 1
    windows = [x[:, :, i:i + 2 * rows:2, j:j + 2 * cols:2] for i in range(3) for j in range(3)]
    return np.max(windows, axis=0)


def _sources(fn, inputs, device):
    tensors = [Tensor(v).realize() for v in inputs]
    out = fn(*tensors)
    items = schedule([out.node], realized=REALIZED).items
    return [render_for(item.ast, device) for item in items if item.kind == "kernel"]


def _lane_by_lane(monkeypatch):
    monkeypatch.setattr(linearize_module._Builder, "substituted_lanes",
                        linearize_module._Builder.built_lanes)


@pytest.mark.parametrize("device", ["CPU", "CL", "WEBGPU", "PYTHON"])
def test_kernels_are_the_same_either_way(device, monkeypatch):
    for name, inputs, fn, _ in _compositions():
        substituted = _sources(fn, inputs, device)
        with monkeypatch.context() as patch:
            _lane_by_lane(patch)
            built = _sources(fn, inputs, device)
        assert substituted == built, name


def test_backward_of_a_strided_conv_is_the_same_either_way(monkeypatch):
    """Conv backward: the gathers of three-view stacks behind most of a CNN step's planning."""
    x, k = Tensor(_data(2, 4, 11, 11), requires_grad=True), Tensor(_data(6, 4, 3, 3),
                                                                    requires_grad=True)
    x.conv2d(k, stride=2, padding=1).square().sum().backward()
    nodes = [x.grad.node, k.grad.node]
    items = [i for i in schedule(nodes, realized=REALIZED).items if i.kind == "kernel"]
    substituted = [render_for(i.ast, "CPU") for i in items]
    _lane_by_lane(monkeypatch)
    assert [render_for(i.ast, "CPU") for i in items] == substituted


@pytest.mark.parametrize("name", [c[0] for c in _compositions()])
def test_values_against_numpy(name):
    _, inputs, fn, reference = next(c for c in _compositions() if c[0] == name)
    got = fn(*[Tensor(v) for v in inputs]).numpy()
    np.testing.assert_allclose(got, reference(*inputs), rtol=1e-5, atol=1e-6)


def _random_stack(rng) -> ViewStack:
    """A stack of views from random movement ops over a small contiguous buffer."""
    shape = tuple(int(s) for s in rng.integers(2, 6, size=3))
    stack = ViewStack.contiguous(shape)
    for _ in range(int(rng.integers(2, 6))):
        step = rng.integers(0, 5)
        current = stack.shape
        if step == 0:
            stack = stack.permute(tuple(rng.permutation(len(current))))
        elif step == 1:
            total = int(np.prod(current))
            splits = [d for d in (2, 3, 4, 5, 6) if total % d == 0]
            d = int(rng.choice(splits)) if splits else 1
            stack = stack.reshape((total // d, d) if d > 1 else (total,))
        elif step == 2:
            stack = stack.pad(tuple((int(rng.integers(0, 2)), int(rng.integers(0, 3)))
                                    for _ in current))
        elif step == 3:
            stack = stack.shrink(tuple((1, s) if s > 2 else (0, s) for s in current))
        else:
            stack = stack.flip(tuple(i for i in range(len(current)) if rng.integers(0, 2)))
    return stack


def _truth(stack, idxs, env):
    """The buffer index and validity of a view stack at every point of env, unsimplified:
    each view's index and mask applied in order (ViewStack.to_index), then evaluated."""
    index, valid = stack.to_index(idxs)
    return sym.evaluate(index, env), sym.evaluate_cond(valid, env)


def _check_random_stack(seed: int) -> tuple[int, int]:
    """(lanes written as built, lanes) for one random stack, after checking values. On random
    view stacks (the lane strides a random dimension, the others are loop
    variables), each lane's substituted index has the same validity as the unsimplified
    index and, wherever valid, the same value, at every loop point; and it equals the index
    built at that lane, as an expression, in most stacks (not all: simplifying with the lane
    as a variable can leave a differently written but equal expression)."""
    rng = np.random.default_rng(seed)
    stack = _random_stack(rng)
    shape = stack.shape
    dim = int(rng.integers(0, len(shape)))
    width = min(8, shape[dim])
    steps = shape[dim] // width
    sizes = [steps if d == dim else shape[d] for d in range(len(shape))]
    loops = [sym.var(f"g{d}", 0, n - 1) for d, n in enumerate(sizes)]
    grid = np.meshgrid(*[np.arange(n) for n in sizes], indexing="ij")
    env = {f"g{d}": grid[d] for d in range(len(shape))}

    def idxs(lane):
        return [loops[d] * width + lane if d == dim else loops[d] for d in range(len(shape))]
    lane_var = sym.var("vlane", 0, width - 1)
    index, valid = view_index(stack, idxs(lane_var))
    atom = lane_var.as_atom()
    same = 0
    for lane in range(width):
        mine = sym.substitute(index, {atom: sym.const(lane)})
        mine_valid = sym.substitute_cond(valid, {atom: sym.const(lane)})
        true_index, true_valid = _truth(stack, idxs(lane), env)
        ok = np.broadcast_to(true_valid, grid[0].shape)
        assert np.array_equal(np.broadcast_to(sym.evaluate_cond(mine_valid, env), ok.shape), ok)
        got = np.broadcast_to(sym.evaluate(mine, env), ok.shape)
        assert np.array_equal(got[ok], np.broadcast_to(true_index, ok.shape)[ok]), \
            (str(stack), lane, str(mine))
        same += (mine, mine_valid) == view_index(stack, idxs(lane))
    return same, width


@pytest.mark.parametrize("seed", range(60))
def test_random_stacks_lane_by_lane(seed):
    _check_random_stack(seed)


def test_most_random_lanes_are_written_as_built():
    """Over 300 random stacks at least 85% of lanes come out as the very expressions that
    building them lane by lane gives (3000 stacks: 90% of stacks alike in every lane); the
    real kernels above: all of them."""
    counts = [_check_random_stack(seed) for seed in range(1000, 1300)]
    same, total = sum(s for s, _ in counts), sum(w for _, w in counts)
    assert same >= 0.85 * total, (same, total)
