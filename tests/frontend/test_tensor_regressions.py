"""Regression tests for the wrong numbers the parity rows found (issue 15), one per behaviour,
each against PyTorch or exact arithmetic. The rows in test_tensor_parity_*.py cover them too;
these name what broke."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from tinylab import Tensor, nn


def grad_of(fn, values, dtype=np.float32):
    x = Tensor(np.array(values, dtype), requires_grad=True)
    out = fn(x)
    (grad,) = out.sum().gradient(x)
    return out.numpy(), grad.numpy()


def torch_grad_of(fn, values, dtype=torch.float32):
    x = torch.tensor(values, dtype=dtype, requires_grad=True)
    out = fn(x)
    out.sum().backward()
    return out.detach().numpy(), x.grad.numpy()


def assert_like_torch(name, values, reference=torch, rtol=0.0, atol=0.0):
    """x.name() and its gradient equal reference.name(x) and PyTorch's gradient."""
    ours = grad_of(lambda x: getattr(x, name)(), values)
    theirs = torch_grad_of(lambda x: getattr(reference, name)(x), values)
    for what, o, t in zip(("value", "gradient"), ours, theirs):
        np.testing.assert_allclose(o, t, rtol=rtol, atol=atol, err_msg=f"{name} {what}")


def test_float_floordiv_mod_and_fmod_are_exact_at_integer_quotients():
    """41 * (1/41) is 0.99999994: 41 // 41 was 0 and 41 % 41 was 41."""
    x = np.arange(1, 1001, dtype=np.float32)
    ours, theirs = Tensor(x), torch.from_numpy(x)
    np.testing.assert_array_equal((ours // ours).numpy(), np.ones_like(x))
    np.testing.assert_array_equal((ours % ours).numpy(), np.zeros_like(x))
    np.testing.assert_array_equal(ours.fmod(ours).numpy(), np.zeros_like(x))
    multiple = ours * 7
    np.testing.assert_array_equal((multiple // ours).numpy(), (theirs * 7 // theirs).numpy())
    np.testing.assert_array_equal((-multiple % ours).numpy(), (-theirs * 7 % theirs).numpy())
    assert Tensor([41.0]).div(Tensor([41.0]), rounding_mode="trunc").item() == 1.0


def test_float_division_by_an_infinite_divisor_follows_pytorch():
    a = np.array([0.5, -0.5, 0.5, 2.0, -1.0, math.inf], np.float32)
    b = np.array([math.inf, math.inf, -math.inf, -math.inf, math.inf, 2.0], np.float32)
    ours, theirs = (Tensor(a), Tensor(b)), (torch.from_numpy(a), torch.from_numpy(b))
    for name in ("floor_divide", "remainder", "fmod"):
        method = {"floor_divide": "floordiv", "remainder": "mod"}.get(name, name)
        np.testing.assert_array_equal(getattr(ours[0], method)(ours[1]).numpy(),
                                      getattr(torch, name)(*theirs).numpy(), err_msg=name)


def test_less_equal_and_greater_equal_are_false_at_nan():
    x = Tensor([math.nan, 1.0, math.nan])
    y = Tensor([1.0, math.nan, math.nan])
    assert not (x <= y).numpy().any() and not (x >= y).numpy().any()
    assert not (x >= 0).numpy()[0] and not (0 <= x).numpy()[0]


@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_trigonometry_and_its_gradient_are_accurate_at_large_arguments(name):
    """cos was sin(pi/2 - x): at x = 1e4 that loses x's last digits, at 1e30 all of them."""
    assert_like_torch(name, [10000.5, -12345.25, 1e7, 1e30, -3e38, 0.5, 3.0], rtol=1e-4,
                      atol=1e-5)


def test_sinh_and_cosh_stay_finite_until_they_overflow():
    for name in ("sinh", "cosh"):
        assert_like_torch(name, [88.8, -88.8, 89.0, 1e30, -math.inf], rtol=1e-5)


@pytest.mark.parametrize("name, values", [("asin", [1.0, -1.0]), ("acos", [1.0, -1.0]),
                                          ("atanh", [1.0, -1.0]), ("acosh", [1.0]),
                                          ("atan", [math.inf, -math.inf]),
                                          ("erf", [math.inf, -math.inf])])
def test_gradients_at_the_ends_of_the_domain_match_pytorch(name, values):
    """inf at the ends of asin/acos/atanh/acosh (was NaN), 0 at ±inf for atan/erf (was NaN)."""
    assert_like_torch(name, values)


def test_acosh_below_one_and_sign_of_nan_follow_pytorch():
    assert math.isnan(Tensor([-1e30]).acosh().item())
    assert Tensor([math.nan]).sign().item() == torch.tensor([math.nan]).sign().item() == 0


@pytest.mark.parametrize("name", ["elu", "celu", "selu", "hardswish"])
def test_activation_gradients_are_finite_for_huge_inputs(name):
    """The unused exp branch of elu read 1e30 too: its inf times a 0 gradient was NaN."""
    assert_like_torch(name, [1e30, 1e20, 100.0, -100.0, 0.5], F, rtol=1e-6, atol=1e-30)


@pytest.mark.parametrize("name, values", [("relu6", [0.0, 6.0]), ("hardtanh", [-1.0, 1.0]),
                                          ("hardsigmoid", [-3.0, 3.0]),
                                          ("hardswish", [-3.0, 3.0])])
def test_piecewise_activation_gradients_at_their_bounds_match_pytorch(name, values):
    """relu6 was relu().minimum(6): the tie at 6 gave half the gradient."""
    assert_like_torch(name, values, F)


def test_max_and_min_gradients_go_to_the_nans():
    values = [1.0, math.nan, 2.0, math.nan]
    for name in ("max", "min"):
        ours = grad_of(lambda x: getattr(x, name)(), values)[1]
        theirs = torch_grad_of(lambda x: getattr(x, name)(), values)[1]
        np.testing.assert_array_equal(ours, theirs)


def test_float16_math_rounds_once_like_pytorch():
    """tan, atan, asin... of float16 are computed in float32: rounding each step of the
    polynomial to float16 gave tan(1.5625) = 1024 for PyTorch's 684.5, and atan gave float32."""
    values = np.array([1.5625, -1.5, 0.3, 1.0], np.float16)
    for name in ("tan", "atan", "asin", "acos", "erf", "tanh"):
        ours = getattr(Tensor(values), name)()
        theirs = getattr(torch, name)(torch.from_numpy(values))
        assert ours.dtype.name == "float16", name
        np.testing.assert_allclose(ours.numpy().astype(np.float32),
                                   theirs.numpy().astype(np.float32), rtol=2e-3, err_msg=name)


def test_half_precision_selects_compile_on_the_cpu():
    """gcc 12 turned float16 selects into zero-masked stores the assembler rejects."""
    x = Tensor(np.linspace(-2, 2, 20, dtype=np.float16).reshape(4, 5), requires_grad=True)
    (grad,) = (x.relu() * x.abs()).sum().gradient(x)
    reference = torch.from_numpy(x.numpy()).requires_grad_()
    (reference.relu() * reference.abs()).sum().backward()
    np.testing.assert_allclose(grad.numpy().astype(np.float32),
                               reference.grad.numpy().astype(np.float32), atol=1e-3)


def test_binary_crossentropy_costs_100_at_saturated_probabilities():
    p, y = np.array([0.0, 1.0, 0.5], np.float32), np.array([1.0, 0.0, 1.0], np.float32)
    ours = Tensor(p).binary_crossentropy(Tensor(y), reduction="none").numpy()
    theirs = F.binary_cross_entropy(torch.from_numpy(p), torch.from_numpy(y), reduction="none")
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-6)


def test_binary_crossentropy_with_logits_gradient_at_a_zero_logit():
    """A zero-initialized last layer gives logits of exactly 0: the gradient there was -y."""
    y = Tensor([0.0, 1.0, 0.25])
    grad = grad_of(lambda x: x.binary_crossentropy_logits(y, reduction="none"), [0.0, 0.0, 0.0])[1]
    np.testing.assert_allclose(grad, [0.5, -0.5, 0.25], rtol=1e-6)


def test_cross_entropy_with_a_minus_inf_logit_is_finite():
    logits = np.array([[-math.inf, 0.0, 1.0]], np.float32)
    ours = Tensor(logits).cross_entropy(Tensor([2])).item()
    theirs = F.cross_entropy(torch.from_numpy(logits), torch.tensor([2])).item()
    assert ours == pytest.approx(theirs, rel=1e-6)


def test_methods_taking_a_dim_accept_0d_tensors_like_pytorch():
    ours, theirs = Tensor(2.5), torch.tensor(2.5)
    assert ours.argmax(0).item() == theirs.argmax(0).item() == 0
    assert ours.argmin(-1).item() == 0
    for name in ("cumsum", "cumprod", "flip"):
        assert getattr(ours, name)(0).item() == getattr(theirs, name)(0).item() == 2.5, name
    assert ours.transpose(0, -1).item() == 2.5
    with pytest.raises(IndexError, match="roll"):
        ours.roll(1, 0)


def test_pad_and_masked_fill_values_take_the_tensor_dtype():
    x = Tensor([[1, 2]], dtype="int32")
    padded = x.pad((1, 0), value=-2.5)
    assert padded.dtype.name == "int32" and padded.tolist() == [[-2, 1, 2]]
    filled = Tensor([True, False]).masked_fill(Tensor([False, True]), 7)
    assert filled.dtype.name == "bool" and filled.tolist() == [True, True]


def test_lerp_reaches_its_end_exactly_and_chunks_of_empty_dims_are_kept():
    a, b = Tensor([0.1, -3.3, 7.7]), Tensor([0.7, 1e-3, -2.2])
    np.testing.assert_array_equal(a.lerp(b, 1.0).numpy(), b.numpy())
    assert len(Tensor.zeros(0, 2).chunk(2)) == len(torch.zeros(0, 2).chunk(2)) == 2
    assert Tensor.zeros(2, 0, 3).unflatten(1, (2, -1)).shape == (2, 2, 0, 3)


def test_group_and_instance_norm_accept_empty_batches():
    for layer in (nn.GroupNorm(2, 4), nn.InstanceNorm(4)):
        assert layer(Tensor.zeros(0, 4, 3)).numpy().shape == (0, 4, 3)
