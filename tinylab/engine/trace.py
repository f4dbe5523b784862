"""The Trace: what each stage did, recorded as data while a `with tinylab.trace():` block (or a
traced notebook cell) runs. The engine appends one RealizeRecord per realize: the graph, the
line of user code that forced it, the Schedule with its FusionDecisions, and one KernelRecord per
kernel run (plan, optimization actions, each pass's printout, source, compile and run cost).
inspection/ turns a Trace into text / JSON / DOT / HTML; widgets/ into live views.
"""
from __future__ import annotations

import contextvars
import itertools
import os
import sys
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..memo import Role, register

_ACTIVE: contextvars.ContextVar[tuple] = contextvars.ContextVar("tinylab_traces", default=())
# (user line, origin label) that nodes built now are attributed to, instead of the Python stack:
# a frontend that builds tinylab ops for another program's code (the PyTorch bridge) sets it
_ATTRIBUTED: contextvars.ContextVar = contextvars.ContextVar("tinylab_attributed", default=None)
# lazy node -> "file:line  code" of the user code that built it (recorded only while tracing)
SOURCE_LINES: "weakref.WeakKeyDictionary" = None  # set below
ORIGINS: "weakref.WeakKeyDictionary" = None  # lazy node -> the op of another program it came from
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# frames in these are never "the user's line" (a frontend of another program adds its own)
_SKIPPED_DIRS = register("skipped source folders", [_PACKAGE_DIR], Role.ROWS)


@dataclass
class KernelRecord:
    name: str
    device: str
    ast: object                 # kernel AST (SINK node)
    schedule_index: int         # which item of the realize's schedule
    opts: list
    passes: dict                # pass name -> printed text ("ast", "plan", "linear", ...)
    source: str
    language: str
    flops: int
    bytes_moved: int
    compile_s: float
    cache_hit: bool
    run_s: float | None = None
    buffer_sizes: list = field(default_factory=list)
    # the first launch of each kernel in a trace keeps its buffers (small ones only, see
    # DataBudget): every argument before the launch, each output after; None if not kept
    inputs: list | None = None
    outputs: dict | None = None
    data_note: str = ""         # why the buffers were not kept
    var_vals: dict = field(default_factory=dict)  # symbolic sizes' values in this launch
    plan: object = None         # the KernelPlan it ran with (inspection maps source lines to nodes)
    steps: list = field(default_factory=list)  # [(title, text)]: AST, plan, each action, ...
    compiled: object = None     # the CompileRecord it ran from (engine/compile_record.py)
    calibration: str = ""       # what calibration measured for its CPU target ("" = none)

    def render(self, backend: str) -> str:
        """This kernel's source for any backend ("CPU", "CL", "CUDA", "PYTHON", "WGSL", "METAL"),
        planned with that backend's heuristic; needs no hardware (render-only)."""
        from .realize import render_for
        return render_for(self.ast, backend)

    @property
    def gflops(self) -> float | None:
        return self.flops / self.run_s / 1e9 if self.run_s else None

    @property
    def gbps(self) -> float | None:
        return self.bytes_moved / self.run_s / 1e9 if self.run_s else None


@dataclass
class DataBudget:
    """How much buffer data one trace keeps: a kernel's first launch only, at most `per_launch`
    bytes of arguments each and `total` in all (a learner's example cell, not a training run)."""
    per_launch: int = 1 << 22
    total: int = 1 << 26
    used: int = 0
    seen: set = field(default_factory=set)

    def snapshot(self, key, buffers) -> tuple[list | None, str]:
        """(host copies of `buffers`, or None and the reason) for the launch of kernel `key`."""
        if key in self.seen:
            return None, "kept for the kernel's first launch in this trace only"
        self.seen.add(key)
        size = sum(b.nbytes for b in buffers)
        if size > self.per_launch:
            return None, f"its buffers ({size / 2**20:.1f} MiB) exceed the " \
                         f"{self.per_launch / 2**20:.0f} MiB kept per kernel"
        if self.used + size > self.total:
            return None, f"this trace already keeps {self.total / 2**20:.0f} MiB of buffers"
        self.used += size
        return [b.numpy() for b in buffers], ""


@dataclass
class KernelNames:
    """Kernel names unique within one trace: kernels of one loop shape (one plan name) but
    different programs get n1, n2... in the order this trace first launched them, so a program
    is named the same whatever the process compiled before or in parallel."""
    seen: dict = field(default_factory=dict)  # plan name -> program keys in first-launch order

    def name_of(self, runner) -> str:
        """The trace's name for a compiled kernel (engine/realize.Runner)."""
        return self.unique(runner.name, (runner.device, runner.ast, tuple(runner.plan.opts)))

    def unique(self, name: str, key) -> str:
        keys = self.seen.setdefault(name, [])
        if key not in keys:
            keys.append(key)
        index = keys.index(key)
        return name if index == 0 else f"{name}n{index}"


@dataclass
class RealizeRecord:
    outputs: list               # the lazy nodes realized
    schedule: object            # schedule.Schedule
    forced_by: str              # "file.py:12  y.numpy()" of the user's code
    kernels: list = field(default_factory=list)
    source_lines: dict = field(default_factory=dict)  # lazy node -> user line that built it
    data_budget: DataBudget | None = None             # the trace's (None: keep no buffers)
    names: KernelNames = field(default_factory=KernelNames)  # the trace's
    # the memory planner's choice for this schedule: slot -> the slot whose storage it shares
    memory_plan: dict = field(default_factory=dict)


_SERIALS = itertools.count(1)


@dataclass
class Trace:
    realizes: list = field(default_factory=list)
    data_budget: DataBudget = field(default_factory=DataBudget)
    names: KernelNames = field(default_factory=KernelNames)
    serial: int = field(default_factory=lambda: next(_SERIALS))  # tags the lines it recorded
    # ops that ran outside tinylab while it was active (a PyTorch node of an eager fallback):
    # (op name, user line)
    external: list = field(default_factory=list)

    @property
    def kernels(self) -> list[KernelRecord]:
        return [k for r in self.realizes for k in r.kernels]

    @property
    def decisions(self) -> list:
        return [d for r in self.realizes for d in r.schedule.decisions]


SOURCE_LINES = register("source lines", weakref.WeakKeyDictionary(), Role.LIVE)
ORIGINS = register("origins", weakref.WeakKeyDictionary(), Role.LIVE)


def active() -> tuple:
    return _ACTIVE.get()


def suspend(record: Trace) -> None:
    """Stop recording into `record` in the current context (where a `trace()` block cannot end
    by itself: a traced notebook cell whose end runs in another context than its start)."""
    _ACTIVE.set(tuple(t for t in _ACTIVE.get() if t is not record))


def resume(record: Trace) -> None:
    """Record into `record` again in the current context (after `suspend`)."""
    if not any(t is record for t in _ACTIVE.get()):
        _ACTIVE.set(_ACTIVE.get() + (record,))


def _active_serials() -> frozenset:
    return frozenset(t.serial for t in _ACTIVE.get())


def note_source(node) -> None:
    """Remember which user line built or reused `node` in the traces now active (the first such
    line per trace wins; called by the frontend). A node hash-consed from an earlier trace's
    line takes the current one: a trace shows only its own lines."""
    serials = _active_serials()
    known = SOURCE_LINES.get(node)
    if known is None or not serials <= known[0]:
        SOURCE_LINES[node] = (serials, user_frame())
        attributed = _ATTRIBUTED.get()
        if attributed is not None and attributed[1]:
            ORIGINS[node] = attributed[1]


@contextmanager
def attributed_to(line: str | None, origin: str = ""):
    """Nodes built inside the block take `line` ('file.py:12  code') as their user line and
    `origin` (an ATen op's name) as where they came from (the PyTorch bridge)."""
    token = _ATTRIBUTED.set((line, origin))
    try:
        yield
    finally:
        _ATTRIBUTED.reset(token)


def origin(node) -> str:
    """The other program's op a node came from ('' for tinylab code)."""
    return ORIGINS.get(node, "")


def note_external(name: str, line: str | None) -> None:
    """An op ran outside tinylab (in PyTorch) while the active traces watched."""
    for record in _ACTIVE.get():
        record.external.append((name, line or "?"))


def skip_frames_in(directory: str) -> None:
    """Frames in `directory` (a library tinylab is called through) are not the user's line."""
    directory = os.path.abspath(directory)
    if directory not in _SKIPPED_DIRS:
        _SKIPPED_DIRS.append(directory)


def source_line(node) -> str | None:
    """The user line that built or reused `node` in a trace now active (None: none did)."""
    known = SOURCE_LINES.get(node)
    return known[1] if known is not None and known[0] & _active_serials() else None


def graph_lines(nodes, leaves=()) -> dict:
    """Node -> the user line that built it, for `nodes` in graph order (sources first); a node
    a Tensor op made internally (softmax's NEG) gets the line of the op that used it (inputs,
    `leaves` and nodes without sources, keep only their own)."""
    lines = {}
    users: dict = {}
    for node in nodes:
        for src in node.src:
            users.setdefault(src, []).append(node)
    for node in reversed(nodes):
        line = source_line(node)
        if line is None and node.src and node not in leaves:
            line = next((lines[u] for u in users.get(node, ()) if u in lines), None)
        if line is not None:
            lines[node] = line
    return lines


@contextmanager
def trace():
    """Record every realize inside the block: `with tinylab.trace() as t: ...; t.kernels`."""
    record = Trace()
    token = _ACTIVE.set(_ACTIVE.get() + (record,))
    try:
        yield record
    finally:
        _ACTIVE.reset(token)


def user_frame(skip_internal: bool = True) -> str:
    """'file:line  code' of the innermost caller outside the tinylab package (and the libraries
    it is called through), or the line the current block is attributed to."""
    attributed = _ATTRIBUTED.get()
    if attributed is not None and attributed[0] and skip_internal:
        return attributed[0]
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        path = os.path.abspath(filename)
        inside = skip_internal and any(path.startswith(d) for d in _SKIPPED_DIRS)
        if not inside and "contextlib" not in filename:
            import linecache
            line = linecache.getline(filename, frame.f_lineno).strip()
            return f"{os.path.basename(filename)}:{frame.f_lineno}  {line}".rstrip()
        frame = frame.f_back
    return "?"
