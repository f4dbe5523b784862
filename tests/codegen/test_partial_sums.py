"""Partial sums (codegen/partial_sums.py): a reduce longer than LONG_CHAIN additions per
accumulator keeps a partial accumulator that is folded into the total, so no float32 chain grows
past about √n. Checked against float64 numpy and PyTorch: BatchNorm-style means, a single long
loop, max, padded vector lanes, a BLOCK reduce, the PYTHON and CL backends, gradients through a
pad and a slice, and the first training step of a small BatchNorm CNN."""
import math

import numpy as np
import pytest
import torch

from tinylab import Device, Tensor, nn
from tinylab.codegen.linear_ops import LinearOp
from tinylab.codegen.linearize import linearize
from tinylab.codegen.partial_sums import LONG_CHAIN, chain_lengths, split_long_chain
from tinylab.codegen.plan import KernelPlan, Opt
from tinylab.engine.realize import REALIZED
from tinylab.schedule.schedule import schedule

RNG = np.random.default_rng(11)


def _relative_error(got, want) -> float:
    want = np.asarray(want, np.float64)
    return float(np.abs(np.asarray(got, np.float64) - want).max() / np.abs(want).max())


def _chains(program) -> dict[int, int]:
    """Additions each accumulator takes between two restarts: the trips of the loops between
    its declaration and each update, summed over its updates."""
    trips, depth_of, chains = [], {}, {}
    for i, instr in enumerate(program.instrs):
        if instr.op == LinearOp.RANGE:
            trips.append(instr.arg[1])
        elif instr.op == LinearOp.END:
            trips.pop()
        elif instr.op == LinearOp.ACC:
            depth_of[i], chains[i] = len(trips), 0
        elif instr.op == LinearOp.ACC_UPDATE:
            acc = instr.src[0]
            chains[acc] += math.prod(trips[depth_of[acc]:])
    return chains


def _plan(fn, *arrays) -> KernelPlan:
    tensors = [Tensor(a).realize() for a in arrays]
    kernels = schedule([fn(*tensors).node], realized=REALIZED).kernels
    return KernelPlan.from_ast(kernels[-1].ast)


# ---- the plan: which loop restarts the partial sums ----------------------------------------
@pytest.mark.parametrize("shape, axes, opts", [
    ((64, 8, 24, 24), (0, 2, 3), [Opt("VECTORIZE", 2, 16), Opt("UNROLL", 2, 4)]),  # BN stats
    ((1 << 16,), None, []),                      # one long loop, split in two
    ((4096, 8), 0, [Opt("VECTORIZE", 0, 8)]),    # a column sum: one loop per output
    ((16, 12, 300), (1, 2), [Opt("UNROLL", 1, 4)]),  # merged into one loop
])
def test_no_accumulator_takes_a_long_chain(shape, axes, opts):
    plan = _plan(lambda t: t.sum(axes), np.ones(shape, np.float32)).apply_all(opts)
    total, _ = chain_lengths(plan)
    assert total > LONG_CHAIN
    program = linearize(plan)
    chains = _chains(program)
    assert len(chains) == 2, program.print()  # a total and its partial
    assert max(chains.values()) <= 2 * math.isqrt(total) + 64, (chains, total)
    assert program.name == plan.name  # splitting a loop keeps the kernel's name


def test_short_reduces_and_work_group_plans_keep_one_accumulator():
    short = _plan(lambda a, b: a @ b, *(np.ones((64, 64), np.float32),) * 2)
    assert chain_lengths(short)[0] <= LONG_CHAIN
    assert split_long_chain(short) == (short, None)
    assert len(_chains(linearize(short))) == 1
    long = _plan(lambda t: t.sum(), np.ones(1 << 14, np.float32))
    grouped = long.apply(Opt("GROUP", 0, 16))
    assert split_long_chain(grouped) == (grouped, None)  # a GPU group reduce combines its own


def test_a_prime_length_loop_a_max_and_an_integer_sum_keep_one_chain():
    plan = _plan(lambda t: t.sum(), np.ones(4099, np.float32))  # 4099 is prime: no split
    assert split_long_chain(plan) == (plan, None)
    for exact in (_plan(lambda t: t.max(), np.ones(1 << 14, np.float32)),
                  _plan(lambda t: t.sum(), np.ones(1 << 14, np.int32))):
        assert split_long_chain(exact) == (exact, None)  # exact in any order


# ---- numbers -------------------------------------------------------------------------------
def test_batchnorm_statistics_are_as_exact_as_pytorch():
    """The mean and variance of relu(conv) over (N, H, W), as BatchNorm computes them."""
    x = np.maximum(RNG.standard_normal((256, 8, 24, 24), dtype=np.float32) + 0.3, 0)
    mean, var = nn.BatchNorm(8).calc_stats(Tensor(x))
    x64 = x.astype(np.float64)
    want_mean = x64.mean((0, 2, 3))
    want_var = ((x64 - want_mean[None, :, None, None]) ** 2).mean((0, 2, 3))
    torch_mean = torch.from_numpy(x).mean((0, 2, 3)).numpy()
    assert _relative_error(mean.numpy(), want_mean) < 1e-6
    assert _relative_error(mean.numpy(), want_mean) <= 4 * _relative_error(torch_mean, want_mean)
    assert _relative_error(var.numpy(), want_var) < 1e-6


@pytest.mark.parametrize("n", [1 << 20, 3 * 5 * 7 * 11 * 13 * 16])
def test_one_long_sum_and_max(n):
    x = RNG.uniform(0.5, 1.5, n).astype(np.float32)
    assert _relative_error(Tensor(x).sum().numpy(), x.astype(np.float64).sum()) < 1e-6
    assert Tensor(x).max().numpy() == x.max()
    assert Tensor(-x).min().numpy() == (-x).min()


def test_padded_vector_lanes_and_a_block_reduce():
    """80 columns in 16-lane vectors (the last 16 masked), and a BLOCK split of the reduce whose
    blocks accumulate in the output buffer: both around partial sums."""
    a = RNG.uniform(0.5, 1.5, (8192, 80)).astype(np.float32)
    want = a.astype(np.float64).sum(0)
    for opts in ([Opt("VECTORIZE", 0, 16)], [Opt("VECTORIZE", 0, 16), Opt("BLOCK", 1, 4096)]):
        plan = _plan(lambda t: t.sum(0), a).apply_all(opts)
        assert len(_chains(linearize(plan))) == 2
    assert _relative_error(Tensor(a).sum(0).numpy(), want) < 1e-6


@pytest.mark.parametrize("device", ["PYTHON", "CL"])
def test_other_backends_run_partial_sums(device):
    if not Device[device].available:
        pytest.skip(f"no {device} device")
    x = RNG.uniform(0.5, 1.5, (6, 2048)).astype(np.float32)
    got = Tensor(x, device=device).sum(1).numpy()
    np.testing.assert_allclose(got, x.astype(np.float64).sum(1), rtol=1e-6)


def test_gradient_through_a_pad_and_a_slice_of_a_long_mean():
    x = RNG.standard_normal((64, 4, 30, 30), dtype=np.float32)
    t = Tensor(x, requires_grad=True)
    reference = torch.from_numpy(x).double().requires_grad_()
    for tensor, lib in ((t, "tinylab"), (reference, "torch")):
        if lib == "tinylab":
            y = tensor.pad(((0, 0), (0, 0), (2, 2), (2, 2)))[:, :, 1:-3, 3:-1]
        else:
            y = torch.nn.functional.pad(tensor, (2, 2, 2, 2))[:, :, 1:-3, 3:-1]
        centered = y - y.mean((0, 2, 3), keepdim=True) if lib == "torch" else \
            y - y.mean((0, 2, 3), keepdim=True)
        (centered * centered).mean((0, 2, 3)).sum().backward()
    assert _relative_error(t.grad.numpy(), reference.grad.numpy()) < 1e-5


def test_first_training_step_gradients_of_a_batchnorm_cnn_match_float64():
    """conv-relu-BatchNorm-maxpool-linear, batch 128: every gradient as exact as PyTorch's
    float32 ones, measured against PyTorch in float64 (long BatchNorm means made them 100x
    worse before partial sums)."""
    images = RNG.random((128, 1, 28, 28), dtype=np.float32)
    labels = RNG.integers(0, 10, 128)
    Tensor.manual_seed(5)
    conv, norm, linear = nn.Conv2d(1, 8, 5), nn.BatchNorm(8), nn.Linear(8 * 12 * 12, 10)
    params = [conv.weight, conv.bias, norm.weight, norm.bias, linear.weight, linear.bias]
    values = [p.numpy() for p in params]
    with Tensor.train():
        hidden = norm(conv(Tensor(images)).relu()).max_pool2d().flatten(1)
        linear(hidden).sparse_categorical_crossentropy(Tensor(labels.astype(np.int32))).backward()
    errors = {}
    for dtype in (torch.float32, torch.float64):
        w = [torch.tensor(v, dtype=dtype, requires_grad=True) for v in values]
        out = torch.nn.functional.conv2d(torch.from_numpy(images).to(dtype), w[0], w[1]).relu()
        out = torch.nn.functional.batch_norm(out, None, None, w[2], w[3], training=True)
        out = torch.nn.functional.max_pool2d(out, 2).flatten(1) @ w[4].T + w[5]
        torch.nn.functional.cross_entropy(out, torch.from_numpy(labels)).backward()
        errors[dtype] = [p.grad.numpy() for p in w]
    for param, got, f32, f64 in zip(params, [p.grad.numpy() for p in params],
                                    errors[torch.float32], errors[torch.float64]):
        ours, theirs = _relative_error(got, f64), _relative_error(f32, f64)
        assert ours <= max(10 * theirs, 1e-5), (param.shape, ours, theirs)
