"""Capture and replay: the engine half of TinyJit.

`capture()` records every kernel launch and copy the engine makes (runner + buffers) while a
step runs; `CapturedStep` replays them with new input buffers swapped in, calling each compiled
kernel directly with prepared pointers — no scheduling, no Python graph building. Intermediate
buffers are re-planned so kernels whose buffers are never live at the same time share memory.
The Tensor-facing wrapper (argument checks, outputs) is frontend/jit.py (TinyJit).
"""
from __future__ import annotations

import ctypes
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

from ..runtimes.base import c_scalar
from ..runtimes.buffer import Buffer
from ..schedule.memory import share_by_lifetime
from . import realize as engine


@dataclass
class Launch:
    runner: object | None        # None for a copy
    buffers: list                # Buffer per kernel argument (copies: [destination, source])
    # per argument before the step's memory plan: (buffer key, bytes, kept: outlives the step)
    planned: list = field(default_factory=list)
    var_vals: dict = field(default_factory=dict)  # symbolic sizes' values at capture


@dataclass
class CapturedStep:
    launches: list[Launch]
    input_positions: dict = field(default_factory=dict)  # id(input buffer) -> input index
    bytes_saved: int = 0
    _calls: list = field(default_factory=list)
    _runtimes: list = field(default_factory=list)  # the runtimes its kernels launch on

    def prepare(self, inputs: list[Buffer]) -> None:
        """Build the call list once: (kind, callable, arguments, input patches)."""
        positions = {id(b): i for i, b in enumerate(inputs)}
        self.input_positions = positions
        self._calls = []
        runtimes = [launch.runner.runtime for launch in self.launches
                    if launch.runner is not None and launch.runner.runtime is not None]
        self._runtimes = list({id(runtime): runtime for runtime in runtimes}.values())
        for launch in self.launches:
            patches = [(k, positions[id(b)]) for k, b in enumerate(launch.buffers)
                       if id(b) in positions]
            if launch.runner is None:
                self._calls.append(("copy", None, launch.buffers, patches, launch, []))
                continue
            fn = launch.runner.fn
            direct = fn.pointers_call
            names = launch.runner.variable_names
            if direct is not None:  # CPU: ctypes pointers made once
                pointers = [ctypes.c_void_p(b.handle.ctypes.data) for b in launch.buffers]
                self._calls.append(("pointers", direct, pointers, patches, launch, names))
            else:  # the Runner passes the launch dimensions (GPU runtimes need them)
                self._calls.append(("buffers", launch.runner, launch.buffers, patches, launch,
                                    names))

    def replay(self, inputs: list[Buffer], var_vals: dict | None = None) -> None:
        """Run the captured launches on `inputs`; a symbolic kernel takes its variables from
        var_vals (this call's bound values), else the values it was captured with."""
        with ExitStack() as held:
            for runtime in self._runtimes:
                held.enter_context(runtime.launching_many())
            self._run(inputs, var_vals)

    def _run(self, inputs: list[Buffer], var_vals: dict | None) -> None:
        for kind, call, args, patches, launch, names in self._calls:
            if patches:
                args = list(args)
                for k, i in patches:
                    args[k] = ctypes.c_void_p(inputs[i].handle.ctypes.data) \
                        if kind == "pointers" else inputs[i]
            values = {**launch.var_vals, **(var_vals or {})} if names else None
            if kind == "pointers":
                call(list(args) + [c_scalar(v) for v in launch.runner.variable_values(values)]
                     if names else args)
            elif kind == "buffers":
                call(args, values)
            else:
                args[0].copyin(args[1].numpy())


@contextmanager
def capture(owner=None):
    """Record launches made inside the block: `with capture(jit) as launches: ...`; `owner` is
    what engine.capturer() names meanwhile."""
    launches: list[Launch] = []

    def hook(runner, buffers, var_vals):
        launches.append(Launch(runner, list(buffers), dict(var_vals)))

    with engine.capturing(hook, owner):
        yield launches


@contextmanager
def paused():
    """Launches made inside the block are not recorded (values computed once, not per replay)."""
    with engine.STATE.captures_paused():
        yield


def plan_buffers(launches: list[Launch], keep: set) -> int:
    """Let intermediate buffers (ids not in `keep`) share memory when their lifetimes do not
    overlap. Rewrites the launches in place; returns the bytes saved."""
    by_id = {id(b): b for launch in launches for b in launch.buffers}
    steps = [[id(b) for b in launch.buffers] for launch in launches]
    size_of = {key: (b.device, b.nbytes) for key, b in by_id.items()}
    representative, saved = share_by_lifetime(steps, size_of, keep)
    for launch in launches:
        launch.planned = [(id(b), b.nbytes, id(b) in keep) for b in launch.buffers]
        launch.buffers = [by_id[representative.get(id(b), id(b))] for b in launch.buffers]
    return saved
