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
