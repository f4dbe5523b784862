"""An assign that runs inside another value's schedule (a reader realized first) writes a new
version of its buffer like one realized on its own: later reads neither run it again nor read a
stale version. Against numpy, with launches counted by GlobalCounters."""
import numpy as np

from tinylab import GlobalCounters, Tensor

F32 = np.float32


def test_slice_writes_each_read_back_match_numpy(device):
    """A KV-cache pattern: the second write raised KeyError (<COPY float32[3,4]>)."""
    Tensor.manual_seed(0)
    w = Tensor.uniform(4, 4)  # lazy: every write recomputes it
    weight = w.clone().numpy()
    cache = Tensor(np.zeros((3, 4), F32)).realize()
    expected = np.zeros((3, 4), F32)
    for pos in range(3):
        cache[pos:pos + 1] = Tensor.ones(1, 4) @ w
        expected[pos:pos + 1] = np.ones((1, 4), F32) @ weight
        np.testing.assert_allclose((cache[:pos + 1].sum(0) * 1).numpy(),
                                   expected[:pos + 1].sum(0), rtol=1e-6)
    np.testing.assert_allclose(cache.numpy(), expected, rtol=1e-6)


def test_an_assign_run_for_its_reader_is_not_run_again():
    total = Tensor(np.zeros(4, F32)).realize()
    x = Tensor(np.arange(4, dtype=F32)).realize()
    total.assign(total + x)
    np.testing.assert_array_equal((total * 2).numpy(), np.arange(4) * 2)
    GlobalCounters.reset()
    np.testing.assert_array_equal(total.numpy(), np.arange(4))
    assert GlobalCounters.kernel_count == 0
    total.assign(total + x)
    np.testing.assert_array_equal(total.numpy(), np.arange(4) * 2)


def test_a_value_read_before_an_assign_its_reader_ran_keeps_the_old_value():
    buffer = Tensor(np.ones(3, F32)).realize()
    before = buffer * 10  # lazy: the value when written down
    buffer.assign(buffer + 1)
    np.testing.assert_array_equal((buffer * 1).numpy(), [2, 2, 2])
    np.testing.assert_array_equal(before.numpy(), [10, 10, 10])
    buffer[1:2] = Tensor([5.0])
    np.testing.assert_array_equal(buffer.numpy(), [2, 5, 2])
    np.testing.assert_array_equal(before.numpy(), [10, 10, 10])
