"""TinyJit with symbolic shapes (issue 16): one capture replays for every bound value, taking
the value from Variable arguments and from input shapes; outputs take the call's shape; nothing
compiles after the capture; a different variable or a shape that no longer matches is a JitError."""
import numpy as np
import pytest

from tinylab import GlobalCounters, Tensor, TinyJit, Variable
from tinylab.errors import JitError

LENGTHS = (3, 5, 1, 16, 7, 12)


def _attention_reference(q, keys, n):
    s = q @ keys[:n].T
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ keys[:n]


def test_replay_across_values_with_a_variable_argument(device, rng):
    keys_np = rng.standard_normal((16, 8)).astype(np.float32)
    keys = Tensor(keys_np).realize()

    @TinyJit
    def attend(q, length):
        return (q @ keys[:length].T).softmax(-1) @ keys[:length]

    compiles_after_capture = None
    for call, n in enumerate(LENGTHS):
        q_np = rng.standard_normal((1, 8)).astype(np.float32)
        out = attend(Tensor(q_np), Variable("i", 1, 16).bind(n))
        np.testing.assert_allclose(out.numpy(), _attention_reference(q_np, keys_np, n),
                                   rtol=1e-4, atol=1e-5)
        if call == 1:  # the second call captured
            compiles_after_capture = GlobalCounters.compile_count
            kernels = attend.kernel_count
            assert kernels > 0
    assert GlobalCounters.compile_count == compiles_after_capture  # replays compile nothing
    assert attend.kernel_count == kernels


def test_replay_with_a_symbolic_input_shape_rebinds_the_output(device, rng):
    data = rng.standard_normal((16, 4)).astype(np.float32)
    source = Tensor(data).realize()

    @TinyJit
    def step(x):
        return (x * 2 + 1).sum(1)

    for n in LENGTHS:
        v = Variable("i", 1, 16).bind(n)
        x = source[:v].contiguous().realize()
        out = step(x)
        assert out.shape == (v,)
        np.testing.assert_allclose(out.numpy(), (data[:n] * 2 + 1).sum(1), rtol=1e-5)


def test_a_kv_cache_written_through_symbolic_slices(rng):
    """A cache assigned one row per step at a symbolic position, read back up to it (the assign
    is realized inside the step, as an optimizer step's are)."""
    rows = rng.standard_normal((8, 4)).astype(np.float32)
    cache = Tensor.zeros(8, 4).contiguous().realize()

    @TinyJit
    def write_and_read(row, position):
        updated = cache[:position].pad(((0, 8 - position), None)) + \
            row.reshape(1, 4).pad(((position, 7 - position), None))
        cache.assign(updated).realize()
        return cache[:position + 1].sum(0)

    for p in range(8):
        out = write_and_read(Tensor(rows[p]), Variable("pos", 0, 7).bind(p))
        np.testing.assert_allclose(out.numpy(), rows[:p + 1].sum(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cache.numpy(), rows, rtol=1e-6)


def test_mismatches_are_clear_errors():
    @TinyJit
    def f(x, length):
        return x[:length] * 2

    x = Tensor(np.ones((8, 2), np.float32))
    for n in (2, 3):
        f(x, Variable("i", 1, 8).bind(n))
    with pytest.raises(JitError, match=r"captured with Variable arguments \[<i\[1-8\]>\], now "
                                       r"called with \[<j\[1-8\]>\]"):
        f(x, Variable("j", 1, 8).bind(2))
    with pytest.raises(JitError, match="input 0 was captured as shape"):
        f(Tensor(np.ones((4, 2), np.float32)), Variable("i", 1, 8).bind(2))
    with pytest.raises(ValueError, match=r"'i' has range \[1, 8\]; 9 is outside it"):
        f(x, Variable("i", 1, 8).bind(9))
    with pytest.raises(JitError, match="must be a bound variable"):
        f(x, Variable("i", 1, 8))


def test_setitem_at_a_symbolic_position_inside_the_jit(rng):
    """tinygrad's KV-cache write: cache[pos:pos+1] = row, realized in the step."""
    rows = rng.standard_normal((8, 4)).astype(np.float32)
    cache = Tensor.zeros(8, 4).contiguous().realize()

    @TinyJit
    def step(row, position):
        cache[position:position + 1] = row
        cache.realize()
        return cache[:position + 1].max(0)

    for p in range(8):
        out = step(Tensor(rows[p:p + 1]), Variable("pos", 0, 7).bind(p))
        np.testing.assert_allclose(out.numpy(), rows[:p + 1].max(0), rtol=1e-6)
    np.testing.assert_allclose(cache.numpy(), rows, rtol=1e-6)
