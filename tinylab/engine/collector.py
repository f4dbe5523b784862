"""Python's cycle collector paused while a realize schedules, plans and compiles.

Planning allocates hundreds of thousands of small objects (index expressions, plans, linear
instructions) that live as long as the caches do, and none of them make garbage cycles. Each
allocation burst triggers the collector, and each of its older-generation passes walks every
long-lived object again. On a cold CNN train step that cost about 0.4 s of 3.5 s, and about a
third of a cold cumprod's 0.8 s (AMD EPYC Zen 3, measured with the collector off). Realizes can
nest (calibration during a compile) and run on several threads, so a count decides: the first to
enter pauses the collector if it was running; the last to leave turns it back on. What became
garbage meanwhile is collected at the next allocation past the threshold, as before.
`paused()` is the context manager realize.py uses.
"""
from __future__ import annotations

import contextlib
import gc
import threading


class _Pause:
    """How many realizes are inside `paused()`, and whether the collector ran before the first."""

    def __init__(self):
        self.lock = threading.Lock()
        self.depth = 0
        self.resume = False


_PAUSE = _Pause()


@contextlib.contextmanager
def paused():
    """The cycle collector off inside (if it was on at the outermost entry), back on after."""
    with _PAUSE.lock:
        if _PAUSE.depth == 0:
            _PAUSE.resume = gc.isenabled()
            gc.disable()
        _PAUSE.depth += 1
    try:
        yield
    finally:
        with _PAUSE.lock:
            _PAUSE.depth -= 1
            if _PAUSE.depth == 0 and _PAUSE.resume:
                gc.enable()
