"""tinylab.func against torch.func on composed programs: grad / grad_and_value / vjp / jvp,
an MLP's per-example gradients (vmap(grad)), Hessians, jacrev against jacfwd, nested transforms,
the kernel count of vmap against the hand-batched program, and the bad-input errors."""
import numpy as np
import pytest
import torch
import torch.func as tf

from tinylab import GlobalCounters, Tensor
from tinylab import func
from tinylab.errors import IRError, ShapeError

RNG = np.random.default_rng(31)


def arrays(*shapes):
    return [RNG.standard_normal(s).astype(np.float32) for s in shapes]


def close(ours, theirs, atol=1e-5, rtol=1e-4):
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), atol=atol, rtol=rtol)


def f_ours(x, w):
    return ((x @ w).tanh() * x.sum(-1, keepdim=True)).exp().mean()


def f_theirs(x, w):
    return ((x @ w).tanh() * x.sum(-1, keepdim=True)).exp().mean()


def test_grad_argnums_and_value():
    x, w = arrays((3, 4), (4, 4))
    ours = func.grad_and_value(f_ours, argnums=(0, 1))(Tensor(x), Tensor(w))
    theirs = tf.grad_and_value(f_theirs, argnums=(0, 1))(torch.tensor(x), torch.tensor(w))
    close(ours[0][0], theirs[0][0])
    close(ours[0][1], theirs[0][1])
    close(ours[1], theirs[1])


def test_grad_has_aux_and_dict_argument():
    x, w = arrays((2, 3), (3,))

    def ours(params, x):
        y = (x * params["w"]).sin().sum()
        return y, {"y": y * 2}

    def theirs(params, x):
        y = (x * params["w"]).sin().sum()
        return y, {"y": y * 2}
    g, aux = func.grad(ours, has_aux=True)({"w": Tensor(w)}, Tensor(x))
    tg, taux = tf.grad(theirs, has_aux=True)({"w": torch.tensor(w)}, torch.tensor(x))
    close(g["w"], tg["w"])
    close(aux["y"], taux["y"])


def test_vjp_and_jvp():
    x, w, ct, t = arrays((3, 4), (4, 4), (3, 4), (3, 4))
    ours_out, ours_fn = func.vjp(lambda x: (x @ Tensor(w)).relu() * x, Tensor(x))
    theirs_out, theirs_fn = tf.vjp(lambda x: (x @ torch.tensor(w)).relu() * x, torch.tensor(x))
    close(ours_out, theirs_out)
    close(ours_fn(Tensor(ct))[0], theirs_fn(torch.tensor(ct))[0])
    ours = func.jvp(lambda x: (x.softmax(-1) * x).log_softmax(0), (Tensor(x),), (Tensor(t),))
    theirs = tf.jvp(lambda x: (x.softmax(-1) * x).log_softmax(0), (torch.tensor(x),),
                    (torch.tensor(t),))
    close(ours[0], theirs[0])
    close(ours[1], theirs[1])


def mlp_loss(params, x, y):
    hidden = (x @ params[0] + params[1]).relu()
    logits = hidden @ params[2]
    return ((logits - y) ** 2).mean()


def test_per_example_gradients_of_an_mlp():
    w1, b1, w2, x, y = arrays((5, 8), (8,), (8, 3), (6, 5), (6, 3))
    ours = func.vmap(func.grad(mlp_loss), in_dims=(None, 0, 0))(
        [Tensor(w1), Tensor(b1), Tensor(w2)], Tensor(x), Tensor(y))
    theirs = tf.vmap(tf.grad(mlp_loss), in_dims=(None, 0, 0))(
        [torch.tensor(w1), torch.tensor(b1), torch.tensor(w2)], torch.tensor(x), torch.tensor(y))
    assert isinstance(ours, list) and len(ours) == 3
    for o, t in zip(ours, theirs):
        assert o.shape == tuple(t.shape)
        close(o, t)


def test_hessian_and_jacobians():
    x, = arrays((4,))

    def f(x):
        return (x.sin() * x.sum()).exp()
    close(func.hessian(lambda x: f(x).sum())(Tensor(x)),
          tf.hessian(lambda x: f(x).sum())(torch.tensor(x)), atol=1e-4)
    rev, fwd = func.jacrev(f)(Tensor(x)), func.jacfwd(f)(Tensor(x))
    close(rev, tf.jacrev(f)(torch.tensor(x)))
    np.testing.assert_allclose(rev.numpy(), fwd.numpy(), atol=1e-5, rtol=1e-4)
    both = func.jacfwd(func.jacrev(f))(Tensor(x))
    close(both, tf.jacfwd(tf.jacrev(f))(torch.tensor(x)), atol=1e-4)


def test_nested_transforms():
    x, = arrays((2, 3, 4))
    close(func.grad(func.grad(lambda s: (s ** 3).sin()))(Tensor(np.float32(0.7))),
          tf.grad(tf.grad(lambda s: (s ** 3).sin()))(torch.tensor(np.float32(0.7))))
    close(func.vmap(func.vmap(lambda r: r.softmax(0)), in_dims=1, out_dims=1)(Tensor(x)),
          tf.vmap(tf.vmap(lambda r: r.softmax(0)), in_dims=1, out_dims=1)(torch.tensor(x)))
    # a closure over the outer argument: each grad differentiates its own argument only
    close(func.grad(lambda a: func.grad(lambda b: a * b * b)(a))(Tensor(np.float32(1.5))),
          tf.grad(lambda a: tf.grad(lambda b: a * b * b)(a))(torch.tensor(np.float32(1.5))))


def test_vmap_of_gather_conv_and_layers_by_batched_indices():
    x, kernel = arrays((3, 2, 6, 6), (4, 2, 3, 3))
    index = RNG.integers(0, 5, (3, 4, 2)).astype(np.int64)
    source, = arrays((3, 5, 2))
    close(func.vmap(lambda s, i: s.gather(0, i))(Tensor(source), Tensor(index.astype(np.int32))),
          tf.vmap(lambda s, i: s.gather(0, i))(torch.tensor(source), torch.tensor(index)))
    close(func.vmap(lambda a: a.unsqueeze(0).conv2d(Tensor(kernel), padding=1))(Tensor(x)),
          tf.vmap(lambda a: torch.nn.functional.conv2d(a.unsqueeze(0), torch.tensor(kernel),
                                                       padding=1))(torch.tensor(x)), atol=1e-4)


def _kernels(thunk) -> int:
    out = thunk()
    GlobalCounters.reset()
    out.realize()
    return GlobalCounters.kernel_count


def test_vmap_runs_as_many_kernels_as_the_hand_batched_function():
    w1, b1, w2, x, y = arrays((5, 8), (8,), (8, 3), (6, 5), (6, 3))
    params = [Tensor(w1), Tensor(b1), Tensor(w2)]

    def one(x, y):  # one example
        return ((x @ params[0] + params[1]).relu() @ params[2] - y).square().sum()

    def batched(x, y):  # the same, written over a batch by hand
        return ((x @ params[0] + params[1]).relu() @ params[2] - y).square().sum(-1)
    mapped = _kernels(lambda: func.vmap(one)(Tensor(x), Tensor(y)))
    by_hand = _kernels(lambda: batched(Tensor(x), Tensor(y)))
    assert mapped == by_hand
    np.testing.assert_allclose(func.vmap(one)(Tensor(x), Tensor(y)).numpy(),
                               batched(Tensor(x), Tensor(y)).numpy(), rtol=1e-5)


def test_bad_input():
    x = Tensor(np.ones((3, 2), np.float32))
    with pytest.raises(TypeError, match="must return a Tensor, got float"):
        func.grad(lambda t: 1.0)(x)
    with pytest.raises(ShapeError, match=r"shape \(3, 2\)"):
        func.grad(lambda t: t * 2)(x)
    with pytest.raises(ValueError, match="in_dims has 1 entries but f was called with 2"):
        func.vmap(lambda a, b: a + b, in_dims=(0,))(x, x)
    with pytest.raises(ShapeError, match="in_dim=2 is out of bounds for argument 1"):
        func.vmap(lambda a, b: a + b, in_dims=(0, 2))(x, x)
    with pytest.raises(ShapeError, match="argument 0 has size 3 at in_dim 0, argument 1 has "
                                         "size 2 at in_dim 1"):
        func.vmap(lambda a, b: a.sum() + b.sum(), in_dims=(0, 1))(x, Tensor(np.ones((3, 2, 2),
                                                                               np.float32)))
    with pytest.raises(RuntimeError, match=r"vmap: It looks like you're calling \.item\(\)"):
        func.vmap(lambda r: r.sum().item())(x)
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        func.vmap(lambda r: r if r.sum() > 0 else -r)(x)
    with pytest.raises(TypeError, match="must return Tensors"):
        func.vmap(lambda r: 3)(x)
    with pytest.raises(IRError, match="no batching rule for ASSIGN"):
        func.vmap(lambda r: Tensor(np.zeros(2, np.float32)).assign(r))(x)


def _per_example_loss(params, x, y):   # one example: x (5,), y (3,)
    return (((x @ params[0] + params[1]).relu() @ params[2]) - y).square().mean()


def _per_example_gradients_by_hand(params, x, y):
    """The per-example gradients of _per_example_loss over a batch (x (B, 5), y (B, 3)), written
    by hand with ordinary Tensor ops: a linear layer's weight gradient is the outer product of
    its input and its output's gradient, one per example; relu' selects where pre > 0."""
    w1, b1, w2 = params
    pre = x @ w1 + b1
    hidden = pre.relu()
    d_logits = (hidden @ w2 - y) * 2 / y.shape[-1]
    d_pre = (pre > 0).where(d_logits @ w2.T, 0.0)
    return [x.unsqueeze(-1) * d_pre.unsqueeze(-2), d_pre,
            hidden.unsqueeze(-1) * d_logits.unsqueeze(-2)]


def _kernels_of(outputs) -> int:
    GlobalCounters.reset()
    Tensor.realize(*outputs)
    return GlobalCounters.kernel_count


def test_per_example_gradients_run_as_many_kernels_as_the_hand_written_program():
    """vmap(grad(loss)) of an MLP is one batched graph: it runs as many kernels as the
    per-example-gradient program written by hand, and gives the same numbers as it and as
    torch.func.vmap(torch.func.grad(loss))."""
    w1, b1, w2, x, y = arrays((5, 8), (8,), (8, 3), (6, 5), (6, 3))

    def inputs():
        params = [Tensor(w1).realize(), Tensor(b1).realize(), Tensor(w2).realize()]
        return params, Tensor(x).realize(), Tensor(y).realize()
    mapped = func.vmap(func.grad(_per_example_loss), in_dims=(None, 0, 0))(*inputs())
    by_hand = _per_example_gradients_by_hand(*inputs())
    assert _kernels_of(mapped) == _kernels_of(by_hand)
    theirs = tf.vmap(tf.grad(_per_example_loss), in_dims=(None, 0, 0))(
        [torch.tensor(w1), torch.tensor(b1), torch.tensor(w2)], torch.tensor(x), torch.tensor(y))
    for ours, hand, torch_grad in zip(mapped, by_hand, theirs):
        np.testing.assert_allclose(ours.numpy(), hand.numpy(), rtol=1e-5, atol=1e-6)
        close(ours, torch_grad)
