"""Every cache of the engine is registered with EngineState, bounded, and emptied by one
`EngineState.reset()` (with tinylab.memo's tables); a full cache forgets its oldest entries and
results stay right; compile threads asking for the same kernel at once compile it once."""
import threading
from collections import Counter

import numpy as np
import pytest

from tinylab import Context, Device, Tensor, trace
from tinylab import memo
from tinylab.engine import kernel_builder, realize
from tinylab.engine.engine_state import BoundedTable, EngineState

STATE = realize.STATE


def _work(scale: float) -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(-1, 1, 48, dtype=np.float32).reshape(6, 8)
    got = ((Tensor(x) * scale).exp().sum(axis=1) + scale).numpy()
    return got, np.exp(x * np.float32(scale)).sum(axis=1) + np.float32(scale)


def test_every_engine_cache_is_registered_and_bounded():
    got, want = _work(1.5)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert {"runners", "announced", "display records", "schedules", "device caps"} <= \
        set(STATE.caches)
    assert all(isinstance(table, BoundedTable) for table in STATE.caches.values())
    for name, (entries, limit) in STATE.cache_sizes().items():
        assert 0 < limit < 1 << 20 and entries <= limit, name
    assert STATE.cache_sizes()["runners"][0] >= 1
    with pytest.raises(TypeError, match="bounded"):
        EngineState().register_cache("unbounded", {})
    with pytest.raises(ValueError, match="registered already"):
        STATE.register_cache("runners", BoundedTable(4))


def test_reset_empties_every_cache_and_results_stay_right():
    first, want = _work(0.5)
    x = Tensor(np.arange(4, dtype=np.float32)).realize()
    kept = (x + 1).realize()           # a value computed before the reset stays computed
    STATE.reset()
    sizes = STATE.cache_sizes()
    assert all(entries == 0 for entries, _ in sizes.values()), sizes
    assert all(size == 0 for size in memo.sizes().values())
    assert "index ranges" in memo.MEMOS    # the frontend's arange graphs are a memo table too
    again, _ = _work(0.5)              # compiled again (the disk cache may hit)
    np.testing.assert_array_equal(again, first)
    np.testing.assert_allclose(again, want, rtol=1e-5)
    np.testing.assert_array_equal(kept.numpy(), np.arange(4) + 1)
    assert STATE.cache_sizes()["runners"][0] >= 1


def test_a_full_cache_forgets_its_oldest_entries(monkeypatch):
    monkeypatch.setattr(STATE.runners, "limit", 3)
    for scale in (2.0, 3.0, 4.0, 5.0, 6.0):
        got, want = _work(scale)
        np.testing.assert_allclose(got, want, rtol=1e-5)
        assert len(STATE.runners) <= 3
    table = BoundedTable(2)
    table["a"], table["b"] = 1, 2
    assert table.get("a") == 1        # a use: "b" is now the oldest
    table["c"] = 3
    assert list(table) == ["a", "c"]


def test_threads_compile_each_kernel_once_and_compute_right(monkeypatch):
    """Eight threads ask for six kernels at once (three each kernel asked for by several
    threads, three by one): each kernel compiles once; realizing them then compiles nothing
    more, and every result matches numpy."""
    scales = (1.25, 1.75, 2.25, 2.75, 3.25, 3.75)
    with trace() as recorded:
        wanted = [_work(scale) for scale in scales]
    asts = [kernel.ast for kernel in recorded.kernels]
    assert len(set(asts)) == len(asts) == len(scales)
    STATE.reset()                      # none of them compiled in this process now
    built = Counter()
    original = kernel_builder._Build.add

    def counting(build, job):  # once per kernel a builder makes (plans or loads)
        built[job.key] += 1
        return original(build, job)
    monkeypatch.setattr(kernel_builder._Build, "add", counting)
    asked = [asts[0], asts[0], asts[0], asts[1], asts[1], asts[2], asts[3], asts[4]] + [asts[5]]
    start, runners, errors = threading.Barrier(len(asked)), [None] * len(asked), []

    def compile_one(i):
        try:
            start.wait()
            runners[i] = realize.compile_kernel(Device.DEFAULT, asked[i])
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)
    threads = [threading.Thread(target=compile_one, args=(i,)) for i in range(len(asked))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert sorted(built.values()) == [1] * len(scales)     # each kernel compiled once
    assert runners[0] is runners[1] is runners[2] and runners[3] is runners[4]
    with Context(PARALLEL_COMPILE=1):
        for scale, (_, want) in zip(scales, wanted):
            got, _ = _work(scale)
            np.testing.assert_allclose(got, want, rtol=1e-5)
    assert sorted(built.values()) == [1] * len(scales)     # realizing reused every one
    STATE.reset()   # now one realize of all six: its schedule compiles them on the thread pool
    x = np.linspace(-1, 1, 48, dtype=np.float32).reshape(6, 8)
    with Context(PARALLEL_COMPILE=1):
        outs = [(Tensor(x) * scale).exp().sum(axis=1) + scale for scale in scales]
        outs[0].realize(*outs[1:])
    for out, (_, want) in zip(outs, wanted):
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)
    assert sorted(built.values()) == [2] * len(scales)     # once more each, after the reset
