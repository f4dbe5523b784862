"""torch.compile(model, backend="tinylab") end to end: found by name through torch's entry points,
user modules (a CNN, an LSTM cell loop, attention through F.scaled_dot_product_attention) forward
and backward against eager, a torch.optim training loop step for step against eager that compiles
no kernel after its first steps, dropout's semantics, constants of the graph module, and the
backend's options.
"""
import copy
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from bridge_check import assert_close, assert_gradients_close  # noqa: E402
from tinylab import GlobalCounters  # noqa: E402


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.norm(self.conv1(x))), 2)
        x = F.gelu(self.conv2(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return F.log_softmax(self.fc(x), -1)


class CellLSTM(nn.Module):
    """An LSTM as users write it by hand: an LSTMCell over the time steps."""

    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(8, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        h = c = torch.zeros(x.shape[0], 16)
        for t in range(x.shape[1]):
            h, c = self.cell(x[:, t], (h, c))
        return self.head(h)


class Attention(nn.Module):
    def __init__(self, width=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x):
        b, t, w = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, w))


MODULES = {"cnn": (SmallCNN, (4, 1, 8, 8)), "lstm": (CellLSTM, (3, 5, 8)),
           "attention": (Attention, (2, 6, 16))}


def _compare_step(make, shape):
    """One forward and backward, compiled and eager, from the same weights and input."""
    torch.manual_seed(0)
    eager = make().train()
    compiled_model = copy.deepcopy(eager)
    x = torch.randn(*shape)
    torch._dynamo.reset()
    out = torch.compile(compiled_model, backend="tinylab")(x)
    ref = eager(x)
    assert_close(out.detach(), ref.detach(), 1e-4, what="forward")
    (out ** 2).mean().backward()
    (ref ** 2).mean().backward()
    assert_gradients_close(eager, compiled_model)
    for (name, b), c in zip(eager.named_buffers(), compiled_model.buffers()):
        assert_close(c, b, 1e-4, what=f"buffer {name}")   # batch norm's running statistics


@pytest.mark.parametrize("name", sorted(MODULES))
def test_user_modules_forward_and_backward_match_eager(name):
    make, shape = MODULES[name]
    _compare_step(make, shape)


def test_the_backend_is_found_by_name_without_importing_tinylab():
    """pip's entry point: a fresh process that imports only torch compiles with 'tinylab'."""
    code = ("import sys, torch\n"
            "assert 'tinylab' in torch._dynamo.list_backends()\n"
            "f = torch.compile(lambda x: (x * 2).exp().sum(0), backend='tinylab')\n"
            "x = torch.randn(3, 4)\n"
            "assert torch.allclose(f(x), (x * 2).exp().sum(0))\n"
            "assert 'tinylab.torch' in sys.modules\n"
            "print('ok')")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert run.stdout.strip().endswith("ok"), run.stderr[-2000:]


def test_a_training_loop_matches_eager_and_compiles_nothing_after_its_first_steps():
    """Ten SGD steps with momentum, compiled and eager: the same losses and weights; from the
    third step on no kernel is built (the JIT replays; the schedules and binaries are cached)."""
    torch.manual_seed(0)
    eager = SmallCNN()
    compiled_model = copy.deepcopy(eager)
    step_fn = torch.compile(compiled_model, backend="tinylab")
    opts = [torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (eager, compiled_model)]
    generator = torch.Generator().manual_seed(1)
    built = []
    for step in range(10):
        x = torch.randn(8, 1, 8, 8, generator=generator)
        y = torch.randint(0, 10, (8,), generator=generator)
        losses = []
        for fn, opt in ((eager, opts[0]), (step_fn, opts[1])):
            opt.zero_grad()
            loss = F.nll_loss(fn(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        assert_close(losses[1], losses[0], 1e-4, what=f"loss at step {step}")
        built.append(GlobalCounters.kernels_built)
    assert built[2:] == [built[2]] * 8, f"kernels built after each step: {built}"
    for (name, p), q in zip(eager.named_parameters(), compiled_model.parameters()):
        assert_close(q.detach(), p.detach(), 1e-3, what=f"{name} after 10 steps")


def test_dropout_keeps_or_scales_each_element_and_its_gradient_follows_the_mask():
    """Dropout draws tinylab's random numbers (not PyTorch's stream): each output is 0 or
    x/(1-p), about p of them 0, and the gradient is the same mask times 1/(1-p)."""
    torch._dynamo.reset()
    fn = torch.compile(lambda x: F.dropout(x, 0.25, training=True), backend="tinylab")
    x = (torch.rand(64, 64) + 1).requires_grad_()
    y = fn(x)
    kept = y != 0
    assert_close(y[kept].detach(), (x[kept] / 0.75).detach(), 1e-6)
    assert 0.18 < 1 - kept.float().mean().item() < 0.32
    y.backward(torch.ones_like(y))
    assert_close(x.grad, kept.float() / 0.75, 1e-6)


def test_bernoulli_draws_with_its_probabilities():
    """torch.bernoulli (dropout as AOTAutograd writes some models' dropout) draws tinylab's
    random numbers: each value 0 or 1, about p of them 1, for a scalar and a tensor p."""
    torch._dynamo.reset()
    fn = torch.compile(lambda x: (torch.bernoulli(x), x.bernoulli(0.2)), backend="tinylab")
    probabilities = torch.full((128, 128), 0.7)
    tensor_p, scalar_p = fn(probabilities)
    for drawn, p in ((tensor_p, 0.7), (scalar_p, 0.2)):
        assert set(drawn.unique().tolist()) <= {0.0, 1.0}
        assert abs(drawn.mean().item() - p) < 0.03


def test_a_constant_of_the_graph_module_is_read():
    """A tensor made in forward from a Python list becomes a get_attr constant of the graph."""
    torch._dynamo.reset()

    def f(x):
        return x * torch.tensor([1.0, -2.0, 3.0]) + torch.tensor(0.5)
    x = torch.randn(4, 3)
    assert_close(torch.compile(f, backend="tinylab")(x), f(x), 1e-6)


def test_options_are_checked():
    torch._dynamo.reset()
    with pytest.raises(Exception, match="unknown options.*colour"):
        torch.compile(lambda x: x + 1, backend="tinylab", options={"colour": 1})(torch.ones(2))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="fallback must be"):
        torch.compile(lambda x: x + 1, backend="tinylab",
                      options={"fallback": "maybe"})(torch.ones(2))


def test_without_the_jit_each_call_runs_the_graph_and_agrees():
    torch._dynamo.reset()
    fn = torch.compile(lambda x: (x @ x.T).relu().sum(1), backend="tinylab",
                       options={"jit": False})
    for seed in range(4):
        x = torch.randn(5, 3, generator=torch.Generator().manual_seed(seed))
        assert_close(fn(x), (x @ x.T).relu().sum(1), 1e-5)


def test_bfloat16_crosses_the_bridge_as_its_bits():
    """A bfloat16 model (weights and input) runs in tinylab's bfloat16 and gives eager's values
    within bfloat16's rounding; the output is a torch.bfloat16 tensor. Called twice: the input
    buffer is refilled, and the second call sees the new values."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(),
                                torch.nn.Linear(16, 4)).to(torch.bfloat16)
    compiled = torch.compile(model, backend="tinylab")
    for _ in range(2):
        x = torch.randn(5, 8).to(torch.bfloat16)
        with torch.no_grad():
            expected, got = model(x), compiled(x)
        assert got.dtype == torch.bfloat16 and got.shape == expected.shape
        assert torch.allclose(got.float(), expected.float(), rtol=3e-2, atol=3e-2)
