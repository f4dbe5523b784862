"""A training monitor a loop updates live: progress bar, loss curve, the kernels of the latest step
(the slowest with their % of the device's peak) and where each step's time went (compile vs
kernels vs the rest). Steps are traced, so the kernel table shows what ran; a TinyJit replay (no
schedule, no trace) shows the captured kernels. From its creation until `finish()` it listens to
the engine's progress events (tinylab.engine.progress) and shows the compiles and TUNE / BEAM
searches under way: items done, total, time left.

    monitor = TrainingMonitor(total_steps=70); display(monitor)
    for step in monitor.track(range(70)):
        loss = train_step(); monitor.log(loss)
"""
from __future__ import annotations

import time
import weakref
from contextlib import contextmanager, nullcontext
from html import escape

import anywidget
import traitlets

from tinylab import GlobalCounters, TinyJit, trace
from tinylab.engine import progress
from tinylab.engine.peak import device_peak
from tinylab.engine.trace import Trace
from tinylab.inspection.roofline import bound, percent_of_peak

from .assets import monitor_module, stylesheet


def _kernel_rows(records) -> list[dict]:
    """One row per kernel name: launches, FLOPs, kernel time, compile time, cache hits, and its
    share of the device's peak (inspection/roofline.py)."""
    rows: dict[str, dict] = {}
    for record in records:
        row = rows.setdefault(record.name, {"name": record.name, "launches": 0, "flops": 0,
                                            "bytes": 0, "run_s": 0.0, "compile_s": 0.0,
                                            "compiled": 0, "device": record.device})
        row["launches"] += 1
        row["flops"] += record.flops
        row["bytes"] += record.bytes_moved
        row["run_s"] += record.run_s or 0.0
        row["compile_s"] += record.compile_s
        row["compiled"] += 0 if record.cache_hit else 1
    for row in rows.values():
        peak = device_peak(row["device"]).as_dict()
        row["percent_of_peak"] = percent_of_peak(row["flops"], row["bytes"], row["run_s"], peak)
        row["bound"] = bound(row["flops"], row["bytes"], peak)
    return list(rows.values())


def _replayed_rows(jit) -> list[dict]:
    step = jit.step if jit is not None else None   # a TinyJit: None until its capture
    rows: dict[str, dict] = {}
    for launch in step.launches if step is not None else []:
        runner = launch.runner
        if runner is None:
            continue
        row = rows.setdefault(runner.name, {"name": runner.name, "launches": 0, "flops": 0,
                                            "bytes": 0, "run_s": None, "compile_s": 0.0,
                                            "compiled": 0, "replayed": True})
        row["launches"] += 1
        row["flops"] += runner.flops
        row["bytes"] += runner.bytes_moved
    return list(rows.values())


class TrainingMonitor(anywidget.AnyWidget):
    _esm = monitor_module()
    _css = stylesheet()
    title = traitlets.Unicode("training").tag(sync=True)
    total_steps = traitlets.Int(0).tag(sync=True)
    losses = traitlets.List(traitlets.Float()).tag(sync=True)
    steps = traitlets.List(traitlets.Dict()).tag(sync=True)
    kernels = traitlets.List(traitlets.Dict()).tag(sync=True)
    finished = traitlets.Bool(False).tag(sync=True)
    work = traitlets.List(traitlets.Dict()).tag(sync=True)  # compiles / searches under way

    def __init__(self, total_steps: int = 0, title: str = "training", jit=None,
                 update_every_s: float = 0.1, trace_steps: bool = True, **kwargs):
        if jit is not None and not isinstance(jit, TinyJit):
            raise TypeError(f"TrainingMonitor: jit must be a TinyJit (its replays show the "
                            f"captured kernels), got {type(jit).__name__}")
        super().__init__(total_steps=total_steps, title=title, **kwargs)
        self.jit = jit
        self.trace_steps = trace_steps   # False: no kernel table, no tracing cost
        self.update_every_s = update_every_s
        self._losses: list[float] = []
        self._steps: list[dict] = []
        self._kernels: list[dict] = []
        self._last_publish = 0.0
        self._work: dict[int, dict] = {}
        self._listener = _weak_listener(self)
        progress.add_listener(self._listener)

    @contextmanager
    def step(self):
        """Trace one training step and record its time split; `log(loss)` inside or after."""
        compile_before, kernels_before = GlobalCounters.compile_time_s, GlobalCounters.time_sum_s
        start = time.perf_counter()
        with trace() if self.trace_steps else nullcontext(Trace()) as recorded:
            yield self
        wall = time.perf_counter() - start
        compile_s = GlobalCounters.compile_time_s - compile_before
        run_s = GlobalCounters.time_sum_s - kernels_before
        rows = _kernel_rows(recorded.kernels) or _replayed_rows(self.jit)
        replayed = not recorded.kernels and bool(rows)
        self._steps.append({"step": len(self._steps) + 1, "wall_s": wall, "compile_s": compile_s,
                            "run_s": run_s, "other_s": max(0.0, wall - compile_s - run_s),
                            "launches": sum(r["launches"] for r in rows), "replayed": replayed})
        self._kernels = rows
        self._publish()

    def log(self, loss) -> None:
        """Add a loss value (a number or a one-element Tensor)."""
        value = loss.item() if hasattr(loss, "item") else loss
        self._losses.append(float(value))
        self._publish()

    def track(self, iterable):
        """Iterate like tqdm, tracing each step: `for batch in monitor.track(loader): ...`."""
        if not self.total_steps and hasattr(iterable, "__len__"):
            self.total_steps = len(iterable)
        for item in iterable:
            with self.step():
                yield item
        self.finish()

    def finish(self) -> None:
        progress.remove_listener(self._listener)
        self._work.clear()
        self.finished = True
        self._publish(force=True)

    def on_progress(self, event: progress.ProgressEvent) -> None:
        """An engine progress event: a task starts, advances or ends (published at most every
        `update_every_s`, and at once when a task ends)."""
        if event.finished:
            self._work.pop(event.task_id, None)
        else:
            self._work[event.task_id] = {
                "kind": event.kind, "name": event.name, "done": event.done,
                "total": event.total, "elapsed_s": event.elapsed_s, "left_s": event.left_s,
                "text": event.describe(), "nested": event.parent_id in self._work}
        self._publish(force=event.finished)

    def _publish(self, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self._last_publish < self.update_every_s:
            return
        self._last_publish = now
        with self.hold_sync():
            self.losses = list(self._losses)
            self.steps = list(self._steps[-500:])
            self.kernels = list(self._kernels)
            self.work = [dict(task) for task in self._work.values()]

    def summary(self) -> MonitorSummary:
        """A static record of the run (loss curve, steps, kernels per step; no timings), for
        readers of the saved notebook: show it as a cell's last value after training."""
        launches = self._steps[-1]["launches"] if self._steps else 0
        return MonitorSummary(self.title, len(self._steps), list(self._losses), launches)

    @property
    def text(self) -> str:
        done = len(self._steps)
        total = f"/{self.total_steps}" if self.total_steps else ""
        loss = f", loss {self._losses[-1]:.4g}" if self._losses else ""
        return f"{self.title}: step {done}{total}{loss}"

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        data = dict(data or {})
        data["text/plain"] = self.text
        data["text/html"] = f"<div><b>tinylab</b> {self.text}</div>"
        return data, metadata


def _weak_listener(monitor: TrainingMonitor):
    """A progress listener that does not keep the monitor alive (it leaves once it is gone)."""
    reference = weakref.ref(monitor)

    def listener(event: progress.ProgressEvent) -> None:
        target = reference()
        if target is None:
            progress.remove_listener(listener)
        else:
            target.on_progress(event)
    return listener


class MonitorSummary:
    """What a finished training run looked like, as text/plain and script-free text/html."""

    def __init__(self, title: str, steps: int, losses: list[float], launches: int):
        self.title, self.steps, self.losses, self.launches = title, steps, losses, launches

    def text(self) -> str:
        loss = f"loss {self.losses[0]:.4g} -> {self.losses[-1]:.4g}, " if self.losses else ""
        return (f"{self.title}: {self.steps} steps, {loss}"
                f"{self.launches} kernel launches in the last step")

    def curve_svg(self, width: int = 320, height: int = 90) -> str:
        if len(self.losses) < 2:
            return ""
        low, high = min(self.losses), max(self.losses)
        span = (high - low) or 1.0
        points = " ".join(f"{4 + i * (width - 8) / (len(self.losses) - 1):.1f},"
                          f"{height - 4 - (value - low) / span * (height - 8):.1f}"
                          for i, value in enumerate(self.losses))
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                f'style="background:#f8fafc;border:1px solid #cbd5e1">'
                f'<polyline points="{points}" fill="none" stroke="#2563eb"/></svg>')

    def _repr_mimebundle_(self, **kwargs):
        html = (f'<div style="font-family:system-ui,sans-serif;font-size:13px">'
                f"<div><b>tinylab</b> {escape(self.text())}</div>{self.curve_svg()}</div>")
        return {"text/plain": self.text(), "text/html": html}
