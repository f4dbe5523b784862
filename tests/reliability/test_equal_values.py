"""Tensors that start with equal values stay separate tensors: hash-consing makes equal lazy
values one node and realizing them one buffer, but each realized tensor keeps a buffer (and so
a node) of its own, so gradients, optimizer steps and assigns never mix them. Against PyTorch
and numpy."""
import numpy as np
import torch

from tinylab import Tensor, nn

F32 = np.float32


def test_equal_realized_parameters_get_their_own_gradients_and_updates():
    a, b = Tensor.ones(4), Tensor.ones(4)
    a.realize()
    b.realize()
    opt = nn.optim.SGD([a, b], lr=0.1)
    opt.zero_grad()
    (a * Tensor([1.0, 2, 3, 4]) + b).sum().backward()
    opt.step()
    ta, tb = torch.ones(4, requires_grad=True), torch.ones(4, requires_grad=True)
    topt = torch.optim.SGD([ta, tb], lr=0.1)
    (ta * torch.tensor([1.0, 2, 3, 4]) + tb).sum().backward()
    topt.step()
    np.testing.assert_allclose(a.numpy(), ta.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), tb.detach().numpy(), rtol=1e-6)


def test_gradients_of_equal_valued_realized_leaves_are_separate():
    x = Tensor.full((3,), 2.0).realize()
    y = Tensor.full((3,), 2.0).realize()
    Tensor.realize(x, y)
    x.requires_grad_(), y.requires_grad_()
    (x * x * 3 + y).sum().backward()
    tx, ty = torch.full((3,), 2.0, requires_grad=True), torch.full((3,), 2.0, requires_grad=True)
    (tx * tx * 3 + ty).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-6)


def test_equal_values_realized_in_one_call_are_separate_buffers():
    a, b, c = Tensor.zeros(2, 2), Tensor.zeros(2, 2), Tensor.zeros(2, 2)
    Tensor.realize(a, b, c)
    buffers = {id(t.node.buffer) for t in (a, b, c)}
    assert len(buffers) == 3
    b.assign(Tensor.ones(2, 2)).realize()
    np.testing.assert_array_equal(a.numpy(), np.zeros((2, 2), F32))
    np.testing.assert_array_equal(b.numpy(), np.ones((2, 2), F32))
    np.testing.assert_array_equal(c.numpy(), np.zeros((2, 2), F32))


def test_assign_to_one_of_two_equal_valued_tensors_leaves_the_other_unchanged():
    values = np.arange(6, dtype=F32).reshape(2, 3)
    source = Tensor(values)
    first, second = (source * 2).realize(), (source * 2).realize()
    first.assign(first + 1).realize()
    np.testing.assert_array_equal(first.numpy(), values * 2 + 1)
    np.testing.assert_array_equal(second.numpy(), values * 2)
    second -= 5
    np.testing.assert_array_equal(second.numpy(), values * 2 - 5)
    np.testing.assert_array_equal(first.numpy(), values * 2 + 1)


def test_a_clone_realized_twice_is_two_buffers():
    a = Tensor([1.0, 2.0]).realize()
    c, d = a.clone().realize(), a.clone().realize()
    c.assign(Tensor([5.0, 6.0])).realize()
    np.testing.assert_array_equal(d.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(c.numpy(), [5.0, 6.0])


def test_two_layernorms_trained_on_different_inputs_match_pytorch():
    norms = [nn.LayerNorm(3), nn.LayerNorm(3)]
    for norm in norms:
        norm.weight.realize(), norm.bias.realize()
    torch_norms = [torch.nn.LayerNorm(3), torch.nn.LayerNorm(3)]
    inputs = [np.array([[1, 2, 4], [0, 1, 0]], F32), np.array([[3, -1, 0], [2, 2, 5]], F32)]
    targets = np.array([[1, 0, 0], [0, 2, 1]], F32)
    params = [p for n in norms for p in (n.weight, n.bias)]
    opt = nn.optim.SGD(params, lr=0.5)
    topt = torch.optim.SGD([p for n in torch_norms for p in n.parameters()], lr=0.5)
    for _ in range(2):
        opt.zero_grad(), topt.zero_grad()
        sum(((n(Tensor(x)) * Tensor(targets)).sum() for n, x in zip(norms, inputs))).backward()
        sum(((n(torch.tensor(x)) * torch.tensor(targets)).sum()
             for n, x in zip(torch_norms, inputs))).backward()
        opt.step(), topt.step()
    for ours, theirs in zip(norms, torch_norms):
        np.testing.assert_allclose(ours.weight.numpy(), theirs.weight.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ours.bias.numpy(), theirs.bias.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_two_same_seed_linears_trained_on_different_inputs_match_pytorch():
    layers = []
    for _ in range(2):
        Tensor.manual_seed(3)
        layers.append(nn.Linear(3, 2))
    for layer in layers:
        layer.weight.realize(), layer.bias.realize()
    torch_layers = []
    for layer in layers:
        t = torch.nn.Linear(3, 2)
        with torch.no_grad():
            t.weight.copy_(torch.tensor(layer.weight.numpy()))
            t.bias.copy_(torch.tensor(layer.bias.numpy()))
        torch_layers.append(t)
    np.testing.assert_array_equal(layers[0].weight.numpy(), layers[1].weight.numpy())
    inputs = [np.ones((2, 3), F32), np.array([[1, -2, 3], [0, 5, 1]], F32)]
    opts = [nn.optim.SGD([m.weight, m.bias], lr=0.1) for m in layers]
    topts = [torch.optim.SGD(t.parameters(), lr=0.1) for t in torch_layers]
    for _ in range(2):
        for layer, t, opt, topt, x in zip(layers, torch_layers, opts, topts, inputs):
            opt.zero_grad(), topt.zero_grad()
            (layer(Tensor(x)) ** 2).sum().backward()
            (t(torch.tensor(x)) ** 2).sum().backward()
            opt.step(), topt.step()
    for layer, t in zip(layers, torch_layers):
        np.testing.assert_allclose(layer.weight.numpy(), t.weight.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(layer.bias.numpy(), t.bias.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_two_batchnorms_keep_their_own_running_statistics():
    """Their running_mean zeros (and running_var ones) are one lazy node each pair."""
    norms = [nn.BatchNorm2d(2), nn.BatchNorm2d(2)]
    torch_norms = [torch.nn.BatchNorm2d(2), torch.nn.BatchNorm2d(2)]
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((3, 2, 2, 2)).astype(F32) * scale for scale in (1, 4)]
    opt = nn.optim.SGD(nn.state.get_parameters(norms), lr=0.1)
    with Tensor.train():
        for _ in range(2):
            opt.zero_grad()
            sum((n(Tensor(x)) ** 2).sum() for n, x in zip(norms, inputs)).backward()
            opt.step()
            for n, x in zip(torch_norms, inputs):
                (n(torch.tensor(x)) ** 2).sum()
    for ours, theirs in zip(norms, torch_norms):
        np.testing.assert_allclose(ours.running_mean.numpy(), theirs.running_mean.numpy(),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(),
                                   rtol=1e-5, atol=1e-6)
