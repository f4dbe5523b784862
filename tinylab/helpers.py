"""Small helpers under tinygrad's names, for code written against `tinygrad.helpers`: `Timing`
(a context manager and decorator that prints the wall time of its block), with `Context` and
`GlobalCounters` re-exported. Used by learners' cells and the examples; nothing below imports it.
"""
from __future__ import annotations

import contextlib
import time
from typing import Callable

from .config import Context
from .engine.counters import GlobalCounters

__all__ = ["Context", "GlobalCounters", "Timing"]


class Timing(contextlib.ContextDecorator):
    """`with Timing("step "):` prints `step   1.23 ms` when the block ends (as tinygrad does).
    `on_exit(elapsed_ns)` returns text appended to that line; `enabled=False` prints nothing.
    The elapsed nanoseconds stay in `.elapsed_ns` (tinygrad's `.et`) either way."""

    def __init__(self, prefix: str = "", on_exit: Callable[[int], str] | None = None,
                 enabled: bool = True):
        self.prefix, self.on_exit, self.enabled = prefix, on_exit, enabled
        self.start_ns, self.elapsed_ns = 0, 0

    @property
    def et(self) -> int:  # tinygrad's name for the elapsed nanoseconds
        return self.elapsed_ns

    def __enter__(self) -> Timing:
        self.start_ns = time.perf_counter_ns()
        return self

    def __exit__(self, *exc) -> None:
        self.elapsed_ns = time.perf_counter_ns() - self.start_ns
        if self.enabled:
            suffix = self.on_exit(self.elapsed_ns) if self.on_exit else ""
            print(f"{self.prefix}{self.elapsed_ns * 1e-6:6.2f} ms{suffix}")
