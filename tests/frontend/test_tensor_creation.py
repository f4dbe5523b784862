"""Creation: constants and ranges against PyTorch (values and dtypes, tinygrad's int32 default),
and the random functions by their distribution statistics, ranges and seeding (not values)."""
import math

import numpy as np
import pytest
import torch

from tinylab import Tensor, dtypes

CONSTANTS = [
    ("zeros", lambda: Tensor.zeros(2, 3), torch.zeros(2, 3)),
    ("zeros_tuple", lambda: Tensor.zeros((2, 0)), torch.zeros(2, 0)),
    ("ones_int", lambda: Tensor.ones(3, dtype=dtypes.int32), torch.ones(3, dtype=torch.int32)),
    ("full_int", lambda: Tensor.full((2, 2), 7), torch.full((2, 2), 7, dtype=torch.int32)),
    ("full_float", lambda: Tensor.full((3,), -2.5), torch.full((3,), -2.5)),
    ("full_bool", lambda: Tensor.full((2,), True), torch.full((2,), True)),
    ("empty", lambda: Tensor.empty(2, 2).shape, (2, 2)),
    ("zeros_like", lambda: Tensor([[1, 2]]).zeros_like(), torch.zeros(1, 2, dtype=torch.int32)),
    ("ones_like_dtype", lambda: Tensor([1, 2]).ones_like(dtype="float32"), torch.ones(2)),
    ("full_like", lambda: Tensor([1.0, 2.0]).full_like(4), torch.full((2,), 4.0)),
    ("empty_like", lambda: Tensor([1.0, 2.0]).empty_like().shape, (2,)),
    ("arange", lambda: Tensor.arange(5), torch.arange(5, dtype=torch.int32)),
    ("arange_start_step", lambda: Tensor.arange(1, 10, 3), torch.arange(1, 10, 3,
                                                                       dtype=torch.int32)),
    ("arange_float", lambda: Tensor.arange(0, 1, 0.1), torch.arange(0, 1, 0.1)),
    ("arange_negative", lambda: Tensor.arange(2.5, -1, -0.5), torch.arange(2.5, -1, -0.5)),
    ("arange_empty", lambda: Tensor.arange(3, 3), torch.arange(3, 3, dtype=torch.int32)),
    ("arange_long", lambda: Tensor.arange(70000)[-3:], torch.arange(69997, 70000,
                                                                    dtype=torch.int32)),
    ("arange_dtype", lambda: Tensor.arange(4, dtype="float16"), torch.arange(4,
                                                                             dtype=torch.half)),
    ("linspace", lambda: Tensor.linspace(-1, 2, 7), torch.linspace(-1, 2, 7)),
    ("linspace_one", lambda: Tensor.linspace(-1, 2, 1), torch.linspace(-1, 2, 1)),
    ("linspace_zero", lambda: Tensor.linspace(0, 1, 0), torch.linspace(0, 1, 0)),
    ("linspace_int", lambda: Tensor.linspace(0, 10, 5, dtype="int32"),
     torch.linspace(0, 10, 5, dtype=torch.int32)),
    ("eye", lambda: Tensor.eye(3), torch.eye(3)),
    ("eye_rectangular", lambda: Tensor.eye(2, 4), torch.eye(2, 4)),
    ("eye_empty", lambda: Tensor.eye(0), torch.eye(0)),
]


@pytest.mark.parametrize("make,expected", [c[1:] for c in CONSTANTS], ids=[c[0] for c in CONSTANTS])
def test_constants_and_ranges(make, expected):
    out = make()
    if isinstance(expected, tuple):
        assert out == expected
        return
    ours = out.numpy()
    assert ours.dtype == expected.numpy().dtype
    np.testing.assert_allclose(ours, expected.numpy(), rtol=1e-6, atol=1e-6)


N = 20000  # samples for the statistics below: standard error of a mean about 0.007 * std

RANDOM = [
    # name, make, (mean, std, low, high) the distribution has
    ("rand", lambda: Tensor.rand(N), (0.5, 1 / math.sqrt(12), 0.0, 1.0)),
    ("randn", lambda: Tensor.randn(100, N // 100), (0.0, 1.0, -math.inf, math.inf)),
    ("normal", lambda: Tensor.normal(N, mean=3.0, std=0.5), (3.0, 0.5, -math.inf, math.inf)),
    ("uniform", lambda: Tensor.uniform(N, low=-2.0, high=6.0), (2.0, 8 / math.sqrt(12), -2, 6)),
    ("randint", lambda: Tensor.randint(N, low=-3, high=4),
     (0.0, math.sqrt((7 ** 2 - 1) / 12), -3, 3)),
    ("scaled_uniform", lambda: Tensor.scaled_uniform(100, N // 100),
     (0.0, N ** -0.5 / math.sqrt(3), -N ** -0.5, N ** -0.5)),
    ("glorot_uniform", lambda: Tensor.glorot_uniform(100, N // 100),
     (0.0, math.sqrt(6 / 300) / math.sqrt(3), -math.sqrt(6 / 300), math.sqrt(6 / 300))),
    ("kaiming_uniform", lambda: Tensor.kaiming_uniform(N // 100, 100, a=math.sqrt(5)),
     (0.0, 1 / math.sqrt(3 * 100), -1 / 10, 1 / 10)),
    ("kaiming_normal", lambda: Tensor.kaiming_normal(N // 100, 100, a=0.0),
     (0.0, math.sqrt(2 / 100), -math.inf, math.inf)),
    ("rand_like", lambda: Tensor.zeros(N).rand_like(), (0.5, 1 / math.sqrt(12), 0.0, 1.0)),
    ("randn_like", lambda: Tensor.zeros(N).randn_like(), (0.0, 1.0, -math.inf, math.inf)),
]


@pytest.mark.parametrize("make,stats", [r[1:] for r in RANDOM], ids=[r[0] for r in RANDOM])
def test_random_distribution_statistics(make, stats):
    mean, std, low, high = stats
    values = make().numpy().astype(np.float64).reshape(-1)
    assert abs(values.mean() - mean) < 5 * std / math.sqrt(values.size)
    assert abs(values.std() - std) < 0.03 * std
    assert values.min() >= low and values.max() <= high
    if math.isfinite(low):  # the range is used: both ends are approached
        span = high - low
        assert values.min() < low + 0.01 * span and values.max() > high - 0.01 * span


def test_random_kinds_and_dtypes():
    assert Tensor.rand(3).dtype == dtypes.float32
    assert Tensor.randint(3, high=5).dtype == dtypes.int32
    assert Tensor.rand(2, 3, dtype="float16").numpy().dtype == np.float16
    assert Tensor.randn(4, requires_grad=True).requires_grad
    assert Tensor.rand(0, 3).shape == (0, 3)
    counts = np.bincount(Tensor.randint(6000, low=0, high=3).numpy(), minlength=3)
    assert counts.min() > 1800  # each of the 3 values about 2000 times


def test_randn_is_normal_in_its_tails():
    values = Tensor.randn(N).numpy()
    assert abs(np.mean(np.abs(values) > 1.96) - 0.05) < 0.01
    assert abs(np.mean(values ** 4) - 3.0) < 0.3  # the kurtosis of a normal distribution


def test_manual_seed_makes_draws_repeatable():
    Tensor.manual_seed(1234)
    first = [Tensor.rand(5).numpy(), Tensor.randn(3).numpy()]
    Tensor.manual_seed(1234)
    again = [Tensor.rand(5).numpy(), Tensor.randn(3).numpy()]
    Tensor.manual_seed(99)
    other = Tensor.rand(5).numpy()
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.array_equal(first[0], other)
    assert not np.array_equal(first[0][:3], first[1])


def test_consecutive_draws_are_independent():
    a, b = Tensor.rand(N).numpy(), Tensor.rand(N).numpy()
    assert not np.array_equal(a, b)
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.05
    assert abs(np.corrcoef(a[:-1], a[1:])[0, 1]) < 0.05  # neighbours are uncorrelated too


def test_dropout_in_training_keeps_the_expected_fraction_and_scales():
    x = Tensor.ones(N)
    with Tensor.train():
        out = x.dropout(0.25).numpy()
    kept = out != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(out[kept], 1 / 0.75, rtol=1e-6)
    np.testing.assert_array_equal(x.dropout(0.25).numpy(), np.ones(N, np.float32))  # eval: none


def test_attention_dropout_applies_only_while_training():
    rows, keys = 2000, 8
    q, k, v = Tensor.zeros(rows, 4), Tensor.zeros(keys, 4), Tensor.ones(keys, 1)  # uniform weights
    np.testing.assert_allclose(q.scaled_dot_product_attention(k, v, dropout_p=0.5).numpy(), 1.0,
                               rtol=1e-6)
    with Tensor.train():
        out = q.scaled_dot_product_attention(k, v, dropout_p=0.5).numpy()
    kept = out * keys / 2  # each kept weight 1/keys is scaled by 1/(1 - p) = 2
    np.testing.assert_allclose(kept, np.round(kept), atol=1e-5)
    assert abs(out.mean() - 1.0) < 0.03 and out.std() > 0.2
