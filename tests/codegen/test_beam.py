"""BEAM search: the winner computes what the plain kernel computes, is at least as fast on the
timer's own measurements, and is cached on disk so a second search reuses it."""
import numpy as np

from tinylab import Device, Tensor
from tinylab.codegen import beam
from tinylab.codegen.plan import KernelPlan
from tinylab.engine.realize import REALIZED
from tinylab.schedule.schedule import schedule


def _plan(n=32):
    a = Tensor(np.random.default_rng(0).random((n, n), dtype=np.float32)).realize()
    b = Tensor(np.random.default_rng(1).random((n, n), dtype=np.float32)).realize()
    (kernel,) = schedule([(a @ b).node], realized=REALIZED).kernels
    return KernelPlan.from_ast(kernel.ast)


def test_beam_winner_matches_plain_and_is_cached(tmp_path, monkeypatch):
    plan, device = _plan(), Device["CPU"]
    winner = beam.beam_search(plan, device, width=2, cache_dir=tmp_path, rounds=1)
    timer = beam._Timer(device, plan)
    # a winner may sum in another order (BLOCK, UNROLL): equal up to float rounding
    np.testing.assert_allclose(timer.output(winner), timer.output(plan), rtol=1e-5, atol=1e-5)
    assert timer.time(winner) <= timer.time(plan) * 1.5  # noisy machine: no regression beyond noise
    assert len(list(tmp_path.glob("*.json"))) == 1
    calls = []
    monkeypatch.setattr(beam._Timer, "time", lambda self, p: calls.append(p) or 1.0)
    again = beam.beam_search(plan, device, width=2, cache_dir=tmp_path, rounds=2)
    assert again.opts == winner.opts and not calls  # from the cache: nothing timed


def test_beam_through_the_engine(tmp_path):
    from tinylab import Context
    from tinylab.config import CACHE
    with Context(BEAM=1, TINYLAB_CACHE=str(tmp_path)):
        assert CACHE.value == str(tmp_path)
        a = Tensor(np.arange(64, dtype=np.float32).reshape(8, 8))
        out = (a @ a.T + 1).numpy()
    ref = np.arange(64, dtype=np.float32).reshape(8, 8)
    np.testing.assert_allclose(out, ref @ ref.T + 1, rtol=1e-5)


def test_second_process_uses_the_compile_cache(tmp_path):
    import subprocess
    import sys
    code = ("from tinylab import Tensor, GlobalCounters; import numpy as np;"
            "x = Tensor(np.ones((16, 16), np.float32)); (x @ x + 3).exp().numpy();"
            "print(GlobalCounters.compile_count)")
    env = {"TINYLAB_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin", "TINYLAB_CALIBRATE": "0"}
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert int(first.stdout.split()[-1]) >= 1, first.stderr
    assert int(second.stdout.split()[-1]) == 0, second.stderr


def test_tune_picks_a_candidate_that_matches_plain_and_caches_it(tmp_path, monkeypatch):
    """TUNE=1's narrow search: every candidate plan is correct, the winner (with threads) equals
    the plain kernel, and a second tune reads the winner from disk without timing anything."""
    from tinylab.codegen.heuristic import candidates
    plan, device = _plan(48), Device["CPU"]
    timer = beam._Timer(device, plan)
    expected = timer.output(plan)
    options = candidates(plan, device.renderer.supported_actions, device.target)
    assert len(options) > 1
    for option in options:
        np.testing.assert_allclose(timer.output(option), expected, rtol=1e-4, atol=1e-4)
    winner = beam.tune(plan, device, device.target, cache_dir=tmp_path)
    np.testing.assert_allclose(timer.output(winner), expected, rtol=1e-4, atol=1e-4)
    calls = []
    monkeypatch.setattr(beam._Timer, "time", lambda self, p, give_up=0: calls.append(p) or 1.0)
    assert beam.tune(plan, device, device.target, cache_dir=tmp_path).opts == winner.opts
    assert not calls


def test_ignore_beam_cache_searches_again_and_rewrites(tmp_path, monkeypatch):
    """IGNORE_BEAM_CACHE=1: a cached winner is not read back (the search times candidates
    again), and the new winner replaces the cache entry."""
    plan, device = _plan(16), Device["CPU"]
    beam.beam_search(plan, device, width=1, cache_dir=tmp_path, rounds=1)
    (entry,) = tmp_path.glob("*.json")
    entry.write_text("[]")  # a cached "winner" with no actions
    timed = []
    original = beam._Timer.time
    monkeypatch.setattr(beam._Timer, "time",
                        lambda self, p, *args: timed.append(p) or original(self, p, *args))
    assert beam.beam_search(plan, device, width=1, cache_dir=tmp_path, rounds=1).opts == ()
    assert not timed  # read from the cache
    beam.beam_search(plan, device, width=1, cache_dir=tmp_path, rounds=1, ignore_cache=True)
    assert timed  # searched again
    assert len(list(tmp_path.glob("*.json"))) == 1


def test_ignore_beam_cache_setting_reaches_the_search(monkeypatch):
    from tinylab import Context
    from tinylab.engine import realize
    seen = []
    monkeypatch.setattr(beam, "beam_search", lambda *args, **kw: seen.append(kw) or args[0])
    monkeypatch.setattr(beam, "tune", lambda *args, **kw: seen.append(kw) or args[0])
    plan = _plan(16)
    for flag in (0, 1):
        with Context(IGNORE_BEAM_CACHE=flag):
            realize.choose_plan("CPU", plan.ast, noopt=False, beam=1)
    assert [kw["ignore_cache"] for kw in seen] == [False, True]


def test_beam_on_opencl_launches_the_whole_grid(tmp_path):
    """BEAM called a GPU candidate as fn(*handles), without realize's launch size: on CL that
    ran one work-item, so candidates were timed and checked on the wrong launch. The winner's
    output and the plain kernel's now equal numpy's product, as realize's Runner computes it."""
    import pytest
    from tinylab import Context
    device = Device["CL"]
    if not device.available:
        pytest.skip("no OpenCL device (PoCL)")
    rng = np.random.default_rng(3)
    a_np, b_np = (rng.random((32, 32), dtype=np.float32) for _ in range(2))
    with Context(DEV="CL"):
        a, b = Tensor(a_np).realize(), Tensor(b_np).realize()
        (kernel,) = schedule([(a @ b).node], realized=REALIZED).kernels
    plan = KernelPlan.from_ast(kernel.ast)
    winner = beam.beam_search(plan, device, width=2, cache_dir=tmp_path, rounds=1)
    timer = beam._Timer(device, plan)
    a_buf, b_buf = (buf for buf in timer.buffers[1:])
    a_buf.copyin(a_np.ravel()), b_buf.copyin(b_np.ravel())
    for candidate in (plan, winner):
        np.testing.assert_allclose(timer.output(candidate).reshape(32, 32), a_np @ b_np,
                                   rtol=1e-5, atol=1e-5)
