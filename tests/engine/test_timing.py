"""engine/timing.py: interleaved rounds (order alternating, best of n per round), medians and
quartiles against statistics' own, per-round ratios, and verdicts that refuse to call a
difference the spread swallows; run with fake clocks, so nothing here depends on the machine."""
from __future__ import annotations

import statistics

import pytest

from tinylab.engine.timing import Spread, interleaved, verdict


def _clock(values: list[float], calls: list[str], name: str):
    """A contender that reports the next of `values` as its own seconds and logs its calls."""
    it = iter(values)

    def run():
        calls.append(name)
        return next(it)
    return run


def test_rounds_alternate_their_order_and_keep_every_round():
    calls: list[str] = []
    comparison = interleaved({"a": _clock([9.0, 1.0, 2.0, 3.0, 4.0], calls, "a"),
                              "b": _clock([9.0, 2.0, 4.0, 6.0, 8.0], calls, "b")}, rounds=4)
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b", "b", "a"]   # warm-up, then a b / b a
    assert comparison.seconds == {"a": (1.0, 2.0, 3.0, 4.0), "b": (2.0, 4.0, 6.0, 8.0)}
    assert comparison.ratio("a", "b").values == (2.0, 2.0, 2.0, 2.0)
    assert comparison.speedup("b", "a").values == (2.0, 2.0, 2.0, 2.0)


def test_best_of_keeps_the_fastest_run_of_each_round():
    calls: list[str] = []
    comparison = interleaved({"a": _clock([0.0, 5.0, 1.0, 7.0, 2.0], calls, "a")}, rounds=2,
                             best_of=2)
    assert comparison.seconds["a"] == (1.0, 2.0)


def test_a_contender_without_a_clock_of_its_own_is_timed_here():
    comparison = interleaved({"a": lambda: None}, rounds=3, warmup=0)
    assert len(comparison.seconds["a"]) == 3 and all(s >= 0 for s in comparison.seconds["a"])


def test_median_and_quartiles_are_statistics_own():
    values = (5.0, 1.0, 9.0, 3.0, 7.0, 2.0, 8.0)
    spread = Spread(values)
    low, _, high = statistics.quantiles(values, n=4)
    assert (spread.median, spread.low, spread.high) == (statistics.median(values), low, high)
    assert (spread.least, spread.most) == (1.0, 9.0)
    assert spread.text(1e3, " ms", 1) == f"5000.0 ms (quartiles {low * 1e3:.1f}-{high * 1e3:.1f}, 7 rounds)"
    assert Spread((2.0, 4.0)).low == 2.0 and Spread((2.0, 4.0)).high == 4.0


@pytest.mark.parametrize("ratios, threshold, said", [
    ((1.5, 1.6, 1.7, 1.8, 1.9), 1.0, "above"),
    ((0.5, 0.6, 0.7, 0.8, 0.9), 1.0, "below"),
    ((0.8, 0.9, 1.0, 1.1, 1.2), 1.0, "within the spread"),   # the median is 1.0: cannot tell
    ((0.7, 0.75, 0.85, 0.9, 0.95), 0.8, "within the spread"),  # a median above, quartiles across
])
def test_verdict_needs_the_whole_spread_on_one_side(ratios, threshold, said):
    assert verdict(Spread(ratios), threshold) == said


def test_a_burst_of_load_in_one_round_moves_neither_median():
    # round 3 ran while another process held the cores: both contenders are slowed in it
    a = [1.0, 1.0, 1.0, 1.0, 9.0, 1.0, 1.0]
    b = [2.0, 2.0, 2.0, 2.0, 17.0, 2.0, 2.0]
    comparison = interleaved({"a": _clock(a, [], "a"), "b": _clock(b, [], "b")}, rounds=6)
    assert comparison["a"].median == 1.0 and comparison["b"].median == 2.0
    assert verdict(comparison.ratio("a", "b")) == "above"


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="rounds and best_of"):
        interleaved({"a": lambda: 1.0}, rounds=0)
