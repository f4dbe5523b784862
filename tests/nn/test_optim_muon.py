"""Muon against a numpy model of tinygrad's Muon (momentum, nesterov, Newton-Schulz on
(rows, -1)), and LAMB's state under tinygrad's names (m, v, b1_t, b2_t)."""
import numpy as np
import pytest

from tinylab import Tensor
from tinylab.nn import optim
from tinylab.nn.state import get_state_dict

QUINTIC = (3.4445, -4.775, 2.0315)


def _newton_schulz(g, steps, coefficients, eps=1e-7):
    if g.shape[0] > g.shape[1]:
        return _newton_schulz(g.T, steps, coefficients, eps).T
    x = g / (np.sqrt((g * g).sum()) + eps)
    for _ in range(steps):
        gram = x @ x.T
        x = sum(c * np.linalg.matrix_power(gram, i) @ x for i, c in enumerate(coefficients))
    return x


def _reference(weights, grads, lr, momentum, nesterov, steps):
    """The weights after one Muon step per gradient, in float64."""
    weights = [w.astype(np.float64) for w in weights]
    buffers = [np.zeros_like(w) for w in weights]
    for step_grads in grads:
        for k, g in enumerate(step_grads):
            g = g.astype(np.float64)
            if momentum:
                buffers[k] = momentum * buffers[k] + g
                g = g + momentum * buffers[k] if nesterov else buffers[k]
            shaped = _newton_schulz(g.reshape(g.shape[0], -1), steps, QUINTIC)
            weights[k] = weights[k] - lr * shaped.reshape(g.shape)
    return weights


@pytest.mark.parametrize("momentum, nesterov, steps", [(0.95, True, 5), (0.9, False, 3),
                                                       (0.0, False, 2)])
def test_muon_matches_a_numpy_model_of_tinygrads_update(momentum, nesterov, steps):
    rng = np.random.default_rng(7)
    shapes = [(4, 6), (5, 2, 3), (3,)]
    weights = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    targets = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    params = [Tensor(w.copy(), requires_grad=True) for w in weights]
    opt = optim.Muon(params, lr=0.05, momentum=momentum, nesterov=nesterov, ns_steps=steps)
    grads = []
    for _ in range(3):  # loss sum((p - target)^2 / 2): the gradient is p - target
        grads.append([p.numpy() - t for p, t in zip(params, targets)])
        opt.zero_grad()
        sum(((p - Tensor(t)) ** 2 / 2).sum() for p, t in zip(params, targets)).backward()
        opt.step()
        expected = _reference(weights, grads, 0.05, momentum, nesterov, steps)
        for p, e in zip(params, expected):
            np.testing.assert_allclose(p.numpy(), e, rtol=2e-4, atol=2e-5)


def test_muon_trains_a_linear_fit_down():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 6)).astype(np.float32)
    y = x @ rng.standard_normal((6, 4)).astype(np.float32)
    w = Tensor.zeros(6, 4, requires_grad=True)
    opt = optim.Muon([w], lr=0.05)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = ((Tensor(x) @ w - Tensor(y)) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses


def test_lamb_state_has_tinygrads_names_and_b_powers():
    p = Tensor([1.0, -2.0, 3.0], requires_grad=True)
    opt = optim.LAMB([p], lr=0.01, b1=0.8, b2=0.9)
    for _ in range(3):
        opt.zero_grad()
        (p * p).sum().backward()
        opt.step()
    state = get_state_dict(opt)
    assert {"b1_t", "b2_t", "m.0", "v.0"} <= set(state), sorted(state)
    np.testing.assert_allclose(state["b1_t"].numpy(), [0.8 ** 3], rtol=1e-6)
    np.testing.assert_allclose(state["b2_t"].numpy(), [0.9 ** 3], rtol=1e-6)
