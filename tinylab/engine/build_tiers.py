"""Two builds of one kernel: a big first batch runs from the quick build (-O1, about half gcc's
time) while one background thread makes the full build (-O2) and swaps it in, kernel by kernel.

`quick_batch(device, count)` -> whether a batch of `count` kernels builds quick first (a runtime
that has tiers, at least config.QUICK_BUILD kernels); `upgrade(runtime, kernels)` queues the full
build of [(name, source, facts, program, build)] and returns at once; `wait()` blocks until every
queued upgrade is swapped in (tests, benchmarks). The thread runs at the lowest priority (its compiler
processes inherit it) and compiles in parts of about PART_BYTES of source, each started only
while no realize is building kernels (`foreground()`, kernel_builder.py's batches), so the work in
the foreground keeps the cores (a cumprod built right after a CNN step's quick batch took 0.05-0.1
s longer beside it); at exit Python lets it finish, so the disk cache holds the full build for the
next process. Each KernelBuild says its tier ("quick" until the swap, then "full") and when the
full build came (`upgraded_s`).
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from .. import config
from ..memo import Role, register
from .devices import Device

_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None
_PENDING: list[Future] = register("pending builds", [], Role.LIVE)
PART_BYTES = 48 << 10   # source per full-build compile: between two parts, foreground builds go first
QUIET_S = 0.25          # no foreground build for this long before a part starts


class _Foreground:
    """How many batches of kernels are being built in the foreground now."""

    def __init__(self):
        self.changed = threading.Condition()
        self.building = 0
        self.ended = 0.0   # when the last one ended (time.perf_counter())


_FOREGROUND = _Foreground()


@contextlib.contextmanager
def foreground():
    """A batch of kernels being built (planned and compiled) for a realize: full builds
    queued here start their next part only after it."""
    with _FOREGROUND.changed:
        _FOREGROUND.building += 1
    try:
        yield
    finally:
        with _FOREGROUND.changed:
            _FOREGROUND.building -= 1
            _FOREGROUND.ended = time.perf_counter()
            _FOREGROUND.changed.notify_all()


def _after_foreground() -> None:
    """Wait while a foreground batch is being built, and QUIET_S after the last one ended: a
    realize that follows another at once (a model's initialization, then its first step) gets
    the cores before a full build of the first starts."""
    with _FOREGROUND.changed:
        while True:
            _FOREGROUND.changed.wait_for(lambda: _FOREGROUND.building == 0)
            quiet = time.perf_counter() - _FOREGROUND.ended
            if quiet >= QUIET_S:
                return
            _FOREGROUND.changed.wait(QUIET_S - quiet)


def quick_batch(device: str, count: int) -> bool:
    """Whether `count` kernels for `device` build quick first: QUICK_BUILD > 0 kernels at least,
    a runtime with tiers (the CPU's), the disk cache on (the full build is kept for later)."""
    threshold = int(config.QUICK_BUILD.value)
    if threshold <= 0 or count < threshold:
        return False
    spec = Device[device]
    if spec.render_only:
        return False
    runtime = spec.runtime
    return runtime.builds_in_tiers


def upgrade(runtime, kernels: list[tuple]) -> None:
    """Queue the full build of [(name, source, facts, program, build)]: each program swaps to it."""
    global _POOL
    if not kernels:
        return
    with _LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(1, thread_name_prefix="tinylab-full-build",
                                       initializer=_lowest_priority)
        started = time.perf_counter()
        _PENDING.append(_POOL.submit(contextvars.copy_context().run, _swap_in, runtime,
                                     kernels, started))


def wait(timeout: float | None = None) -> None:
    """Block until every queued full build is swapped in (or failed: the quick one stays)."""
    with _LOCK:
        pending = list(_PENDING)
    for future in pending:
        future.result(timeout)
    with _LOCK:
        for future in pending:
            if future in _PENDING:
                _PENDING.remove(future)


def _forked() -> None:
    """In a forked child the parent's thread is gone: a new one starts when the child queues a
    full build (kernels the parent had queued keep their quick build here: the same bits)."""
    global _POOL, _LOCK, _FOREGROUND
    _POOL, _LOCK, _FOREGROUND = None, threading.Lock(), _Foreground()
    _PENDING.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def _lowest_priority() -> None:
    """This thread (and the compilers it starts) at nice 19, where the OS allows it."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):  # not Linux, or not permitted: normal priority
        pass


def _swap_in(runtime, kernels: list[tuple], started: float) -> None:
    """Compile the full builds in parts (each after any foreground build), load each kernel and
    swap it into its program."""
    for part in _parts(kernels):
        _after_foreground()
        try:
            built = runtime.compile_unit([kernel[:3] for kernel in part])
            for (*_, program, build), (library, symbol, _) in zip(part, built):
                program.swap(runtime.load(library, symbol))
                build.tier, build.upgraded_s = "full", time.perf_counter() - started
        except Exception as error:  # noqa: BLE001 - the quick build keeps running, correct
            for *_, build in part:
                build.upgrade_error = f"{type(error).__name__}: {error}"[:300]


def _parts(kernels: list[tuple]) -> list[list[tuple]]:
    """Consecutive parts of about PART_BYTES of source each."""
    parts, size = [[]], 0
    for kernel in kernels:
        if parts[-1] and size >= PART_BYTES:
            parts.append([])
            size = 0
        parts[-1].append(kernel)
        size += len(kernel[1])
    return [part for part in parts if part]
