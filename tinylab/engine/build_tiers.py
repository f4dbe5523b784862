"""Two builds of one kernel: a big first batch runs from the quick build (-O1, about half gcc's
time) while one background thread makes the full build (-O2) and swaps it in, kernel by kernel.

`quick_batch(device, count)` -> whether a batch of `count` kernels builds quick first (a runtime
that has tiers, at least config.QUICK_BUILD kernels); `upgrade(runtime, kernels)` queues the full
build of [(name, source, facts, program, build)] and returns at once; `wait()` blocks until every
queued upgrade is swapped in (tests, benchmarks). The thread runs at the lowest priority (its compiler
processes inherit it), so the work in the foreground keeps the cores; at exit Python lets it
finish, so the disk cache holds the full build for the next process. Each KernelBuild says its
tier ("quick" until the swap, then "full") and when the full build came (`upgraded_s`).
"""
from __future__ import annotations

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
    global _POOL, _LOCK
    _POOL, _LOCK = None, threading.Lock()
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
    """Compile the full builds as one batch, load each and swap it into its program."""
    try:
        built = runtime.compile_unit([kernel[:3] for kernel in kernels])
        for (*_, program, build), (library, symbol, _) in zip(kernels, built):
            program.swap(runtime.load(library, symbol))
            build.tier, build.upgraded_s = "full", time.perf_counter() - started
    except Exception as error:  # noqa: BLE001 - the quick build keeps running, correct
        for *_, build in kernels:
            build.upgrade_error = f"{type(error).__name__}: {error}"[:300]
