"""Timings a reader can trust: `interleaved({"a": run_a, "b": run_b}, rounds=15)` runs the
contenders in rounds (a b, then b a, ...), so a burst of load from other processes hits them
alike, and keeps every round. A `Spread` is a median with its quartiles and extremes; a
`Comparison` gives each contender's Spread and the per-round ratio of two (`ratio("a", "b")`:
b's time over a's), and `verdict` says whether a ratio differs from a threshold by more than its
spread. Used by the notebooks, their exercise checks and the inspector's what-if.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

ROUNDS = 15      # rounds of every contender: enough for quartiles that one bad round cannot move


@dataclass(frozen=True)
class Spread:
    """One quantity measured over rounds: its median, quartiles (low, high) and extremes."""
    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def _quartiles(self) -> tuple[float, float]:
        if len(self.values) < 4:
            return min(self.values), max(self.values)
        low, _, high = statistics.quantiles(self.values, n=4)
        return low, high

    @property
    def low(self) -> float:
        """The lower quartile (the least value with fewer than 4 rounds)."""
        return self._quartiles()[0]

    @property
    def high(self) -> float:
        return self._quartiles()[1]

    @property
    def least(self) -> float:
        return min(self.values)

    @property
    def most(self) -> float:
        return max(self.values)

    def text(self, scale: float = 1.0, unit: str = "", digits: int = 2) -> str:
        """'3.1 µs (quartiles 2.9-3.6, 15 rounds)' for scale=1e6, unit=' µs'."""
        shown = [f"{value * scale:.{digits}f}" for value in (self.median, self.low, self.high)]
        return f"{shown[0]}{unit} (quartiles {shown[1]}-{shown[2]}, {len(self.values)} rounds)"


def verdict(ratio: Spread, threshold: float = 1.0) -> str:
    """'above' when the ratio's lower quartile is above `threshold`, 'below' when its upper
    quartile is below it, else 'within the spread' (this run cannot tell)."""
    if ratio.low > threshold:
        return "above"
    if ratio.high < threshold:
        return "below"
    return "within the spread"


@dataclass(frozen=True)
class Comparison:
    """Every round's seconds of each contender, in the order they were given."""
    seconds: dict[str, tuple[float, ...]]

    def __getitem__(self, name: str) -> Spread:
        return Spread(self.seconds[name])

    def ratio(self, baseline: str, other: str) -> Spread:
        """Round by round, other's time over baseline's (2.0: other took twice as long)."""
        return Spread(tuple(o / b for b, o in zip(self.seconds[baseline], self.seconds[other])
                            if b > 0))

    def speedup(self, baseline: str, other: str) -> Spread:
        """Round by round, baseline's time over other's (2.0: other is twice as fast)."""
        return self.ratio(other, baseline)


def _seconds(run: Callable[[], float | None]) -> float:
    start = time.perf_counter()
    measured = run()
    return measured if measured is not None else time.perf_counter() - start


def interleaved(contenders: dict[str, Callable[[], float | None]], rounds: int = ROUNDS,
                best_of: int = 1, warmup: int = 1) -> Comparison:
    """Run each contender in `rounds` rounds, forward then backward order in turn; a round keeps
    each contender's fastest of `best_of` runs (a run the OS interrupted is dropped). A contender
    returns the seconds it measured itself (a kernel's own timer) or None (timed here, wall)."""
    if rounds < 1 or best_of < 1:
        raise ValueError(f"interleaved: rounds and best_of must be >= 1, got {rounds}, {best_of}")
    names = list(contenders)
    for name in names:
        for _ in range(warmup):
            contenders[name]()
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for round_number in range(rounds):
        order = names if round_number % 2 == 0 else names[::-1]
        for name in order:
            seconds[name].append(min(_seconds(contenders[name]) for _ in range(best_of)))
    return Comparison({name: tuple(values) for name, values in seconds.items()})
