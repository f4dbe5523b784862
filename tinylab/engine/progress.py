"""Progress of long work as events: compiling a schedule's kernels, TUNE and BEAM searches,
calibration, a dataset's download (nn/datasets.py).

The engine opens a `task(kind, name, total)`, advances it per item done and closes it; every
listener added with `add_listener(fn)` gets each `ProgressEvent` (a start with done 0, one event
per item, a last one with finished=True), delivered one at a time from whichever thread did the
work. `TerminalProgress` is the default listener: a tqdm bar (or a plain stderr line without
tqdm) for work that lasts over a second, on a terminal only. The training monitor is another.
"""
from __future__ import annotations

import io
import itertools
import os
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType

from .. import config
from ..memo import Role, register


@dataclass(frozen=True)
class ProgressEvent:
    task_id: int        # unique per task in this process
    kind: str           # "compile" (a schedule's kernels), "tune" or "beam" (one kernel's search),
                        # "calibrate" (a CPU's micro-kernels, engine/calibrate.py), "download"
                        # (bytes of a dataset file; total 0 when the server gives no length)
    name: str           # what the task works on, e.g. "5 kernels" or a kernel's name
    done: int
    total: int          # may grow while a BEAM search finds more candidates
    elapsed_s: float
    finished: bool = False
    parent_id: int | None = None  # the task this one runs inside (a TUNE inside a compile)

    @property
    def left_s(self) -> float | None:
        """Time left at the rate so far (None before the first item is done)."""
        if self.finished:
            return 0.0
        if self.done <= 0:
            return None
        return self.elapsed_s / self.done * max(self.total - self.done, 0)

    def describe(self) -> str:
        left = self.left_s if self.total else None
        tail = "" if left is None or self.finished else f", about {_seconds(left)} left"
        if self.kind == "download":   # bytes, in MB
            count = f"{self.done / 1e6:.1f}" + (f"/{self.total / 1e6:.1f}" if self.total else "")
            return f"{VERBS[self.kind]} {self.name}: {count} MB{tail}"
        return f"{VERBS.get(self.kind, self.kind)} {self.name}: {self.done}/{self.total}{tail}"


VERBS = MappingProxyType({"compile": "compiling", "tune": "tuning", "beam": "BEAM search on",
                          "calibrate": "timing micro-kernels of", "download": "downloading"})
UNITS = MappingProxyType({
    "compile": {"unit": "kernel"}, "calibrate": {"unit": "candidate"},   # tqdm's options
    "tune": {"unit": "candidate"}, "beam": {"unit": "candidate"},
    "download": {"unit": "B", "unit_scale": True, "unit_divisor": 1024}
})

_LISTENERS = register("progress listeners", [], Role.ROWS)
_LOCK = threading.RLock()        # one event at a time, in order, whatever thread sends it
_IDS = itertools.count(1)
_CURRENT = threading.local()     # the innermost open task of this thread


def add_listener(listener) -> None:
    """Call `listener(event)` for every ProgressEvent from now on."""
    with _LOCK:
        _LISTENERS.append(listener)


def remove_listener(listener) -> None:
    with _LOCK:
        if listener in _LISTENERS:
            _LISTENERS.remove(listener)


@contextmanager
def listening(listener):
    """`with listening(events.append): ...` collects the events sent inside the block."""
    add_listener(listener)
    try:
        yield listener
    finally:
        remove_listener(listener)


def _send(event: ProgressEvent) -> None:
    """To every listener, in order. A listener that raises is removed with a warning: showing
    progress must never break a compile."""
    with _LOCK:
        for listener in list(_LISTENERS):
            try:
                listener(event)
            except Exception as error:  # noqa: BLE001 - any failure of a display
                remove_listener(listener)
                warnings.warn(f"progress listener {listener!r} raised {error!r}; removed",
                              RuntimeWarning, stacklevel=2)


class Task:
    """An open task; `advance()` after each item. Made by `task()`."""

    def __init__(self, kind: str, name: str, total: int, parent_id: int | None):
        self.id, self.kind, self.name, self.total = next(_IDS), kind, name, total
        self.parent_id, self.done, self.start = parent_id, 0, time.perf_counter()

    def event(self, finished: bool = False) -> ProgressEvent:
        return ProgressEvent(self.id, self.kind, self.name, self.done, self.total,
                             time.perf_counter() - self.start, finished, self.parent_id)

    def advance(self, count: int = 1) -> None:
        self.update(self.done + count, self.total)

    def update(self, done: int, total: int) -> None:
        """Absolute counts (what a search reports: candidates timed, candidates so far)."""
        self.done, self.total = done, total
        _send(self.event())


@contextmanager
def task(kind: str, name: str, total: int):
    """Open a task of `total` items inside this thread's open task (if any); sends its start,
    and its end however the block exits."""
    opened = Task(kind, name, total, current_task_id())
    with within(opened.id):
        _send(opened.event())
        try:
            yield opened
        finally:
            _send(opened.event(finished=True))


def current_task_id() -> int | None:
    """The innermost open task of this thread."""
    return getattr(_CURRENT, "task_id", None)


@contextmanager
def within(task_id: int | None):
    """Tasks opened inside the block (in this thread) nest in `task_id`: a worker thread
    compiling one kernel of a schedule's compile task."""
    outer = current_task_id()
    _CURRENT.task_id = task_id
    try:
        yield
    finally:
        _CURRENT.task_id = outer


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value < 90 else f"{value / 60:.0f} min"


class TerminalProgress:
    """Draws the outermost task worth showing as one line on a terminal: a tqdm bar, or a plain
    `\\r` line when tqdm is missing; inner tasks (a TUNE inside a compile) follow on that line.
    Shows nothing when the stream is not a terminal (logs, notebooks, tests), when PROGRESS=0,
    for tasks shorter than `delay_s`, and for compiles of fewer than `min_total` kernels."""

    def __init__(self, stream=None, delay_s: float = 1.0, min_total: int = 4,
                 use_tqdm: bool = True):
        self.stream, self.delay_s, self.min_total = stream, delay_s, min_total
        self.use_tqdm = use_tqdm
        self.open: dict[int, ProgressEvent] = {}
        self.bar = None          # (task id, tqdm bar or None for the plain line)
        self.width = 0           # length of the plain line last drawn

    def __call__(self, event: ProgressEvent) -> None:
        stream = self.stream or sys.stderr
        if not config.PROGRESS.value or not _isatty(stream):
            return
        if event.finished:
            self.open.pop(event.task_id, None)
        else:
            self.open[event.task_id] = event
        if self.bar is not None and self.bar[0] not in self.open:
            self._close(stream)
        shown = [e for e in self.open.values() if self._worth_showing(e)]
        if shown:
            self._draw(stream, shown[0], shown[1:])

    def _worth_showing(self, event: ProgressEvent) -> bool:
        if event.elapsed_s < self.delay_s:
            return False
        return event.kind != "compile" or event.total >= self.min_total

    def _draw(self, stream, main: ProgressEvent, inner: list) -> None:
        if self.bar is None or self.bar[0] != main.task_id:
            self._close(stream)
            self.bar = (main.task_id, self._new_bar(stream, main))
        postfix = "; ".join(e.describe() for e in inner)
        bar = self.bar[1]
        if bar is None:
            line = main.describe() + (f"; {postfix}" if postfix else "")
            stream.write("\r" + line.ljust(self.width))
            stream.flush()
            self.width = len(line)
            return
        bar.total, bar.n = main.total or None, main.done
        bar.set_postfix_str(postfix, refresh=False)
        bar.refresh()

    def _new_bar(self, stream, event: ProgressEvent):
        if not self.use_tqdm:
            return None
        try:
            from tqdm import tqdm
        except ImportError:
            return None
        label = f"{VERBS.get(event.kind, event.kind)} {event.name}"
        sized = _columns(stream) > 0  # a terminal of no size (0 x 0): tqdm would draw nothing
        bar = tqdm(total=event.total or None, desc=label, file=stream, leave=False,
                   dynamic_ncols=sized, ncols=None if sized else 80, nrows=None if sized else 24,
                   **UNITS.get(event.kind, {"unit": "item"}))
        bar.start_t -= event.elapsed_s  # its clock (and rate) start with the task, not the bar
        bar.last_print_t = bar.start_t
        return bar

    def _close(self, stream) -> None:
        if self.bar is None:
            return
        _, bar = self.bar
        if bar is not None:
            bar.close()
        elif self.width:
            stream.write("\r" + " " * self.width + "\r")
            stream.flush()
        self.bar, self.width = None, 0


def _columns(stream) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        return 0


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


TERMINAL = TerminalProgress()
add_listener(TERMINAL)
