"""State in one place: the engine's caches live in `Device.state` behind one lock (compile threads
share it), the symbolic intern table forgets dead expressions and its memo tables are bounded,
a trace can be suspended and resumed, and TinyJit captures through a public hook. (Deep chains
at the default recursion limit: test_deep_chains.py.)"""
import threading

import numpy as np

from tinylab import Device, Tensor, trace
from tinylab.engine import realize
from tinylab.engine import trace as tracing
from tinylab.schedule.schedule import schedule


def test_engine_caches_are_one_object_reachable_from_device():
    assert realize.STATE is Device.state and realize.REALIZED is Device.state.realized
    x = Tensor(np.arange(6, dtype=np.float32)).realize()
    (x * 5 + 2).numpy()
    assert any(key[0] == "CPU" for key in Device.state.runners)


def test_a_kernels_compilation_steps_are_kept_in_the_engine_state():
    x = Tensor(np.arange(6, dtype=np.float32), device="CPU").realize()
    with trace() as recorded:
        np.testing.assert_allclose((x * 9 - 4).numpy(), np.arange(6) * 9 - 4)
    (record,) = recorded.kernels
    runner = next(r for r in Device.state.runners.values() if r.source == record.source)
    assert runner.record is record.compiled and runner.record.steps() == record.steps
    assert record.steps[0][0] == "kernel AST" and record.steps[-1] == ("source (C)", record.source)


def test_compile_threads_share_one_runner_per_kernel():
    x = Tensor(np.arange(12, dtype=np.float32) - 3).realize()
    (kernel,) = schedule([(x * 7 - 1).exp2().node], realized=realize.REALIZED).kernels
    runners, barrier = [], threading.Barrier(4)

    def compile_one():
        barrier.wait()
        runners.append(realize.compile_kernel("CPU", kernel.ast))

    threads = [threading.Thread(target=compile_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(runners) == 4 and all(r is runners[0] for r in runners)


def test_trace_suspend_and_resume():
    x = Tensor(np.ones(4, dtype=np.float32)).realize()
    with trace() as recorded:
        (x + 1).numpy()
        tracing.suspend(recorded)
        (x + 2).numpy()  # not recorded
        tracing.resume(recorded)
        (x + 3).numpy()
    assert len(recorded.realizes) == 2
    assert recorded not in [t for t in tracing.active()]


def test_capturing_sees_every_launch():
    x = Tensor(np.arange(5, dtype=np.float32)).realize()
    launches = []
    with realize.capturing(lambda runner, buffers, var_vals: launches.append(runner)):
        got = ((x + 1) * 2).numpy()
    np.testing.assert_array_equal(got, (np.arange(5) + 1) * 2)
    assert len(launches) == 1 and launches[0] is not None
    assert not realize.STATE.captures


def test_one_capture_flag_the_engines():
    """TinyJit's capture is the engine's capture (EngineState.capturer): set while a step is
    captured, None before, after, on replay and while values outside the step are computed."""
    from tinylab import TinyJit
    seen = []
    weight = Tensor(np.arange(4, dtype=np.float32)) * 3   # lazy: computed outside the step

    @TinyJit
    def step(x):
        seen.append(realize.capturer())
        return (x * weight + 1).realize()

    for value in range(4):
        x = Tensor(np.full(4, value, np.float32)).realize()
        got = step(x).numpy()
        np.testing.assert_array_equal(got, value * np.arange(4, dtype=np.float32) * 3 + 1)
        assert realize.capturer() is None and not realize.STATE.captures
    assert seen == [None, step]   # the first call runs plainly, the second captures
    with realize.capturing(lambda *_: None, owner="outer"):
        assert realize.capturer() == "outer"
        with realize.STATE.captures_paused():
            assert realize.capturer() is None
        assert realize.capturer() == "outer"
