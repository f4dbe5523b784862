"""The schedule cache (schedule/cache.py, engine/realize.py cached_schedule): a graph whose
structure was scheduled before reuses that schedule over its own buffers. Checked against a
fresh schedule of the same graph (printout, kernel ASTs, slots) and against numpy, with the
cases that must not share a schedule: other consts, a buffer read twice against two buffers,
other scheduler options or CPU target."""
import numpy as np
import pytest

from tinylab import Context, GlobalCounters, Tensor
from tinylab.engine import realize as engine
from tinylab.schedule.schedule import schedule

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def schedule_cache_on():
    """The cache is on by default; these tests say so, whatever the environment sets."""
    with Context(SCHEDULE_CACHE=1):
        yield


def test_the_cache_is_on_by_default():
    from tinylab import config
    assert config.SCHEDULE_CACHE.default == 1


def _data(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _graphs():
    """name -> (build(tensors) -> Tensor, numpy reference, input shapes)."""
    return {
        "elementwise": (lambda a, b: (a + 1) * b.exp(), lambda a, b: (a + 1) * np.exp(b),
                        [(4, 5), (4, 5)]),
        "matmul_relu": (lambda a, b: (a @ b).relu(), lambda a, b: np.maximum(a @ b, 0),
                        [(8, 16), (16, 4)]),
        "softmax": (lambda a: a.softmax(-1),
                    lambda a: np.exp(a - a.max(-1, keepdims=True))
                    / np.exp(a - a.max(-1, keepdims=True)).sum(-1, keepdims=True), [(6, 10)]),
        "argmax": (lambda a: a.argmax(-1), lambda a: a.argmax(-1), [(64, 10)]),
        "broadcast_reduce": (lambda a: a - a.mean(0), lambda a: a - a.mean(0), [(7, 3)]),
        # every .contiguous() is a node of its own (a serial number): each call makes new ones
        "contiguous_copies": (lambda a: (a.contiguous() + 1).contiguous() * a.T.contiguous().T,
                              lambda a: (a + 1) * a, [(5, 6)]),
    }


def _fresh(todo):
    return schedule(todo, engine.scheduler_options(), realized=engine.FreshRealized(
        engine.REALIZED), caps=engine.Device.caps())


@pytest.mark.parametrize("name", list(_graphs()))
def test_a_graph_seen_before_gets_the_fresh_schedule_and_right_numbers(name):
    build, reference, shapes = _graphs()[name]
    first = [_data(*s) for s in shapes]
    build(*[Tensor(x) for x in first]).numpy()  # schedules it once: the cache has it now
    second = [_data(*s) for s in shapes]
    out = build(*[Tensor(x) for x in second])
    todo = [out.node]
    realized = engine.FreshRealized(engine.REALIZED)
    hits = GlobalCounters.schedule_cache_hits
    reused = engine.cached_schedule(todo, realized)
    assert GlobalCounters.schedule_cache_hits == hits + 1
    fresh = _fresh(todo)
    assert str(reused) == str(fresh)
    assert [i.ast for i in reused.items] == [i.ast for i in fresh.items]  # interned: identical
    assert [[s.existing for s in i.slots] for i in reused.items] == \
        [[s.existing for s in i.slots] for i in fresh.items]  # this graph's own buffers
    assert [i.output for i in reused.items] == [i.output for i in fresh.items]
    np.testing.assert_allclose(out.numpy(), reference(*second), rtol=1e-5, atol=1e-6)


def test_reused_schedules_compute_each_call_s_own_values():
    hits = GlobalCounters.schedule_cache_hits
    for _ in range(4):
        x = _data(3, 3)
        np.testing.assert_allclose((Tensor(x) * 2 + 1).sum(1).numpy(), (x * 2 + 1).sum(1),
                                   rtol=1e-6)
    assert GlobalCounters.schedule_cache_hits >= hits + 3


def test_other_consts_and_shared_buffers_are_other_structures():
    x, y = _data(5), _data(5)
    a, b = Tensor(x), Tensor(y)
    np.testing.assert_allclose((a + 1).numpy(), x + 1)
    np.testing.assert_allclose((a + 2).numpy(), x + 2)       # another const: not the x + 1 kernel
    np.testing.assert_allclose((a * b).numpy(), x * y, rtol=1e-6)
    np.testing.assert_allclose((a * a).numpy(), x * x, rtol=1e-6)  # one buffer read twice
    np.testing.assert_allclose((b * a).numpy(), y * x, rtol=1e-6)


def test_a_realized_intermediate_is_a_leaf_of_the_key():
    for _ in range(3):
        x = _data(4, 4)
        h = (Tensor(x) + 1).realize()
        np.testing.assert_allclose((h * h.T).numpy(), (x + 1) * (x + 1).T, rtol=1e-6)


def test_repeated_assigns_through_the_cache():
    w = Tensor(np.zeros(4, np.float32)).realize()
    for step in range(1, 4):
        w.assign(w + 1).realize()
        np.testing.assert_allclose(w.numpy(), np.full(4, step, np.float32))


def test_two_copies_of_one_value_stay_two_buffers_through_the_cache():
    """The key does not spell a CONTIGUOUS node's serial number; the rows still tell two copies
    of one value apart, so assigning one copy leaves the other alone, call after call."""
    for step in range(3):
        x = _data(4)
        a = Tensor(x)
        first, second = a.contiguous(), a.contiguous()
        first.assign(first * 2 + step)
        np.testing.assert_allclose(Tensor.stack(first, second).numpy(),
                                   np.stack([x * 2 + step, x]), rtol=1e-6)


def test_an_eager_conv_training_step_is_scheduled_once(monkeypatch, tmp_path):
    """A conv's weight is copied to a contiguous layout (a CONTIGUOUS node, a new serial each
    call): from the second step on the step reuses its schedule, and the weights it trains
    equal those of the same steps scheduled afresh each time (SCHEDULE_CACHE=0)."""
    from tinylab import nn
    fresh_schedules = []

    def counted(*args, **kwargs):
        fresh_schedules.append(1)
        return schedule(*args, **kwargs)
    monkeypatch.setattr(engine, "schedule", counted)

    def train(steps: int, cache: int) -> tuple[list, list]:
        Tensor.manual_seed(1)
        conv, head = nn.Conv2d(2, 3, 3), nn.Linear(3 * 4 * 4, 5)
        opt = nn.optim.SGD([conv.weight, conv.bias, head.weight, head.bias], lr=0.1)
        rng = np.random.default_rng(0)
        images = Tensor(rng.standard_normal((4, 2, 6, 6)).astype(np.float32)).realize()
        labels = Tensor(rng.integers(0, 5, 4).astype(np.int32)).realize()
        made = []
        # an empty cache folder: no schedule from an earlier process (engine/schedule_store.py)
        with Context(SCHEDULE_CACHE=cache, TINYLAB_CACHE=str(tmp_path)), Tensor.train():
            for _ in range(steps):
                before = len(fresh_schedules)
                opt.zero_grad()
                loss = head(conv(images).relu().flatten(1)).sparse_categorical_crossentropy(labels)
                loss.backward()
                opt.step()
                loss.item()
                made.append(len(fresh_schedules) - before)
        return [p.numpy() for p in (conv.weight, conv.bias, head.weight)], made

    cached, made = train(4, 1)
    assert made[0] >= 1 and made[1:] == [0, 0, 0], made  # steps 2-4: no schedule made
    fresh, made = train(4, 0)
    assert min(made) >= 1, made
    for got, want in zip(cached, fresh):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("setting", [{"FUSE": 0}, {"RELAYOUT": 0}, {"CPU_TARGET": "sse4"}])
def test_options_and_target_are_part_of_the_key(setting):
    x = _data(6, 6)
    (Tensor(x).exp() + 1).sum(0).numpy()
    hits = GlobalCounters.schedule_cache_hits
    with Context(**setting):
        y = _data(6, 6)
        out = (Tensor(y).exp() + 1).sum(0)
        todo = [out.node]
        sched = engine.cached_schedule(todo, engine.FreshRealized(engine.REALIZED))
        if "FUSE" in setting:  # another schedule altogether: it cannot come from the cache
            assert GlobalCounters.schedule_cache_hits == hits
        assert str(sched) == str(_fresh(todo))
        np.testing.assert_allclose(out.numpy(), (np.exp(y) + 1).sum(0), rtol=1e-5)


def test_switched_off_the_cache_is_never_read():
    x = _data(2, 2)
    (Tensor(x) - 3).numpy()
    hits = GlobalCounters.schedule_cache_hits
    with Context(SCHEDULE_CACHE=0):
        np.testing.assert_allclose((Tensor(x) - 3).numpy(), x - 3)
    assert GlobalCounters.schedule_cache_hits == hits


def test_the_cache_holds_no_user_buffer():
    import gc
    import weakref
    big = Tensor(_data(256)).realize()
    held = weakref.ref(big.node.buffer)
    (big * 3).numpy()
    del big
    gc.collect()
    assert held() is None


def _hits():
    return GlobalCounters.schedule_cache_hits


def test_a_write_through_a_view_twice_over_other_buffers():
    """The same setitem-through-a-transpose on two fresh bases, then a read of each base: the
    second reuses the first's schedule and writes its own base, not the first's."""
    for k in range(3):
        start = _data(3, 4)
        base = Tensor(start).realize()
        value = _data(2, 3)
        base.T[1:3] = Tensor(value)  # base[:, 1:3] = value.T
        expected = start.copy()
        expected[:, 1:3] = value.T
        hits = _hits()
        np.testing.assert_array_equal(base.numpy(), expected)
        np.testing.assert_allclose((base * 2).sum(0).numpy(), (expected * 2).sum(0), rtol=1e-6)
        if k:
            assert _hits() > hits


def test_a_view_held_across_a_write_keeps_its_old_values_each_time():
    """A lazy value made before a write reads the snapshot of the old version (a leaf the
    key must follow to the snapshot's buffer), on every repetition of the same structure."""
    for _ in range(3):
        start = _data(4)
        base = Tensor(start).realize()
        before = base * 3           # lazy, made before the write
        base[1] = 7.0
        after = base * 3
        written = start.copy()
        written[1] = 7.0
        np.testing.assert_allclose(before.numpy(), start * 3, rtol=1e-6)
        np.testing.assert_allclose(after.numpy(), written * 3, rtol=1e-6)
        np.testing.assert_array_equal(base.numpy(), written)


def test_assigns_to_two_weights_through_one_cached_schedule():
    """An optimizer-like update `w.assign(w - lr * g)` on two weights alternately: one
    structure, two targets; each keeps its own values."""
    first, second = _data(5), _data(5)
    w1, w2 = Tensor(first.copy()).realize(), Tensor(second.copy()).realize()
    grads = [_data(5) for _ in range(4)]
    hits = _hits()
    for step, grad in enumerate(grads):
        target, reference = (w1, first) if step % 2 == 0 else (w2, second)
        target.assign(target - Tensor(grad) * 0.5).realize()
        reference -= grad * np.float32(0.5)
    assert _hits() >= hits + 3
    np.testing.assert_allclose(w1.numpy(), first, rtol=1e-6)
    np.testing.assert_allclose(w2.numpy(), second, rtol=1e-6)


def test_a_bound_variable_s_value_is_never_taken_from_another_call():
    """The same graph over `Variable.bind(n)` for several n: each result is numpy's for its
    own n (the bound value is part of the key, or the kernel's argument, never a stale one)."""
    from tinylab import Variable
    size = Variable("cache_size", 1, 8)
    x = _data(8)
    for n in (3, 5, 3, 8):
        data = Tensor(x).realize()
        out = (data[:size.bind(n)] * 2 + n).sum()
        np.testing.assert_allclose(out.numpy(), (x[:n] * 2 + n).sum(), rtol=1e-5)
        value = (Tensor([1.0, 2.0]) * size.bind(n)).numpy()
        np.testing.assert_allclose(value, np.array([1.0, 2.0], np.float32) * n)


def test_a_realized_symbolic_value_as_a_leaf():
    """A realized value of a bound variable read by a later graph: the key follows the leaf to
    its buffer (it was cached once as a placeholder the launch was handed)."""
    from tinylab import Variable
    size = Variable("cache_leaf", 1, 10)
    for n in (2, 5, 9):
        Tensor(size.bind(n)).numpy()  # each value realized: a leaf for the graphs below
    base = np.array([1.0, -2.0, 0.5], np.float32)
    x = Tensor(base).realize()
    for n in (2, 5, 9, 2):
        got = (size.bind(n) * x + (size.bind(n) - x) * 2).numpy()
        np.testing.assert_allclose(got, n * base + (n - base) * 2, rtol=1e-6)


def test_a_jitted_step_with_the_cache_on_matches_numpy():
    from tinylab import TinyJit
    weight = _data(6, 4)
    w = Tensor(weight).realize()
    step = TinyJit(lambda x: (x @ w).relu().realize())
    for _ in range(4):
        x = _data(3, 6)
        np.testing.assert_allclose(step(Tensor(x).realize()).numpy(),
                                   np.maximum(x @ weight, 0), rtol=1e-5, atol=1e-6)
