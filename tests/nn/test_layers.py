"""nn layers against torch.nn: the same weights (copied with nn.state.load_state_dict), the same
input; the forward output, the input's gradient and every parameter's gradient must match.
Also the initial weights: same bounds and spread as PyTorch's, and bad arguments fail early."""
import copy

import numpy as np
import pytest
import torch

from tinylab import Tensor, nn
from tinylab.nn.state import get_state_dict, load_state_dict

TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


def _as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


def _copy_weights(ours, theirs) -> None:
    load_state_dict(ours, {k: v.detach().numpy() for k, v in theirs.state_dict().items()})


def _forward_backward(layer, inputs, upstream, make):
    """Outputs and gradients of sum(output * upstream) for one framework."""
    tensors = [make(a) for a in inputs]
    outputs = _as_tuple(layer(*tensors))
    loss = sum((out * make(up)).sum() for out, up in zip(outputs, upstream))
    loss.backward()
    return outputs, tensors


def check_layer(ours, theirs, *inputs, train: bool = False, tolerance=TOLERANCE):
    """Copy theirs' weights into ours, run both, compare outputs and all gradients."""
    _copy_weights(ours, theirs)
    theirs.train(train)
    rng = np.random.default_rng(1)
    expected = _as_tuple(copy.deepcopy(theirs)(*[torch.tensor(a) for a in inputs]))
    upstream = [rng.standard_normal(e.shape).astype(np.float32) for e in expected]

    def torch_make(a):
        return torch.tensor(a, requires_grad=a.dtype.kind == "f")

    def ours_make(a):
        return Tensor(a, requires_grad=a.dtype.kind == "f")

    theirs.zero_grad()
    t_out, t_in = _forward_backward(theirs, inputs, upstream, torch_make)
    with Tensor.train(train):
        o_out, o_in = _forward_backward(ours, inputs, upstream, ours_make)
    for o, t in zip(o_out, t_out):
        np.testing.assert_allclose(o.numpy(), t.detach().numpy(), **tolerance)
    for o, t in zip(o_in, t_in):
        if t.grad is not None:
            np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), **tolerance)
    ours_state = get_state_dict(ours)
    for name, parameter in theirs.named_parameters():
        np.testing.assert_allclose(ours_state[name].grad.numpy(), parameter.grad.numpy(),
                                   **tolerance, err_msg=name)
    return ours


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


LINEAR_AND_CONV = {
    "linear": (lambda: nn.Linear(5, 3), lambda: torch.nn.Linear(5, 3), [(4, 5)]),
    "linear_3d_no_bias": (lambda: nn.Linear(5, 3, bias=False),
                          lambda: torch.nn.Linear(5, 3, bias=False), [(2, 4, 5)]),
    "conv2d": (lambda: nn.Conv2d(3, 4, 3, padding=1), lambda: torch.nn.Conv2d(3, 4, 3, padding=1),
               [(2, 3, 6, 6)]),
    "conv2d_strided_grouped": (
        lambda: nn.Conv2d(4, 6, (3, 2), stride=2, dilation=(1, 2), groups=2, bias=False),
        lambda: torch.nn.Conv2d(4, 6, (3, 2), stride=2, dilation=(1, 2), groups=2, bias=False),
        [(2, 4, 7, 8)]),
    "conv2d_same": (lambda: nn.Conv2d(2, 3, 4, padding="same"),
                    lambda: torch.nn.Conv2d(2, 3, 4, padding="same"), [(1, 2, 5, 5)]),
    "conv1d": (lambda: nn.Conv1d(3, 4, 3, stride=2, padding=1),
               lambda: torch.nn.Conv1d(3, 4, 3, stride=2, padding=1), [(2, 3, 9)]),
    "conv_transpose2d": (
        lambda: nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1),
        lambda: torch.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1),
        [(2, 4, 4, 4)]),
    "conv_transpose2d_grouped": (
        lambda: nn.ConvTranspose2d(4, 6, (2, 3), groups=2, dilation=2),
        lambda: torch.nn.ConvTranspose2d(4, 6, (2, 3), groups=2, dilation=2), [(1, 4, 3, 3)]),
}


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("name", list(LINEAR_AND_CONV))
def test_linear_and_conv_match_torch(name):
    make_ours, make_theirs, shapes = LINEAR_AND_CONV[name]
    check_layer(make_ours(), make_theirs(), *[randn(*s) for s in shapes])


NORMS = {
    "layernorm": (lambda: nn.LayerNorm((4, 5)), lambda: torch.nn.LayerNorm((4, 5)), (3, 4, 5)),
    "layernorm_plain": (lambda: nn.LayerNorm(5, elementwise_affine=False),
                        lambda: torch.nn.LayerNorm(5, elementwise_affine=False), (3, 5)),
    "groupnorm": (lambda: nn.GroupNorm(2, 4), lambda: torch.nn.GroupNorm(2, 4), (2, 4, 3, 3)),
    "groupnorm_one_group": (lambda: nn.GroupNorm(1, 4, affine=False),
                            lambda: torch.nn.GroupNorm(1, 4, affine=False), (2, 4, 5)),
    "instancenorm_affine": (lambda: nn.InstanceNorm(3),
                            lambda: torch.nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4)),
    "instancenorm1d": (lambda: nn.InstanceNorm1d(3), lambda: torch.nn.InstanceNorm1d(3),
                       (2, 3, 6)),
    "rmsnorm": (lambda: nn.RMSNorm(5), lambda: torch.nn.RMSNorm(5, eps=1e-6), (3, 5)),
    "rmsnorm_2d_shape": (lambda: nn.RMSNorm((2, 5), eps=1e-5),
                         lambda: torch.nn.RMSNorm((2, 5), eps=1e-5), (3, 2, 5)),
}


@pytest.mark.parametrize("name", list(NORMS))
def test_normalization_layers_match_torch(name):
    make_ours, make_theirs, shape = NORMS[name]
    ours, theirs = make_ours(), make_theirs()
    with torch.no_grad():  # non-trivial affine parameters
        for parameter in theirs.parameters():
            parameter.add_(torch.tensor(randn(*parameter.shape, seed=3)) * 0.5)
    check_layer(ours, theirs, randn(*shape) * 3 + 1)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 2, 2)])
def test_batchnorm_training_matches_torch_and_moves_running_stats(shape):
    theirs = torch.nn.BatchNorm2d(3) if len(shape) == 4 else torch.nn.BatchNorm1d(3)
    ours = check_layer(nn.BatchNorm(3), theirs, randn(*shape) * 2 + 0.5, train=True)
    Tensor.realize(ours.running_mean, ours.running_var, ours.num_batches_tracked)
    np.testing.assert_allclose(ours.running_mean.numpy(), theirs.running_mean.numpy(), **TOLERANCE)
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), **TOLERANCE)
    assert ours.num_batches_tracked.numpy() == theirs.num_batches_tracked.numpy() == 1


def test_batchnorm_eval_uses_running_stats_like_torch():
    theirs = torch.nn.BatchNorm2d(3, affine=False, momentum=0.3)
    theirs.running_mean.copy_(torch.tensor([0.5, -1.0, 2.0]))
    theirs.running_var.copy_(torch.tensor([1.5, 0.25, 4.0]))
    ours = nn.BatchNorm2d(3, affine=False, momentum=0.3)
    check_layer(ours, theirs, randn(2, 3, 4, 4), train=False)


def test_batchnorm_without_running_stats_always_uses_the_batch():
    ours = nn.BatchNorm(3, track_running_stats=False)
    theirs = torch.nn.BatchNorm1d(3, track_running_stats=False)
    check_layer(ours, theirs, randn(5, 3), train=False)
    assert set(get_state_dict(ours)) == set(theirs.state_dict()) == {"weight", "bias"}


def test_embedding_matches_torch_forward_and_weight_gradient():
    ours, theirs = nn.Embedding(10, 4), torch.nn.Embedding(10, 4)
    idx = np.array([[1, 9, 1], [0, 3, 7]], dtype=np.int64)
    check_layer(ours, theirs, idx)
    assert ours(Tensor([2, 3], dtype="int32")).shape == (2, 4)


@pytest.mark.parametrize("case", ["zero_state", "given_state", "unbatched", "no_bias"])
def test_lstm_cell_matches_torch(case):
    bias = case != "no_bias"
    ours, theirs = nn.LSTMCell(3, 5, bias=bias), torch.nn.LSTMCell(3, 5, bias=bias)
    if case == "given_state":
        _copy_weights(ours, theirs)
        x, h, c = randn(4, 3), randn(4, 5, seed=1), randn(4, 5, seed=2)
        expected = theirs(torch.tensor(x), (torch.tensor(h), torch.tensor(c)))
        got = ours(Tensor(x), (Tensor(h), Tensor(c)))
        for o, t in zip(got, expected):
            np.testing.assert_allclose(o.numpy(), t.detach().numpy(), **TOLERANCE)
        return
    check_layer(ours, theirs, randn(3) if case == "unbatched" else randn(4, 3))


def test_layer_parameter_names_match_torch_state_dicts():
    pairs = [(nn.Linear(2, 3), torch.nn.Linear(2, 3)),
             (nn.Conv2d(2, 2, 3), torch.nn.Conv2d(2, 2, 3)),
             (nn.ConvTranspose2d(2, 2, 3), torch.nn.ConvTranspose2d(2, 2, 3)),
             (nn.BatchNorm2d(2), torch.nn.BatchNorm2d(2)),
             (nn.GroupNorm(1, 2), torch.nn.GroupNorm(1, 2)),
             (nn.LayerNorm(2), torch.nn.LayerNorm(2)), (nn.RMSNorm(2), torch.nn.RMSNorm(2)),
             (nn.Embedding(3, 2), torch.nn.Embedding(3, 2)),
             (nn.LSTMCell(2, 3), torch.nn.LSTMCell(2, 3))]
    for ours, theirs in pairs:
        mine = {k: (v.shape, v.dtype.name) for k, v in get_state_dict(ours).items()}
        torch_names = {k: (tuple(v.shape), str(v.dtype).replace("torch.", ""))
                       for k, v in theirs.state_dict().items()}
        assert mine == torch_names, type(ours).__name__


# ---- initialization: PyTorch's distributions and bounds ----
INIT = {  # ours, torch's, the bound of every U(-b, b) parameter
    "linear": (lambda: nn.Linear(200, 64), lambda: torch.nn.Linear(200, 64), 200 ** -0.5),
    "conv2d": (lambda: nn.Conv2d(8, 32, 3, groups=2), lambda: torch.nn.Conv2d(8, 32, 3, groups=2),
               (4 * 9) ** -0.5),
    "conv1d": (lambda: nn.Conv1d(6, 40, 5), lambda: torch.nn.Conv1d(6, 40, 5), 30 ** -0.5),
    "conv_transpose2d": (lambda: nn.ConvTranspose2d(16, 12, 3, groups=2),
                         lambda: torch.nn.ConvTranspose2d(16, 12, 3, groups=2), (6 * 9) ** -0.5),
    "lstm_cell": (lambda: nn.LSTMCell(30, 25), lambda: torch.nn.LSTMCell(30, 25), 25 ** -0.5),
}


@pytest.mark.parametrize("name", list(INIT))
def test_uniform_init_has_torchs_bound_and_spread(name):
    make_ours, make_theirs, bound = INIT[name]
    ours, theirs = get_state_dict(make_ours()), dict(make_theirs().state_dict())
    assert set(ours) == set(theirs)
    for key, value in ours.items():
        mine, reference = value.numpy(), theirs[key].numpy()
        assert mine.shape == reference.shape, key
        assert np.abs(mine).max() <= bound * (1 + 1e-6), key
        assert np.abs(reference).max() <= bound * (1 + 1e-6), key
        if mine.size >= 200:  # U(-b, b): std b/sqrt(3), values reach close to the bound
            assert mine.std() == pytest.approx(bound / 3 ** 0.5, rel=0.1), key
            assert np.abs(mine).max() > 0.9 * bound, key


def test_embedding_init_is_standard_normal_like_torch_and_norms_start_at_identity():
    weight = nn.Embedding(100, 50).weight.numpy()
    assert abs(weight.mean()) < 0.05 and weight.std() == pytest.approx(1.0, rel=0.05)
    for layer in (nn.BatchNorm(4), nn.LayerNorm(4), nn.GroupNorm(2, 4), nn.InstanceNorm(4)):
        np.testing.assert_array_equal(layer.weight.numpy(), np.ones(4, np.float32))
        np.testing.assert_array_equal(layer.bias.numpy(), np.zeros(4, np.float32))
    assert nn.InstanceNorm2d(4).weight is None  # PyTorch's default: affine=False


def test_seeded_init_is_reproducible():
    Tensor.manual_seed(7)
    first = nn.Linear(4, 3).weight.numpy()
    Tensor.manual_seed(7)
    np.testing.assert_array_equal(nn.Linear(4, 3).weight.numpy(), first)


# ---- bad arguments fail when the layer is built or called, naming the argument ----
@pytest.mark.parametrize("build, words", [
    (lambda: nn.Linear(0, 3), "in_features"),
    (lambda: nn.Linear(3, 2.5), "out_features"),
    (lambda: nn.Conv2d(3, 4, 3, groups=2), "groups"),
    (lambda: nn.Conv2d(2, 4, (3, 0)), "kernel_size"),
    (lambda: nn.Conv1d(2, 4, (3, 3, 3)), "kernel_size"),
    (lambda: nn.ConvTranspose2d(3, 4, 2, groups=2), "groups"),
    (lambda: nn.BatchNorm(3, momentum=2.0), "momentum"),
    (lambda: nn.GroupNorm(3, 4), "num_groups"),
    (lambda: nn.LayerNorm(()), "normalized_shape"),
    (lambda: nn.Embedding(-1, 3), "vocab_size"),
    (lambda: nn.LSTMCell(3, 0), "hidden_size"),
])
def test_bad_constructor_arguments_raise_value_error(build, words):
    with pytest.raises(ValueError, match=words):
        build()


@pytest.mark.parametrize("layer, x, words", [
    (lambda: nn.Linear(4, 2), (3, 5), "in_features"),
    (lambda: nn.Conv2d(3, 4, 3), (1, 2, 5, 5), "channels"),
    (lambda: nn.Conv2d(3, 4, 3), (3, 5, 5), "dims"),
    (lambda: nn.BatchNorm(3), (2, 4), "channels"),
    (lambda: nn.LayerNorm(4), (2, 5), "last dims"),
    (lambda: nn.RMSNorm((2, 4)), (4,), "last dims"),
    (lambda: nn.LSTMCell(3, 2), (2, 4), "LSTMCell"),
])
def test_bad_inputs_raise_value_error_before_running(layer, x, words):
    with pytest.raises(ValueError, match=words):
        layer()(Tensor.zeros(*x))


def test_embedding_rejects_float_indices():
    with pytest.raises(TypeError, match="integer"):
        nn.Embedding(4, 2)(Tensor([1.0, 2.0]))


def test_non_contiguous_and_size_one_inputs_match_torch():
    """Inputs that are permuted views, and batches / spatial dims of size 1."""
    linear, conv = nn.Linear(4, 3), nn.Conv2d(2, 3, 1)
    torch_linear, torch_conv = torch.nn.Linear(4, 3), torch.nn.Conv2d(2, 3, 1)
    _copy_weights(linear, torch_linear)
    _copy_weights(conv, torch_conv)
    data = randn(4, 5)
    np.testing.assert_allclose(linear(Tensor(data).transpose()).numpy(),
                               torch_linear(torch.tensor(data).t()).detach().numpy(), **TOLERANCE)
    image = randn(1, 1, 3, 2)  # (1, 1, H, W) -> (1, 2, 1, 3) by permuting, then a 1x1 conv
    ours = conv(Tensor(image).permute(0, 3, 1, 2))
    theirs = torch_conv(torch.tensor(image).permute(0, 3, 1, 2))
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **TOLERANCE)
    assert linear(Tensor.zeros(0, 4)).shape == (0, 3)
