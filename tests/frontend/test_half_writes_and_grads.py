"""float16 (issue 29): setitem (also through a view) and bitcast keep the bits PyTorch keeps, and
a 64x64 half matmul's gradient matches PyTorch's: the sum an expand's gradient makes partial-sums
in float32 (it summed in half: one whole row 0.8% off)."""
import numpy as np
import torch
from dtype_support import refuses

from tinylab import Tensor, dtypes

F16 = np.float16


def test_half_setitem_directly_and_through_a_view_matches_pytorch():
    t, ref = Tensor(np.zeros((3, 4), F16)).realize(), torch.zeros(3, 4, dtype=torch.float16)
    t[1, 2] = 2.5
    ref[1, 2] = 2.5
    t[0] = Tensor(np.array([1, 2, 3, 0.1], F16))
    ref[0] = torch.tensor([1, 2, 3, 0.1], dtype=torch.float16)
    t.T[3, 2] = 1 / 3
    ref.T[3, 2] = 1 / 3
    t[:, 1] += 0.001
    ref[:, 1] += 0.001
    assert t.dtype == dtypes.float16
    np.testing.assert_array_equal(t.numpy().view(np.int16), ref.numpy().view(np.int16))


def test_half_bitcast_both_ways_matches_pytorch():
    values = np.array([1.0, -2.0, 65504, 6e-8, -0.0], F16)
    bits = Tensor(values).bitcast(dtypes.int16).numpy()
    np.testing.assert_array_equal(bits, torch.tensor(values).view(torch.int16).numpy())
    back = Tensor(bits).bitcast(dtypes.float16)
    assert back.dtype == dtypes.float16
    np.testing.assert_array_equal(back.numpy().view(np.int16), values.view(np.int16))
    t = Tensor(np.zeros(4, F16)).realize()
    t[1:3] = Tensor(np.array([15360, -16384], np.int16)).bitcast(dtypes.float16)
    np.testing.assert_array_equal(t.numpy(), [0, 1, -2, 0])


def test_half_matmul_gradient_matches_pytorch():
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 64)).astype(F16) for _ in range(2))
    ours_a, ours_b = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    (ours_a @ ours_b).sum().backward()
    ref_a, ref_b = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (ref_a @ ref_b).sum().backward()
    for ours, ref in ((ours_a.grad, ref_a.grad), (ours_b.grad, ref_b.grad)):
        assert ours.dtype == dtypes.float16
        np.testing.assert_allclose(ours.numpy().astype(np.float32), ref.numpy(), rtol=2e-3,
                                   atol=2e-3)


def test_half_bitcast_on_every_backend(device):
    values = np.array([1.0, -2.0, 0.333, 6e-8], F16)
    with refuses(device, "float16"):  # a language without half says so by name
        bits = (Tensor(values) * 1).bitcast(dtypes.uint16) + 0
        np.testing.assert_array_equal(bits.numpy(), values.view(np.uint16))
        back = (Tensor(values.view(np.int16)) + 0).bitcast(dtypes.float16) * 1
        np.testing.assert_array_equal(back.numpy().view(np.int16), values.view(np.int16))


def _within_one_half_ulp_mostly_equal(ours, ref, name):
    """Within one float16 step of PyTorch everywhere, bit-equal nearly everywhere: float32
    accumulation in another order flips a rounding tie now and then (rounding each product to
    half first, as before, differed in 42% of a 64x64 product's elements)."""
    ours, ref = ours.astype(np.float32), ref.astype(np.float32)
    step = np.spacing(np.abs(ref).astype(F16)).astype(np.float32)
    assert (np.abs(ours - ref) <= step).all(), f"{name}: more than one half step from PyTorch"
    assert (ours != ref).mean() < 0.01, f"{name}: {(ours != ref).mean():.1%} of elements differ"


def test_half_matmul_accumulates_in_float_and_rounds_once_as_pytorch():
    rng = np.random.default_rng(1)
    a, b, g = (rng.standard_normal((64, 64)).astype(F16) for _ in range(3))
    v = rng.standard_normal(64).astype(F16)
    ours_a, ours_b = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    ref_a, ref_b = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out, ref = ours_a @ ours_b, ref_a @ ref_b
    assert out.dtype == dtypes.float16
    _within_one_half_ulp_mostly_equal(out.numpy(), ref.detach().numpy(), "forward")
    out.backward(Tensor(g))
    ref.backward(torch.tensor(g))
    for ours_grad, ref_grad, name in ((ours_a.grad, ref_a.grad, "d a"),
                                      (ours_b.grad, ref_b.grad, "d b")):
        _within_one_half_ulp_mostly_equal(ours_grad.numpy(), ref_grad.numpy(), name)
    # in composition: a matrix-vector product, a linear layer with bias, a batched product
    w = torch.tensor(b)
    for ours, theirs in ((Tensor(a) @ Tensor(v), torch.tensor(a) @ torch.tensor(v)),
                         (Tensor(a).linear(Tensor(b), Tensor(v)),
                          torch.nn.functional.linear(torch.tensor(a), w.T, torch.tensor(v))),
                         (Tensor(a.reshape(4, 16, 64)) @ Tensor(b),
                          torch.tensor(a.reshape(4, 16, 64)) @ w)):
        assert ours.dtype == dtypes.float16
        _within_one_half_ulp_mostly_equal(ours.numpy(), theirs.numpy(), "composition")
