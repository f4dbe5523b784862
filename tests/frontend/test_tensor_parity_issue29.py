"""Parity rows for issue 29's missing names and edges (softmin, normalize, unfold, nonzero /
masked_select with a static size, stack of a list and more, acosh's gradient below 1) against
PyTorch, and composition tests that chain them with other ops."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from parity_harness import (SPECIAL, Case, LayerCase, layer_variants, run_case, run_layer_case,
                            variants)
from tinylab import Tensor, TinyJit, nn

FLOATS = (("f16",), ("f64",))

NAMES = [
    Case("softmin", lambda x, dim: x.softmin(dim), lambda x, dim: F.softmin(x, dim),
         [((3, 5),), ((4, 1),), ((2, 3, 4),)], dim=1, also=SPECIAL + FLOATS),
    Case("normalize", lambda x: x.normalize(), lambda x: F.normalize(x),
         [((3, 5),), ((2, 3, 4),)], also=(("special_finite",), ("f64",))),
    Case("normalize_p_dim", lambda x: (x.normalize(1, 0), x.normalize(3.0, -1),
                                       x.normalize(float("inf"), 1)),
         lambda x: (F.normalize(x, 1, 0), F.normalize(x, 3.0, -1), F.normalize(x, float("inf"), 1)),
         [((4, 6),)], ("positive",), covers=("normalize",)),
    Case("unfold", lambda x: (x.unfold(1, 2, 1), x.unfold(1, 3, 2), x.unfold(0, 4, 4)),
         lambda x: (x.unfold(1, 2, 1), x.unfold(1, 3, 2), x.unfold(0, 4, 4)),
         [((4, 7),), ((5, 3),)], also=(("int",), ("f16",))),
    Case("unfold_edges", lambda x: (x.unfold(-1, 5, 1), x.unfold(2, 1, 3), x.unfold(0, 0, 2)),
         lambda x: (x.unfold(-1, 5, 1), x.unfold(2, 1, 3), x.unfold(0, 0, 2)),
         [((2, 3, 5),)], covers=("unfold",)),
    Case("nonzero_size", lambda x: (x.nonzero(size=3), x.nonzero(size=30, fill_value=9)),
         lambda x: (torch.nonzero_static(x, size=3),
                    torch.nonzero_static(x, size=30, fill_value=9)),
         [((4, 5),), ((6,),)], ("special",), also=(("int",), ("bool",)), covers=("nonzero",)),
    Case("masked_select_size", lambda x, m: (x.masked_select(m, size=2),
                                             x.masked_select(m, size=25, fill_value=-1.0)),
         lambda x, m: (_static_select(x, m, 2, 0.0), _static_select(x, m, 25, -1.0)),
         [((4, 5), (4, 5)), ((1, 5), (4, 1))], ("real", "bool"), covers=("masked_select",)),
    Case("stack_list_and_more",
         lambda a, b, c: (Tensor.stack([a, b], c), Tensor.stack([a], b, dim=1),
                          Tensor.stack(a, b, c, dim=-1)),
         lambda a, b, c: (torch.stack([a, b, c]), torch.stack([a, b], dim=1),
                          torch.stack([a, b, c], dim=-1)),
         [((2, 3), (2, 3), (2, 3))], covers=("stack",)),
    Case("acosh_everywhere", lambda x: x.acosh(), torch.acosh, [((4, 5),)], ("wide",),
         also=SPECIAL, covers=("acosh",)),
]

# (kernel, stride, padding, dilation): windows whose stride passes the kernel, output * stride
# past the input (the pad branch of the windowing), dilated and padded
POOL_COMBOS = [(2, 3, 0, 1), (1, 3, 0, 1), (3, 2, 1, 1), (2, 2, 1, 1), (3, 4, 1, 1), (2, 3, 1, 2)]
CONV_COMBOS = [(3, 0, 1), (2, 1, 2), (3, 1, 1), (4, 2, 1), (2, 0, 3)]  # (stride, padding, dilation)

POOLING = [
    Case("avg_pool2d_sweep",
         lambda x: [x.avg_pool2d(k, s, padding=p) for k, s, p, _ in POOL_COMBOS],
         lambda x: [F.avg_pool2d(x, k, s, p) for k, s, p, _ in POOL_COMBOS],
         [((2, 3, 8, 8),), ((1, 2, 7, 10),)], covers=("avg_pool2d",)),
    Case("max_pool2d_sweep",
         lambda x: [x.max_pool2d(k, s, padding=p, dilation=d)
                    for k, s, p, d in POOL_COMBOS if p <= k // 2],
         lambda x: [F.max_pool2d(x, k, s, p, d) for k, s, p, d in POOL_COMBOS if p <= k // 2],
         [((1, 2, 8, 9),)], covers=("max_pool2d",)),
    Case("conv2d_stride_sweep", lambda x, w: [x.conv2d(w, stride=s, padding=p, dilation=d)
                                              for s, p, d in CONV_COMBOS],
         lambda x, w: [F.conv2d(x, w, stride=s, padding=p, dilation=d) for s, p, d in CONV_COMBOS],
         [((2, 3, 9, 8), (4, 3, 2, 3))], covers=("conv2d",), atol=1e-4),
]


def _static_select(x, mask, size, fill):
    """torch has no masked_select(size=): the selected elements, cut or filled to `size`."""
    picked = torch.masked_select(x, mask)[:size]
    return torch.cat([picked, torch.full((size - picked.numel(),), fill, dtype=x.dtype)])


# the rest of issue 29's list, each now with a PyTorch row: half matmuls accumulate in float32
# and round once (as PyTorch's CPU kernels), an int base to a float power is a float, cummax /
# cummin on empty and 0-d tensors
HALF = ("f16", "f16")
REST = [
    Case("matmul_half", lambda a, b: a @ b, lambda a, b: a @ b,
         [((64, 64), (64, 64)), ((5, 64), (64,)), ((2, 7, 64), (64, 3))], HALF, atol=2e-3,
         rtol=2e-3, covers=("matmul",)),
    Case("linear_half_bias", lambda x, w, b: x.linear(w, b), lambda x, w, b: F.linear(x, w.T, b),
         [((8, 64), (64, 5), (5,))], HALF + ("f16",), atol=2e-3, rtol=2e-3, covers=("linear",)),
    Case("pow_int_base_float_exponent", lambda x: (x ** 1.5, x ** 0.5, x.pow(2.0), 2 ** x),
         lambda x: (x ** 1.5, x ** 0.5, x.pow(2.0), 2 ** x), [((3, 4),)], ("int",), grad=False,
         covers=("pow",)),
    Case("cummax_cummin_empty_and_scalar", lambda x: (x.cummax(0)[0], x.cummin(-1)[0]),
         lambda x: (x.cummax(0).values, x.cummin(-1).values), [((0,),), ((2, 0),), ((),)],
         covers=("cummax", "cummin")),
]


@pytest.mark.parametrize("case, shapes, strided", variants(NAMES + POOLING + REST))
def test_issue29_rows_match_torch(case, shapes, strided):
    run_case(case, shapes, strided)


def test_acosh_gradient_is_nan_only_where_torch_gives_nan():
    """Below 1 the value is NaN; the gradient is 1/sqrt(x²-1): finite below -1, ±inf at ±1."""
    values = np.array([0.5, 1.0, 1.5, 3.0, -2.0, -1.0, 0.0, -0.5, 1e5, -1e5, np.inf, -np.inf,
                       np.nan, -30.0], np.float32)
    ours = Tensor(values, requires_grad=True)
    ours.acosh().sum().backward()
    theirs = torch.tensor(values, requires_grad=True)
    theirs.acosh().sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6)


def test_unfold_composes_with_reductions_and_gradients():
    """A moving average from unfold, then softmin over it, against PyTorch values and grads."""
    rng = np.random.default_rng(29)
    data = rng.standard_normal((3, 10)).astype(np.float32)
    ours = Tensor(data, requires_grad=True)
    theirs = torch.tensor(data, requires_grad=True)
    out = ours.unfold(1, 4, 2).mean(-1).softmin(-1).normalize(dim=0)
    expected = F.normalize(F.softmin(theirs.unfold(1, 4, 2).mean(-1), -1), dim=0)
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_static_nonzero_runs_inside_tinyjit_without_reading_a_count():
    """nonzero(size=) has a static shape: TinyJit replays it for new data."""
    step = TinyJit(lambda x: (x.nonzero(size=4) * 2).realize())
    rng = np.random.default_rng(3)
    for _ in range(4):
        data = (rng.random((3, 3)) < 0.4).astype(np.float32)
        expected = torch.nonzero_static(torch.from_numpy(data), size=4).numpy() * 2
        np.testing.assert_array_equal(step(Tensor(data)).numpy(), expected)


class _TorchLayerNorm2d(torch.nn.LayerNorm):
    """tinygrad's LayerNorm2d in torch: LayerNorm over dim 1 of (N, C, H, W)."""

    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


LAYERS = [
    LayerCase("ConvTranspose1d", lambda: nn.ConvTranspose1d(4, 3, 3, stride=2, padding=1,
                                                            output_padding=1),
              lambda: torch.nn.ConvTranspose1d(4, 3, 3, stride=2, padding=1, output_padding=1),
              [((2, 4, 5),), ((0, 4, 3),), ((1, 4, 1),)]),
    LayerCase("ConvTranspose1d_groups", lambda: nn.ConvTranspose1d(4, 6, (2,), groups=2,
                                                                   dilation=2, bias=False),
              lambda: torch.nn.ConvTranspose1d(4, 6, 2, groups=2, dilation=2, bias=False),
              [((2, 4, 6),)], covers=("ConvTranspose1d",)),
    LayerCase("LayerNorm2d", lambda: nn.LayerNorm2d(3), lambda: _TorchLayerNorm2d(3),
              [((2, 3, 4, 5),), ((1, 3, 1, 1),)]),
    LayerCase("BatchNorm_sz", lambda: nn.BatchNorm(sz=3, momentum=0.2),
              lambda: torch.nn.BatchNorm2d(3, momentum=0.2), [((4, 3, 2, 2),)], train=True,
              covers=("BatchNorm", "BatchNorm2d")),
]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case,shapes,strided", layer_variants(LAYERS))
def test_issue29_layers_match_torch(case, shapes, strided):
    run_layer_case(case, shapes, strided)


def test_batchnorm_takes_the_channel_count_once():
    with pytest.raises(TypeError, match="BatchNorm"):
        nn.BatchNorm(3, sz=3)
    with pytest.raises(TypeError, match="BatchNorm"):
        nn.BatchNorm()


# ---- found by the issue-29 audit ---------------------------------------------------------------
def test_a_realized_constant_is_keyed_by_its_value_in_the_schedule_cache():
    """A CONST that was realized (its REALIZED entry a buffer) is still inlined by its value;
    the schedule cache keyed it as a buffer slot, so -(-x) of a later 0-d constant reused the
    first one's kernel: Tensor(2.0).cummin(0) was 3.0 after Tensor(3.0).cummin(0) had run."""
    for value in (3.0, 2.0, -1.5, 7.0):
        x = np.float32(value)
        assert Tensor(x).cummax(0)[0].item() == value  # realizes the CONST itself
        assert Tensor(x).cummin(0)[0].item() == value
        assert Tensor(x).cumsum(0).item() == value
        np.testing.assert_array_equal((Tensor(x).neg().neg() * 2).numpy(), torch.tensor(value) * 2)
    for value in (1.0, 4.0):
        Tensor.full((3,), value).realize()
        np.testing.assert_array_equal((Tensor.full((3,), value).exp2() + 1).numpy(),
                                      np.exp2(np.full(3, value, np.float32)) + 1)


def test_indexing_two_symbolic_slices_and_their_mean():
    """x[:b, :a] with two bound variables (a reshape to its own shape multiplied them) and the
    mean over the block, against numpy for several values (tinygrad's symbolic mean tests)."""
    from tinylab import Variable
    data = np.arange(100, dtype=np.float32).reshape(10, 10)
    w = Tensor(data).realize()
    for m, n in ((3, 4), (2, 2), (7, 10)):
        b, a = Variable("xb", 1, 10).bind(m), Variable("xa", 1, 10).bind(n)
        np.testing.assert_allclose(w[:b, :a].mean().item(), data[:m, :n].mean(), rtol=1e-6)
        np.testing.assert_allclose(Tensor.ones(10, 10).contiguous()[:b, :a].mean().item(), 1.0)
        np.testing.assert_allclose((w[:b, :a] * 2).sum(1)[:m].numpy(),
                                   (data[:m, :n] * 2).sum(1), rtol=1e-6)


def test_full_of_a_bound_variable_is_its_value():
    from tinylab import Variable, dtypes
    for n in (1, 5, 9):
        v = Variable("fv", 1, 10).bind(n)
        assert Tensor.full((3,), v).tolist() == [n] * 3
        np.testing.assert_array_equal(Tensor.full((2, 2), v, dtype=dtypes.float32).numpy(),
                                      np.full((2, 2), n, np.float32))
        assert Tensor.full((v,), v).sum().item() == n * n


def test_item_of_many_elements_raises_what_torch_raises():
    with pytest.raises(RuntimeError) as ours:
        Tensor([1.0, 2.0]).item()
    with pytest.raises(RuntimeError):
        torch.tensor([1.0, 2.0]).item()
    assert "one element" in str(ours.value) and isinstance(ours.value, ValueError)
