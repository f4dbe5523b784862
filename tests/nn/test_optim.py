"""Optimizers against torch.optim step for step (10 steps, same initial weights and gradients),
LAMB against a float64 numpy implementation of the paper's update, and the properties a TinyJit
capture relies on: every step runs the same kernels, and all state lives in tensors."""
import numpy as np
import pytest
import torch

import tinylab
from tinylab import Tensor, nn

STEPS = 10
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
SHAPES = [(4, 3), (5,), ()]


def _initial_weights_and_gradients(seed=0):
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    gradients = [[rng.standard_normal(s).astype(np.float32) for s in SHAPES]
                 for _ in range(STEPS)]
    return weights, gradients


CONFIGS = {  # name: (tinylab optimizer, torch optimizer)
    "sgd": (lambda p: nn.optim.SGD(p, lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
    "sgd_momentum": (lambda p: nn.optim.SGD(p, lr=0.05, momentum=0.9),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
    "sgd_nesterov_decay": (
        lambda p: nn.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    "sgd_dampening": (lambda p: nn.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.3),
                      lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.3)),
    "adam": (lambda p: nn.optim.Adam(p, lr=0.1), lambda p: torch.optim.Adam(p, lr=0.1)),
    "adam_l2_betas": (
        lambda p: nn.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
        lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    "adamw": (lambda p: nn.optim.AdamW(p, lr=0.1), lambda p: torch.optim.AdamW(p, lr=0.1)),
    "adamw_strong_decay": (lambda p: nn.optim.AdamW(p, lr=0.01, b1=0.5, weight_decay=0.5),
                           lambda p: torch.optim.AdamW(p, lr=0.01, betas=(0.5, 0.999),
                                                       weight_decay=0.5)),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_optimizer_matches_torch_for_ten_steps_of_given_gradients(name):
    make_ours, make_theirs = CONFIGS[name]
    weights, gradients = _initial_weights_and_gradients()
    ours = [Tensor(w.copy(), requires_grad=True) for w in weights]
    theirs = [torch.tensor(w.copy(), requires_grad=True) for w in weights]
    opt, reference = make_ours(ours), make_theirs(theirs)
    for step, grads in enumerate(gradients):
        opt.zero_grad()
        reference.zero_grad()
        for o, t, g in zip(ours, theirs, grads):
            o.grad, t.grad = Tensor(g), torch.tensor(g)
        opt.step()
        reference.step()
        for o, t in zip(ours, theirs):
            np.testing.assert_allclose(o.numpy(), t.detach().numpy(), **TOLERANCE,
                                       err_msg=f"step {step + 1}")
    assert opt.step_count.item() == STEPS


class TinyMLP:
    def __init__(self):
        self.layers = [nn.Linear(6, 8), nn.Linear(8, 3)]

    def __call__(self, x):
        return self.layers[1](self.layers[0](x).relu())


@pytest.mark.parametrize("name", ["sgd_nesterov_decay", "adam", "adamw"])
def test_training_a_model_matches_torch_for_ten_steps(name):
    """Gradients from backward on both sides (so differences compound through the model)."""
    make_ours, make_theirs = CONFIGS[name]
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    ours = TinyMLP()
    nn.state.load_state_dict(ours, {k.replace("2.", "layers.1.").replace("0.", "layers.0."):
                                    v.numpy() for k, v in theirs.state_dict().items()})
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((16, 6)).astype(np.float32), rng.integers(0, 3, 16)
    opt, reference = make_ours(nn.state.get_parameters(ours)), make_theirs(theirs.parameters())
    for _ in range(STEPS):
        opt.zero_grad()
        ours(Tensor(x)).sparse_categorical_crossentropy(Tensor(y.astype(np.int32))).backward()
        opt.step()
        reference.zero_grad()
        torch.nn.functional.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y)).backward()
        reference.step()
    for name_, value in theirs.state_dict().items():
        layer, kind = int(name_[0]) // 2, name_.split(".")[1]
        got = getattr(ours.layers[layer], kind).numpy()
        np.testing.assert_allclose(got, value.numpy(), rtol=1e-4, atol=1e-5, err_msg=name_)


# ---- LAMB: no torch version, so a float64 numpy transcription of the paper's Algorithm 2 ----
def lamb_reference(weights, gradients, lr, b1, b2, eps, weight_decay):
    x = [w.astype(np.float64) for w in weights]
    m = [np.zeros_like(w) for w in x]
    v = [np.zeros_like(w) for w in x]
    history = []
    for t, grads in enumerate(gradients, start=1):
        for i, g in enumerate(grads):
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            r = (m[i] / (1 - b1 ** t)) / (np.sqrt(v[i] / (1 - b2 ** t)) + eps)
            update = r + weight_decay * x[i]
            weight_norm, update_norm = np.linalg.norm(x[i]), np.linalg.norm(update)
            trust = weight_norm / update_norm if weight_norm > 0 and update_norm > 0 else 1.0
            x[i] = x[i] - lr * trust * update
        history.append([w.copy() for w in x])
    return history


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_lamb_matches_the_papers_update_in_float64(weight_decay):
    weights, gradients = _initial_weights_and_gradients(seed=5)
    weights[1] = np.zeros_like(weights[1])  # ||x|| = 0: the trust ratio falls back to 1
    params = [Tensor(w.copy(), requires_grad=True) for w in weights]
    opt = nn.optim.LAMB(params, lr=0.02, weight_decay=weight_decay)
    expected = lamb_reference(weights, gradients, 0.02, 0.9, 0.999, 1e-6, weight_decay)
    for step, grads in enumerate(gradients):
        for p, g in zip(params, grads):
            p.grad = Tensor(g)
        opt.step()
        for p, e in zip(params, expected[step]):
            np.testing.assert_allclose(p.numpy(), e, **TOLERANCE, err_msg=f"step {step + 1}")


def test_learning_rate_changed_through_its_tensor_matches_torch():
    weights, gradients = _initial_weights_and_gradients(seed=3)
    ours = Tensor(weights[0].copy(), requires_grad=True)
    theirs = torch.tensor(weights[0].copy(), requires_grad=True)
    opt, reference = nn.optim.Adam([ours], lr=0.1), torch.optim.Adam([theirs], lr=0.1)
    for step, grads in enumerate(gradients[:4]):
        if step == 2:  # what an LR schedule does
            opt.lr.assign(Tensor([0.01]))
            reference.param_groups[0]["lr"] = 0.01
        ours.grad, theirs.grad = Tensor(grads[0]), torch.tensor(grads[0])
        opt.step()
        reference.step()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **TOLERANCE)


# ---- what a TinyJit capture relies on ----
def _step_kernel_sources(opt, params, grads):
    for p, g in zip(params, grads):
        p.grad = Tensor(g)
    Tensor.realize(*[p.grad for p in params])
    with tinylab.trace() as record:
        opt.step()
    return [k.source for k in record.kernels]


@pytest.mark.parametrize("make", [
    lambda p: nn.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1),
    lambda p: nn.optim.Adam(p, weight_decay=0.1), lambda p: nn.optim.LAMB(p)])
def test_every_step_runs_the_same_kernels_and_keeps_state_in_tensors(make):
    """Step counts, bias corrections and lr are tensor values, not constants baked into the
    kernels, so the kernels of step 2 and step 3 are identical (a captured step replays). The
    first step runs those kernels too, and nothing else: the state starts as realized buffers
    (no fill kernel compiled on its own before the step's batch)."""
    weights, gradients = _initial_weights_and_gradients(seed=4)
    params = [Tensor(w.copy(), requires_grad=True) for w in weights]
    opt = make(params)
    first = _step_kernel_sources(opt, params, gradients[0])
    python_state = {k: v for k, v in vars(opt).items() if isinstance(v, (int, float, bool))}
    second = _step_kernel_sources(opt, params, gradients[1])
    third = _step_kernel_sources(opt, params, gradients[2])
    assert second and first == second == third
    assert python_state == {k: v for k, v in vars(opt).items()
                            if isinstance(v, (int, float, bool))}
    assert opt.step_count.item() == 3


def test_tinyjit_replays_optimizer_steps_like_eager_steps():
    try:
        from tinylab import TinyJit
    except ImportError:
        pytest.skip("TinyJit is not available yet")
    weights, gradients = _initial_weights_and_gradients(seed=6)
    eager = [Tensor(w.copy(), requires_grad=True) for w in weights[:2]]
    jitted = [Tensor(w.copy(), requires_grad=True) for w in weights[:2]]
    eager_opt, jit_opt = nn.optim.Adam(eager, lr=0.05), nn.optim.Adam(jitted, lr=0.05)

    @TinyJit
    def train_step(*grads):
        for p, g in zip(jitted, grads):
            p.grad = g
        jit_opt.step()
        return jitted[0]

    for grads in gradients[:5]:
        for p, g in zip(eager, grads):
            p.grad = Tensor(g)
        eager_opt.step()
        train_step(*[Tensor(g) for g in grads[:2]])
    for e, j in zip(eager, jitted):
        np.testing.assert_allclose(j.numpy(), e.numpy(), **TOLERANCE)


# ---- buffers, zero_grad and bad use ----
def test_step_realizes_batchnorm_running_stats_and_zero_grad_clears():
    layer = nn.BatchNorm(3)
    opt = nn.optim.SGD(nn.state.get_parameters(layer), lr=0.1)
    buffers = {id(b) for b in opt.buffers}
    assert id(layer.running_mean) in buffers and id(layer.num_batches_tracked) in buffers
    x = Tensor(np.arange(12, dtype=np.float32).reshape(4, 3))
    with Tensor.train():
        layer(x).sum().backward()
    opt.step()
    assert repr(layer.running_mean).startswith("<Tensor realized")
    np.testing.assert_allclose(layer.running_mean.numpy(), 0.1 * x.numpy().mean(0), rtol=1e-6)
    opt.zero_grad()
    assert layer.weight.grad is None and layer.bias.grad is None


@pytest.mark.parametrize("make, error, words", [
    (lambda p: nn.optim.SGD(p, lr=-1.0), ValueError, "lr"),
    (lambda p: nn.optim.SGD(p, nesterov=True), ValueError, "nesterov"),
    (lambda p: nn.optim.SGD(p, momentum="0.9"), TypeError, "momentum"),
    (lambda p: nn.optim.Adam(p, b1=1.0), ValueError, "b1"),
    (lambda p: nn.optim.Adam(p, betas=(0.9, 1.5)), ValueError, "b2"),
    (lambda p: nn.optim.AdamW(p, weight_decay=-0.1), ValueError, "weight_decay"),
    (lambda p: nn.optim.Adam([{"params": p}]), TypeError, "parameter groups"),
    (lambda p: nn.optim.Adam([p[0], 3.0]), TypeError, "params\\[1\\]"),
    (lambda p: nn.optim.Adam([Tensor([1, 2])]), ValueError, "no float parameters"),
])
def test_bad_optimizer_arguments_fail_early(make, error, words):
    with pytest.raises(error, match=words):
        make([Tensor([1.0, 2.0], requires_grad=True)])


def test_step_without_gradient_names_the_parameter():
    a, b = Tensor([1.0], requires_grad=True), Tensor([2.0, 3.0], requires_grad=True)
    opt = nn.optim.Adam([a, b])
    a.grad = Tensor([0.5])
    with pytest.raises(RuntimeError, match=r"parameter 1 \(2,\) has no gradient"):
        opt.step()
