"""Resources: 1,000 realize() calls and 200 TinyJit training steps leave the allocator's live
buffer count (runtimes/buffer.LIVE_BUFFERS) flat, as do ops with their own backward rule (live
tensors too), and an allocation larger than the machine
raises MemoryError naming the size, after which the next kernel still runs. (RSS over a training
loop is measured, not asserted, by bench/memory.py.)"""
import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tinylab import Context, Tensor, TinyJit, custom_backward, nn
from tinylab.frontend.realizing import ALL_TENSORS
from tinylab.runtimes.buffer import LIVE_BUFFERS, HostAllocator

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def young_heap():
    """The objects of earlier tests frozen (gc.freeze) while a test here runs: its collections
    scan only its own objects, not the whole heap of a suite's worker (~1.5 s each, late in
    `make test`: the leak tests took 7 s each). Frozen objects are the same before and after a
    test's rounds, so what the rounds leave is counted all the same."""
    gc.freeze()
    yield
    gc.unfreeze()


def live_buffers() -> int:
    gc.collect()
    return len(LIVE_BUFFERS)


def count_after_warmup(step, warmup: int, total: int) -> tuple[int, int]:
    """(live buffers after `warmup` calls, live buffers after `total` calls)."""
    for i in range(warmup):
        step(i)
    before = live_buffers()
    for i in range(warmup, total):
        step(i)
    return before, live_buffers()


def test_thousand_realizes_leave_live_buffers_flat():
    data = RNG.standard_normal((8, 16)).astype(np.float32)
    with Context(DEV="CPU"):  # (every host device shares the allocator; CPU is the quick one)
        weight = Tensor(np.zeros(16, np.float32)).realize()

        def step(i: int):
            x = Tensor(data + i)                       # a fresh input buffer every call
            y = ((x * weight).relu().sum(1) + 1).realize()
            z = (x.max(0) - y.mean()).realize()         # a second schedule reading the first
            weight.assign(weight + z * 1e-6).realize()  # an in-place update, as optimizers do
            return y

        before, after = count_after_warmup(step, 20, 1000)
    assert after <= before, f"{after - before} buffers leaked over 980 realize() rounds"


def test_two_hundred_jit_steps_leave_live_buffers_flat():
    Tensor.manual_seed(0)
    with Context(DEV=""):  # the default device: looking it up must not keep anything alive
        model = nn.Linear(16, 4)
        optimizer = nn.optim.SGD(nn.state.get_parameters(model), lr=0.01)

        @TinyJit
        @Tensor.train()
        def train_step(x: Tensor, y: Tensor) -> Tensor:
            optimizer.zero_grad()
            loss = (model(x) - y).square().mean().backward()
            optimizer.step()
            return loss

        losses = []

        def step(i: int):
            x = Tensor(RNG.standard_normal((32, 16)).astype(np.float32))
            y = Tensor(np.ones((32, 4), np.float32))
            losses.append(train_step(x, y).item())

        before, after = count_after_warmup(step, 10, 200)
    assert train_step.step is not None, "the step was never captured"
    assert after <= before, f"{after - before} buffers leaked over 190 TinyJit steps"
    assert losses[-1] < losses[0]  # and it really trained


# every op that registers its own backward rule (frontend/autograd.py `composite`), realized,
# left lazy, and differentiated: each round's tensors, graphs and buffers must go with it
OWN_RULES = {
    "sigmoid": lambda x: x.sigmoid(),
    "silu": lambda x: x.silu(),
    "hardtanh": lambda x: x.hardtanh(),
    "clip": lambda x: x.clip(0.5, 2.0),
    "fmod": lambda x: x % 3.0,
    "pow": lambda x: x ** (x + 1),
    "rsqrt by pow": lambda x: x ** -0.5,
    "reciprocal by pow": lambda x: x ** -3,
    "std": lambda x: x.std(1),
    "atan2": lambda x: x.atan2(x - 1),
    "windows": lambda x: x.reshape(1, 1, 4, 4).unfold(3, 2, 1),
    "max_unpool": lambda x: Tensor.max_unpool2d(
        *x.reshape(1, 1, 4, 4).max_pool2d(2, return_indices=True), 2),
    "long cumsum": lambda x: x.reshape(-1).repeat(64).cumsum(0),
    "custom_backward, rule(grad, out)": lambda x: custom_backward(
        x.exp(), x, lambda grad, out: grad * out),
}


@pytest.mark.parametrize("name", list(OWN_RULES))
def test_ops_with_their_own_backward_rule_free_their_tensors(name):
    """Regression: a composite rule that held its output (sigmoid's s (1 - s)) kept, through the
    registry's weak key, every output, its graph and its buffer alive for ever: a training
    loop leaked each step, and every later assign scanned the leaked graphs (a 1,000-step loop
    ran 16x slower after two test files had run in the same process); so did a rule that held
    its input, whose .grad refers to the output after backward. Each round's input is a new
    buffer (new graph nodes, the same kernels)."""
    op = OWN_RULES[name]
    with Context(DEV="CPU"):
        def step(i: int):
            fresh = lambda: Tensor(RNG.uniform(0.5, 1.5, (4, 4)).astype(np.float32),  # noqa: E731
                                   requires_grad=True)
            op(fresh()).realize()
            op(fresh())                 # lazy, dropped
            x = fresh()
            y = op(x)
            (y * y).sum().backward()    # the rule runs; x.grad's graph holds y's node
            assert x.grad is not None

        before, after = count_after_warmup(step, 3, 23)
        tensors_before = len(ALL_TENSORS)
        for i in range(20):
            step(i)
        gc.collect()
    assert after <= before, f"{name}: {after - before} buffers leaked over 20 rounds"
    assert len(ALL_TENSORS) <= tensors_before, \
        f"{name}: {len(ALL_TENSORS) - tensors_before} tensors leaked over 20 rounds"


DEFAULT_DEVICE_LOOP = textwrap.dedent("""
    import gc
    import numpy as np
    from tinylab import Tensor
    from tinylab.runtimes.buffer import LIVE_BUFFERS
    def make(i):
        return Tensor(np.full((256, 256), i, np.float32)).sum().item()  # a 256 KiB buffer
    for i in range(300):
        make(i)
    gc.collect()
    print(len(LIVE_BUFFERS))
""")


def test_tensors_on_the_default_device_are_freed():
    """Regression: with DEV unset, every Tensor() asked each backend whether it works; an
    unusable one re-raised one stored exception, whose traceback grew by the caller's frames
    each time, so every tensor (and its data) built that way stayed alive forever."""
    env = {k: v for k, v in os.environ.items() if k != "DEV"}
    done = subprocess.run([sys.executable, "-c", DEFAULT_DEVICE_LOOP], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) < 20, "tensors built on the default device leaked"


def test_allocation_beyond_the_machine_names_the_size():
    with pytest.raises(MemoryError, match=r"cannot allocate 1024\.00 GiB on the host"):
        HostAllocator().alloc(2 ** 40)


def test_too_large_tensor_is_a_memory_error_and_the_next_kernel_runs(device):
    with pytest.raises(MemoryError, match=r"cannot allocate [\d.]+ [MG]iB"):
        (Tensor.zeros(2 ** 38) + 1).realize()
    np.testing.assert_array_equal((Tensor.ones(3) + 1).numpy(), np.full(3, 2, np.float32))
