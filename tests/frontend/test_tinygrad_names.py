"""Names tinygrad code uses that tinylab lacked (issue 52), each against PyTorch, numpy or
tinygrad's documented rule: bfloat16 (stored as uint16 bits, computed in float32, rounded to
nearest even: bit for bit with PyTorch's), dtypes.is_float / is_int / finfo, topk(sorted_=),
randperm, multinomial, is_param_ and LARS."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch_reference import aten_kernels

from tinylab import Tensor, dtypes, nn

BF = dtypes.bfloat16
RNG = np.random.default_rng(0)
X = (RNG.standard_normal(512) * 8).astype(np.float32)
Y = (RNG.standard_normal(512) * 2).astype(np.float32)
SPECIAL = np.array([0.0, -0.0, 1.0, 3.14159, -2.5e10, 1.00390625, 1.01171875, 1.0 + 2 ** -8,
                    3.39e38, 3.4e38, -3.4e38, 1e-40, -1e-45, np.inf, -np.inf, 65504.0, 1.5e-5],
                   np.float32)


def _bits(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 \
            else t.numpy()
    return t.bitcast(dtypes.uint16).numpy() if t.dtype == BF else t.numpy()


def test_float32_to_bfloat16_rounds_to_nearest_even_bit_for_bit():
    values = np.concatenate([SPECIAL, X, np.array([1 + 2 ** -8 + 2 ** -9], np.float32)])
    np.testing.assert_array_equal(_bits(Tensor(values).cast(BF)),
                                  _bits(torch.tensor(values).bfloat16()))
    ours = Tensor(values, dtype=BF)   # made from the list: the same rounding, in a kernel
    np.testing.assert_array_equal(_bits(ours), _bits(torch.tensor(values).bfloat16()))
    np.testing.assert_array_equal(ours.numpy(), torch.tensor(values).bfloat16().float().numpy())
    assert np.isnan(Tensor([np.nan], dtype=BF).numpy()).all()   # NaN stays NaN (bits 0x7FC0)


@pytest.mark.parametrize("dtype, torch_dtype", [(dtypes.float16, torch.float16),
                                                (dtypes.float64, torch.float64),
                                                (dtypes.int32, torch.int32),
                                                (dtypes.int8, torch.int8),
                                                (dtypes.bool, torch.bool)])
def test_casts_to_and_from_bfloat16_match_torch(dtype, torch_dtype):
    source = torch.tensor(X * 100).to(torch_dtype)
    np.testing.assert_array_equal(_bits(Tensor(source.numpy()).cast(BF)),
                                  _bits(source.bfloat16()))
    bf = torch.tensor(X).bfloat16()
    ours = Tensor(X).cast(BF).cast(dtype).numpy()
    np.testing.assert_array_equal(ours, bf.to(torch_dtype).numpy())


EXACT = {  # name: (tinylab, torch) on bfloat16 tensors a, b: one rounding of an exact result
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "mul then add": (lambda a, b: a * b + a, lambda a, b: a * b + a),  # rounded after each
    "maximum": (lambda a, b: a.maximum(b), torch.maximum),
    "compare": (lambda a, b: a < b, lambda a, b: a < b),
    "where": (lambda a, b: (a < b).where(a, b), lambda a, b: torch.where(a < b, a, b)),
    "neg relu": (lambda a, b: (-a).relu(), lambda a, b: (-a).relu()),
    "sqrt": (lambda a, b: a.abs().sqrt(), lambda a, b: a.abs().sqrt()),
    "sum": (lambda a, b: a.reshape(8, 64).sum(1), lambda a, b: a.reshape(8, 64).sum(1)),
    "mean": (lambda a, b: a.reshape(8, 64).mean(1), lambda a, b: a.reshape(8, 64).mean(1)),
    "matmul": (lambda a, b: a.reshape(16, 32) @ b.reshape(32, 16),
               lambda a, b: a.reshape(16, 32) @ b.reshape(32, 16)),
}
NEAR = {  # float32 results that are themselves approximations (a * (1/b), exp2 polynomials)
    "div": (lambda a, b: a / b, lambda a, b: a / b),
    "exp": (lambda a, b: (a / 8).exp(), lambda a, b: (a / 8).exp()),
    "tanh": (lambda a, b: a.tanh(), lambda a, b: a.tanh()),
    "sigmoid": (lambda a, b: a.sigmoid(), lambda a, b: a.sigmoid()),
    "silu": (lambda a, b: a.silu(), lambda a, b: F.silu(a)),
    "gelu": (lambda a, b: a.gelu(), lambda a, b: F.gelu(a)),
    "softmax": (lambda a, b: a.reshape(8, 64).softmax(1), lambda a, b: a.reshape(8, 64).softmax(1)),
}


def _run_bf16(ops, name):
    ours, theirs = ops[name]
    a, b = Tensor(X).cast(BF), Tensor(Y).cast(BF)
    out = ours(a, b)
    assert out.dtype == (dtypes.bool if name == "compare" else BF)
    with aten_kernels():  # PyTorch's own kernels, the same on every host (torch_reference.py)
        expected = theirs(torch.tensor(X).bfloat16(), torch.tensor(Y).bfloat16())
    return _bits(out), _bits(expected)


@pytest.mark.parametrize("name", list(EXACT))
def test_one_op_on_bfloat16_gives_pytorchs_bits(name):
    ours, theirs = _run_bf16(EXACT, name)
    np.testing.assert_array_equal(ours, theirs, err_msg=name)


@pytest.mark.parametrize("name", list(NEAR))
def test_bfloat16_composites_round_once_within_one_unit_in_the_last_place(name):
    """Computed in float32 and rounded once, as PyTorch's kernels: the float32 results agree to
    a few float32 ulps, so the bfloat16 bits are equal or one apart where rounding straddles."""
    ours, theirs = _run_bf16(NEAR, name)
    apart = np.abs(ours.astype(np.int32) - theirs.astype(np.int32))
    assert apart.max() <= 1 and (apart == 0).mean() > 0.98, (name, apart.max())


def test_bfloat16_promotion_and_gradients():
    assert (Tensor([1.0], dtype=BF) + Tensor([1.0], dtype=dtypes.float16)).dtype == dtypes.float32
    assert (Tensor([1.0], dtype=BF) * 2).dtype == BF
    assert (Tensor([1], dtype=dtypes.int32) + Tensor([1.0], dtype=BF)).dtype == BF
    w = Tensor(X[:8], dtype=BF, requires_grad=True)
    (w * w).sum().backward()
    tw = torch.tensor(X[:8]).bfloat16().requires_grad_()
    (tw * tw).sum().backward()
    np.testing.assert_array_equal(_bits(w.grad), _bits(tw.grad))


def test_dtype_queries_and_finfo_are_tinygrads():
    assert dtypes.is_float(dtypes.bfloat16) and dtypes.is_float("float16")
    assert not dtypes.is_float(dtypes.int8) and dtypes.is_int(dtypes.uint8)
    assert not dtypes.is_int(dtypes.bool) and dtypes.is_unsigned(dtypes.uint16)
    for dtype, torch_dtype in ((dtypes.float16, torch.float16), (dtypes.bfloat16, torch.bfloat16),
                               (dtypes.float32, torch.float32), (dtypes.float64, torch.float64)):
        info = torch.finfo(torch_dtype)
        mantissa = round(-math.log2(info.eps))
        assert dtypes.finfo(dtype) == (info.bits - 1 - mantissa, mantissa)
    assert dtypes.floats == (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)


def test_topk_takes_tinygrads_sorted_():
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0], np.float32)
    for sorted_ in (True, False):
        values, indices = Tensor(x).topk(3, sorted_=sorted_)
        theirs = torch.tensor(x).topk(3)
        np.testing.assert_array_equal(values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(indices.numpy(), theirs.indices.numpy())


def test_randperm_is_a_permutation_and_each_position_is_uniform():
    Tensor.manual_seed(3)
    counts = np.zeros((5, 5))
    for _ in range(200):
        perm = Tensor.randperm(5).numpy()
        assert sorted(perm.tolist()) == list(range(5)) and perm.dtype == np.int32
        counts[np.arange(5), perm] += 1
    assert counts.min() > 20 and counts.max() < 65   # 40 expected per cell
    assert Tensor.randperm(0).shape == (0,)
    assert Tensor.randperm(4, dtype=dtypes.int64).dtype == dtypes.int64
    with pytest.raises(ValueError, match="randperm: n must be non-negative"):
        Tensor.randperm(-1)


def test_multinomial_draws_in_proportion_to_the_weights():
    Tensor.manual_seed(4)
    weights = np.array([[1.0, 0.0, 3.0, 6.0], [5.0, 5.0, 0.0, 0.0]], np.float32)
    draws = Tensor(weights).multinomial(4000, replacement=True).numpy()
    assert draws.shape == (2, 4000) and draws.dtype == np.int32
    for row, w in zip(draws, weights):
        share = np.bincount(row, minlength=4) / row.size
        np.testing.assert_allclose(share, w / w.sum(), atol=0.03)
    for _ in range(20):   # without replacement: distinct, never a zero weight
        picked = Tensor(weights[0]).multinomial(3).numpy()
        assert len(set(picked.tolist())) == 3 and 1 not in picked.tolist()
    with pytest.raises(ValueError, match="without replacement from 4 categories"):
        Tensor(weights).multinomial(5)
    with pytest.raises(ValueError, match="must be 1-D or 2-D"):
        Tensor(np.ones((2, 2, 2), np.float32)).multinomial(1)


def test_is_param_false_makes_a_buffer_the_optimizer_realizes_but_never_updates():
    weight = Tensor([1.0, 2.0])
    table = (Tensor([0.5, 0.25]) * 2).is_param_(False)
    assert weight.is_param and not table.is_param and table.is_param_() is table
    table.is_param_(False)
    optimizer = nn.optim.SGD([weight, table], lr=0.5)
    assert optimizer.params == [weight] and optimizer.buffers == [table]
    (weight * table).sum().backward()
    optimizer.step()
    np.testing.assert_array_equal(weight.numpy(), [0.5, 1.75])   # w - lr * table
    np.testing.assert_array_equal(table.numpy(), [1.0, 0.5])     # realized, unchanged
    assert weight.clone().is_param and not table.clone().is_param


def _lars_reference(p, grads, lr, momentum, wd, tcoef, nesterov, classic, pre_wd):
    """tinygrad's documented LARS rule in numpy, step by step."""
    p, b = p.astype(np.float64), np.zeros_like(p, np.float64)
    for g in grads:
        g = g.astype(np.float64)
        r1, r2 = np.linalg.norm(p), np.linalg.norm(g)
        r = (tcoef * r1 / (r2 + wd * r1) if r1 > 0 and r2 > 0 else 1.0) if tcoef else 1.0
        if pre_wd and wd:
            g = g + wd * p
        if classic:
            g = g * r * lr
        if momentum:
            b = momentum * b + g
            g = g + momentum * b if nesterov else b
        if not classic:
            g = g * r * lr
        if not pre_wd and wd:
            g = g + wd * lr * p
        p = p - g
    return p


@pytest.mark.parametrize("options", [{}, {"nesterov": True}, {"classic": False},
                                     {"pre_wd": False, "tcoef": 0.0}, {"momentum": 0.0}])
def test_lars_follows_tinygrads_rule(options):
    settings = {"lr": 0.3, "momentum": 0.9, "wd": 1e-2, "tcoef": 0.05, "nesterov": False,
                "classic": True, "pre_wd": True} | options
    start = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    grads = [np.cos(start * (k + 1)).astype(np.float32) for k in range(3)]
    p = Tensor(start.copy(), requires_grad=True)
    optimizer = nn.optim.LARS([p], lr=settings["lr"], momentum=settings["momentum"],
                              weight_decay=settings["wd"], tcoef=settings["tcoef"],
                              nesterov=settings["nesterov"], classic=settings["classic"],
                              pre_wd=settings["pre_wd"])
    for g in grads:
        p.grad = Tensor(g)
        optimizer.step()
    np.testing.assert_allclose(p.numpy(), _lars_reference(start, grads, **settings), rtol=1e-5,
                               atol=1e-6)
