"""BEAM and TUNE are never slower than the default plan: the default's plan is a candidate and a
winner replaces it only when faster beyond the noise of repeated runs. A fake clock decides, so
these tests compile nothing and assert the decision logic, not a machine's speed."""
import numpy as np
import pytest

from tinylab import Device, Tensor
from tinylab.codegen import beam
from tinylab.codegen.heuristic import candidates, choose_opts
from tinylab.codegen.plan import KernelPlan
from tinylab.engine.realize import REALIZED
from tinylab.schedule.schedule import schedule


def _plan(n=48):
    a = Tensor(np.random.default_rng(0).random((n, n), dtype=np.float32)).realize()
    b = Tensor(np.random.default_rng(1).random((n, n), dtype=np.float32)).realize()
    (kernel,) = schedule([(a @ b).node], realized=REALIZED).kernels
    return KernelPlan.from_ast(kernel.ast)


class FakeTimer:
    """Seconds per plan from `seconds(opts)`; repeated runs spread by `noise` around it."""

    def __init__(self, seconds, noise=0.002):
        self.seconds, self.noise, self.sampled = seconds, noise, []

    def time(self, plan, give_up=float("inf")):
        return self.seconds(tuple(plan.opts))

    def samples(self, plan, runs=beam.CONFIRM_RUNS):
        self.sampled.append(tuple(plan.opts))
        base = self.seconds(tuple(plan.opts))
        return [base * (1 + self.noise * (i - runs // 2)) for i in range(runs)]

    def output(self, plan):
        return np.zeros(4, np.float32)


@pytest.mark.parametrize("default, challenger, faster", [
    ([1.0, 1.01, 0.99], [0.7, 0.71, 0.69], True),     # 30% faster, tight runs
    ([1.0, 1.0, 1.0], [0.98, 0.98, 0.98], False),     # 2%: under the minimum margin
    ([1.0, 1.3, 0.9], [0.85, 0.86, 0.84], False),     # 15% faster, but the default spread 40%
    ([float("inf")] * 3, [2.0, 2.0, 2.0], True),      # the default failed to run
    ([1.0, 1.0, 1.0], [float("inf")], False),         # the challenger failed
])
def test_faster_beyond_noise(default, challenger, faster):
    assert beam.faster_beyond_noise(default, challenger) is faster


def _tune(plan, device, seconds):
    timer = FakeTimer(seconds)
    return beam.tune(plan, device, device.target, cache_dir=None, timer=timer), timer


def test_tune_keeps_the_default_unless_a_candidate_is_clearly_faster():
    plan, device = _plan(), Device["CPU"]
    options = candidates(plan, device.renderer.supported_actions, device.target)
    assert len(options) > 1
    default = tuple(options[0].opts)
    default_full = choose_opts(plan, device.renderer.supported_actions, device.target)
    close, timer = _tune(plan, device, lambda opts: 1.0 if opts == default else 0.985)
    assert close.opts == default_full and default in timer.sampled  # 1.5%: noise, default kept
    other = tuple(options[1].opts)
    clear, _ = _tune(plan, device, lambda opts: 0.5 if opts == other else 1.0)
    assert tuple(clear.opts[:len(other)]) == other  # 2x faster: chosen, then threaded


def test_beam_starts_from_the_default_and_keeps_it_within_noise():
    plan, device = _plan(16), Device["CPU"]
    default = plan.apply_all(choose_opts(plan, device.renderer.supported_actions, device.target))
    key = tuple(default.opts)

    def seconds(opts):  # the plain plan is slow; every other candidate 1.5% faster than default
        return 5.0 if not opts else 1.0 if opts == key else 0.985
    timer = FakeTimer(seconds)
    chosen = beam.beam_search(plan, device, 2, None, device.target, rounds=1, default=default,
                              timer=timer)
    assert tuple(chosen.opts) == key
    faster = FakeTimer(lambda opts: 5.0 if not opts else 1.0 if opts == key else 0.5)
    chosen = beam.beam_search(plan, device, 2, None, device.target, rounds=1, default=default,
                              timer=faster)
    assert tuple(chosen.opts) != key and faster.seconds(tuple(chosen.opts)) == 0.5


def test_beam_never_returns_a_plan_slower_than_the_default():
    plan, device = _plan(16), Device["CPU"]
    default = plan.apply_all(choose_opts(plan, device.renderer.supported_actions, device.target))
    key = tuple(default.opts)
    timer = FakeTimer(lambda opts: 1.0 if opts == key else 2.0)  # every candidate slower
    chosen = beam.beam_search(plan, device, 3, None, device.target, rounds=2, default=default,
                              timer=timer)
    assert tuple(chosen.opts) == key
