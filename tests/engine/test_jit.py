"""TinyJit: replays equal the plain run, rules are enforced with clear errors, randomness stays
random under replay, the memory planner shares intermediate buffers, and replays on CL launch
with their work-groups."""
import numpy as np
import pytest

from tinylab import Context, Device, Tensor, TinyJit, nn
from tinylab.errors import JitError
from tinylab.schedule.memory import share_by_lifetime


def _train(use_jit: bool, steps: int = 5):
    Tensor.manual_seed(3)
    w1 = Tensor.kaiming_uniform(16, 32).realize()
    w2 = Tensor.kaiming_uniform(32, 4).realize()
    opt = nn.optim.SGD([w1, w2], lr=0.1, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        loss = x.dot(w1).relu().dot(w2).sparse_categorical_crossentropy(y).backward()
        opt.step()
        return loss

    run = TinyJit(step) if use_jit else step
    rng = np.random.default_rng(0)
    losses = []
    with Context(TRAINING=1):
        for _ in range(steps):
            x = Tensor(rng.standard_normal((8, 16)).astype(np.float32))
            y = Tensor(rng.integers(0, 4, 8).astype(np.int32))
            losses.append(run(x, y).item())
    return losses, w1.numpy(), w2.numpy(), run


def test_replay_matches_plain_run():
    plain = _train(False)
    jitted = _train(True)
    np.testing.assert_allclose(jitted[0], plain[0], rtol=1e-5)
    np.testing.assert_allclose(jitted[1], plain[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jitted[2], plain[2], rtol=1e-5, atol=1e-6)
    assert jitted[3].kernel_count > 5


def test_shape_change_is_an_error():
    @TinyJit
    def f(x):
        return (x * 2).sum()
    for _ in range(3):
        f(Tensor.ones(4))
    with pytest.raises(JitError, match=r"input 0 was captured as shape \(4,\)"):
        f(Tensor.ones(5))


def test_item_inside_is_an_error():
    @TinyJit
    def f(x):
        return (x * x.sum().item()).realize()
    f(Tensor.ones(3))
    with pytest.raises(JitError, match="item"):
        f(Tensor.ones(3))


def test_outputs_alias_between_calls():
    @TinyJit
    def f(x):
        return (x + 1).realize()
    f(Tensor([1.0]))
    first = f(Tensor([2.0]))
    assert first.tolist() == [3.0]
    second = f(Tensor([5.0]))
    assert second is first and first.tolist() == [6.0]


def test_random_numbers_change_between_replays():
    @TinyJit
    def f(x):
        return (x + Tensor.rand(4)).realize()
    draws = [f(Tensor.zeros(4)).numpy().copy() for _ in range(4)]
    assert not np.allclose(draws[2], draws[3])


def test_share_by_lifetime():
    steps = [["a", "x"], ["b", "a"], ["c", "b"], ["d", "c"]]
    sizes = {k: ("CPU", 64) for k in "abcdx"}
    rep, saved = share_by_lifetime(steps, sizes, keep={"x", "d"})
    assert rep == {"c": "a"} and saved == 64


def test_loss_after_step_is_the_loss_before_the_update():
    # `loss.backward(); opt.step(); loss.item()`: the optimizer computes the loss in its own
    # schedule, from the weights before the update (as eager PyTorch would report it)
    Tensor.manual_seed(0)
    w = Tensor([[1.0, -2.0], [0.5, 3.0]]).realize()
    x = Tensor([[1.0, 2.0]])
    opt = nn.optim.SGD([w], lr=0.5)
    loss = (x @ w).square().sum() if hasattr(Tensor, "square") else ((x @ w) * (x @ w)).sum()
    loss.backward()
    opt.step()
    expected = float(((np.array([[1.0, 2.0]]) @ np.array([[1.0, -2.0], [0.5, 3.0]])) ** 2).sum())
    assert abs(loss.item() - expected) < 1e-4


# ---- TinyJit replays on a GPU-style runtime --------------------------------------------------
@pytest.mark.skipif(not Device["CL"].available, reason="no OpenCL device")
def test_tinyjit_replays_launch_cl_kernels_with_their_work_groups():
    with Context(DEV="CL"):
        plain, jitted = _train(False, 3), _train(True, 3)
    np.testing.assert_allclose(jitted[0], plain[0], rtol=1e-5)
    np.testing.assert_allclose(jitted[1], plain[1], rtol=1e-5, atol=1e-6)


# ---- a step that assigns to state it closes over ------------------------------------------------
ASSIGN_STEPS = {  # (step body on state `cache` and input `row`) -> the tensor returned
    "assign then read the state": lambda cache, row: (cache.assign(cache + row), cache.sum(0))[1],
    "read the assigned value": lambda cache, row: (u := cache + row, cache.assign(u), u.sum(0))[2],
    "read a copy of the assign": lambda cache, row: cache.assign(cache + row).contiguous().sum(0),
}


@pytest.mark.parametrize("jit", [True, False], ids=["jit", "plain"])
@pytest.mark.parametrize("form", list(ASSIGN_STEPS))
def test_assign_inside_a_step_lands_once_per_call(form, jit):
    """cache.assign(cache + row) left pending by the step ran again on the next call (a lazy
    assign stayed on the tensor after a reader had run it): sums 4, 12, 20, 44, 92 for 4, 8, 12,
    16, 20; the contiguous form stopped writing the cache after the capture. The plain function
    gives the same numbers."""
    body = ASSIGN_STEPS[form]
    cache = Tensor.zeros(4).contiguous().realize()
    step = TinyJit(lambda row: body(cache, row)) if jit else (lambda row: body(cache, row))
    expected, rng = np.zeros(4, np.float32), np.random.default_rng(1)
    for call in range(7):
        row = rng.standard_normal(4).astype(np.float32)
        expected += row
        got = step(Tensor(row)).numpy()
        np.testing.assert_allclose(got, expected.sum(), rtol=1e-5, err_msg=f"call {call}")
        np.testing.assert_allclose(cache.numpy(), expected, rtol=1e-5, err_msg=f"call {call}")
    if jit:
        assert step.kernel_count >= 2  # the assign and the sum were captured


def test_a_lazy_reader_of_a_ran_assign_keeps_its_value_over_the_next_assign():
    """u read c's first assign, which ran under another reader; the second assign then failed
    (KeyError on a COPY of c) instead of leaving u at the first value."""
    c = Tensor.zeros(4).contiguous().realize()
    r = np.arange(4, dtype=np.float32)
    c.assign(c + Tensor(r))
    u = c * 10
    np.testing.assert_allclose((c * 1).sum(0).numpy(), r.sum())
    c.assign(c + Tensor(r)).realize()
    np.testing.assert_allclose(u.numpy(), r * 10)
    np.testing.assert_allclose(c.numpy(), 2 * r)
