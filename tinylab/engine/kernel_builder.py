"""Kernels made ready to launch: `build_runners(requests, noopt, beam)` -> a Runner per kernel
key, each built once in this process however many threads ask (Device.state.runners keeps them).
realize.py's compile_schedule and compile_kernel call it.

A kernel is made in one of two ways. A program some process planned before (planned_cache.py,
keyed by the scheduled kernel) comes back with its source, and its binary from the compile cache:
it is not planned again (its compile record is made only when something shows it). Any other is
planned and rendered here (compile_record.py), in schedule order, while compiler threads build
the sources made so far: several kernels per translation unit (the CPU runtime's compile_unit),
identical sources once. A big batch builds quick first (build_tiers.py: -O1 now, the -O2 build
swapped in from a background thread). Each Runner's KernelBuild says how it was built and its
tier; GlobalCounters add up the phases.
"""
from __future__ import annotations

import contextvars
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from .. import config
from ..codegen.linear_program import program_cost
from ..ir.node import Node
from ..target.build_facts import BuildFacts
from ..target.threads import thread_count
from . import build_tiers, planned_cache
from .calibrate import calibration_note
from .compile_record import CompileRecord, KernelBuild, compile_record, source_hash
from .counters import GlobalCounters
from .devices import Device

STATE = Device.state
TINYLAB = __name__.partition(".")[0] + "."  # planned programs are kept for its own renderers
COMPILED, BINARY_CACHED = "compiled", "binary from the disk cache"
PROGRAM_CACHED, RENDER_ONLY = "planned program from the disk cache", "render only"
UNIT_BYTES = 48 << 10   # source that starts a unit's compile while planning goes on
SPLIT_BYTES = 16 << 10  # the last sources split over the cores, at least this much each


@dataclass(eq=False)
class Runner:
    """One kernel ready to launch on one device. Its compile record is made on first use when
    the program came from the disk cache (the same pipeline, the same kernel and settings)."""
    device: str
    name: str
    ast: Node
    source: str
    fn: object              # runtime Program, None when render-only
    flops: int
    bytes_moved: int
    build: KernelBuild
    variable_names: list
    launch_dims: object = None  # a GPU kernel's LaunchDims (None: the source runs its loops)
    target: str = ""        # the CPU target it was planned and compiled for ("" off the CPU)
    runtime: object = None  # the Runtime that loaded fn: it launches it
    calibration: str = ""   # what calibration measured for its CPU target (calibrate.py)
    settings: tuple = (False, 0)  # (NOOPT, BEAM) its plan was chosen with
    _record: CompileRecord | None = field(default=None, repr=False)
    wide_variables: frozenset = frozenset()  # variables the kernel takes as int64 (past int32)
    facts: BuildFacts | None = None  # what its runtime read to build and launch it

    def __call__(self, buffers: list, var_vals: dict | None = None) -> float:
        """Launch on `buffers`; a symbolic kernel takes its variables' values from var_vals."""
        return self.runtime.launch(self.fn, self.launch_dims, *[b.handle for b in buffers],
                                   scalars=self.variable_values(var_vals))

    @property
    def record(self) -> CompileRecord:
        """Every stage of its compilation (compile_record.py)."""
        if self._record is None:
            made = compile_record(self.device, self.ast, *self.settings)
            made.build, made.compiled_hash = self.build, source_hash(self.source)
            self._record = made
        return self._record

    @property
    def plan(self):
        return self.record.plan

    @property
    def program(self):
        return self.record.program

    @property
    def compile_s(self) -> float:
        return self.build.seconds

    @property
    def cache_hit(self) -> bool:
        """Its binary came from the disk cache (it compiled nothing here)."""
        return self.build.how in (BINARY_CACHED, PROGRAM_CACHED)

    def launch_flops(self, var_vals: dict | None) -> int:
        """FLOPs of one launch: a symbolic kernel's loops run to this launch's values."""
        if not self.variable_names:
            return self.flops
        return program_cost(self.program, var_vals)[0]

    def variable_values(self, var_vals: dict | None) -> list[int]:
        names = self.variable_names
        missing = [n for n in names if n not in (var_vals or {})]
        if missing:
            raise ValueError(f"kernel {self.name} takes symbolic sizes {names}; no value was "
                             f"bound for {missing}")
        # typed as the kernel declares them: int64 where a variable's range leaves int32
        return [np.int64(var_vals[n]) if n in self.wide_variables else np.int32(var_vals[n])
                for n in names]

    def passes(self) -> dict[str, str]:
        """The printed passes, from the compile record ("plan": the plan as linearized)."""
        return self.record.passes()


def runner_key(device: str, ast: Node, noopt: bool, beam: int) -> tuple:
    """What makes a compiled kernel reusable in this process: the kernel, its device, the
    NOOPT/BEAM settings, whether the disk cache may be used and the CPU target it was planned
    for (DISABLE_COMPILER_CACHE=1 compiles each kernel again once)."""
    target = Device[device].target
    return (device, ast, noopt, beam, bool(config.COMPILER_CACHE_ON),
            target.key if target else None)


def build_runners(requests: list[tuple], noopt: bool, beam: int, advance=None) -> dict:
    """{key: Runner} for requests [(runner_key, device, ast)]: kernels this process holds are
    reused, those another thread builds now are waited for, the rest are built here together.
    `advance()` is called once per kernel built here."""
    out, mine, theirs, seen = {}, [], [], set()
    with STATE.lock:
        for key, device, ast in requests:
            if key in seen:
                continue
            seen.add(key)
            known = STATE.runners.get(key)
            underway = STATE.compiling.get(key) if known is None else None
            if known is not None:
                out[key] = known
            elif underway is not None:
                theirs.append((key, device, ast, underway))
            else:
                STATE.compiling[key] = threading.Event()
                mine.append((key, device, ast))
    try:
        if mine:
            built = _Build(noopt, beam, advance).run(mine)
            with STATE.lock:  # keep one per key
                out.update({key: STATE.runners.setdefault(key, r) for key, r in built.items()})
    finally:
        with STATE.lock:
            for key, _, _ in mine:
                STATE.compiling.pop(key).set()
    for key, device, ast, underway in theirs:
        underway.wait()   # built by then, or its builder failed: build (or fail) here
        out[key] = build_runners([(key, device, ast)], noopt, beam)[key]
    return out


def _announce(device: str, target_key) -> None:
    """DEBUG>=1: the device's one-line description, the first time a kernel is built for it."""
    with STATE.lock:
        if (device, target_key) in STATE.announced:
            return
        STATE.announced[(device, target_key)] = None
    if int(config.DEBUG.value) >= 1:
        spec, target = Device[device], Device[device].target
        print(f"opened device {device}: {spec.backend.description}"
              + (" (render only)" if spec.render_only else "")
              + (f"; target {target.describe()}" if target else ""))


@dataclass(eq=False)
class _Job:
    key: tuple
    device: str
    ast: Node
    name: str = ""
    source: str = ""
    facts: BuildFacts | None = None       # what the runtime reads (the record's, or the entry's)
    record: CompileRecord | None = None   # None: the program came from the disk cache
    entry: dict | None = None             # the disk cache's entry (or the one to store)
    disk_key: str | None = None
    twin: _Job | None = None               # an earlier job with the same source
    build: KernelBuild | None = None
    unit: _Unit | None = None               # the unit it compiles in
    loaded: object = None                   # the runtime's Program, once loaded


class _Unit:
    """Kernels compiled together: the runtime's compile_unit on a thread (or here)."""

    def __init__(self, device: str, jobs: list[_Job], pool: ThreadPoolExecutor | None,
                 quick: bool = False):
        self.device, self.jobs, self.quick = device, jobs, quick
        runtime = Device[device].runtime
        kernels = [(job.name, job.source, job.facts) for job in jobs]
        # the thread runs in a copy of this context: it sees the Context() overrides
        self.future = pool.submit(contextvars.copy_context().run, _compile, runtime,
                                  kernels, quick) if pool else None
        self.answer = None if pool else _compile(runtime, kernels, quick)
        for job in jobs:
            job.unit = self

    def result(self) -> tuple[list, float]:
        """(per kernel (library, symbol, cached), the compile's wall seconds)."""
        if self.answer is None:
            self.answer = self.future.result()
            GlobalCounters.compile_wall_s += self.answer[1]
        return self.answer


class _Build:
    """One batch of kernels: plan each in order, compile units on threads meanwhile, then load."""

    def __init__(self, noopt: bool, beam: int, advance):
        self.noopt, self.beam, self.advance = noopt, beam, advance or (lambda: None)
        self.threads = thread_count().count if config.PARALLEL_COMPILE.value else 1
        self.pool: ThreadPoolExecutor | None = None
        self.pending: dict[str, list[_Job]] = {}    # device -> jobs not yet in a unit
        self.sources: dict[tuple, _Job] = {}         # (device, source) -> its first job
        self.keep = bool(config.COMPILER_CACHE_ON)
        self.prepared: set[str] = set()              # devices runtime.prepare() answered
        self.quick: set[str] = set()                 # devices this batch builds quick first
        self.upgrades: dict[str, list] = {}          # device -> kernels running a quick build
        self.submitted = 0                           # units submitted so far

    def run(self, requests: list[tuple]) -> dict:
        start = time.perf_counter()
        counts: dict[str, int] = {}
        for _, device, _ in requests:
            counts[device] = counts.get(device, 0) + 1
        self.quick = {d for d, n in counts.items() if build_tiers.quick_batch(d, n)}
        with build_tiers.foreground():   # full builds in the background wait for this batch
            return self._run(requests, start)

    def _run(self, requests: list[tuple], start: float) -> dict:
        try:
            jobs = [self.add(_Job(key, device, ast)) for key, device, ast in requests]
            for device in list(self.pending):
                for part in _split(self.pending.pop(device), self.threads):
                    self.submit(device, part)
            planned, loads = time.perf_counter(), GlobalCounters.load_s
            runners = {job.key: self.finish(job) for job in jobs}
            waited = max(0.0, time.perf_counter() - planned - (GlobalCounters.load_s - loads))
            GlobalCounters.compile_wait_s += waited
            for device, kernels in self.upgrades.items():
                build_tiers.upgrade(Device[device].runtime, kernels)
        finally:
            if self.pool is not None:
                self.pool.shutdown(wait=True, cancel_futures=True)
        GlobalCounters.compile_time_s += time.perf_counter() - start
        return runners

    def add(self, job: _Job) -> _Job:
        _announce(job.device, job.key[-1])
        spec = Device[job.device]
        renderer = type(spec.renderer)
        settings = (self.noopt, self.beam, int(config.TUNE.value), job.key[-1],
                    f"{renderer.__module__}.{renderer.__qualname__}")
        if self.keep and not spec.render_only and not config.IGNORE_BEAM_CACHE.value \
                and renderer.__module__.startswith(TINYLAB):  # its code is fingerprinted
            job.disk_key = planned_cache.program_key(job.device, job.ast, settings)
            job.entry = planned_cache.load(job.disk_key) if job.disk_key else None
        if job.entry is not None:
            job.name, job.source = job.entry["name"], job.entry["source"]
            job.facts = BuildFacts.from_entry(job.entry["facts"])
            job.build = KernelBuild(PROGRAM_CACHED)
            GlobalCounters.programs_loaded += 1
        else:
            job.record = compile_record(job.device, job.ast, self.noopt, self.beam)
            job.name, job.source = job.record.plan.name, job.record.source
            job.facts = job.record.facts
            if not spec.render_only and job.device not in self.prepared and self.threads > 1 \
                    and spec.runtime.prepare(job.source, job.facts):  # while planning goes on
                self.prepared.add(job.device)
            plan_s, render_s = job.record.timings
            job.build = KernelBuild(RENDER_ONLY if spec.render_only else COMPILED,
                                    plan_s=plan_s, render_s=render_s)
            GlobalCounters.plan_s += plan_s
            GlobalCounters.render_s += render_s
        if spec.render_only:
            return job
        job.twin = self.sources.setdefault((job.device, job.source), job)
        if job.twin is job:
            job.twin = None
            queue = self.pending.setdefault(job.device, [])
            queue.append(job)
            # the first unit starts at half the size: a short batch (a cumprod's backward) then
            # compiles in two units on two cores, not in one after its planning
            start_at = UNIT_BYTES if self.submitted else UNIT_BYTES // 2
            if sum(len(j.source) for j in queue) >= start_at and self.threads > 1:
                self.submit(job.device, self.pending.pop(job.device))
        return job

    def submit(self, device: str, jobs: list[_Job]) -> None:
        if self.threads > 1 and self.pool is None:
            self.pool = ThreadPoolExecutor(self.threads)
        self.submitted += 1
        _Unit(device, jobs, self.pool, device in self.quick)

    def finish(self, job: _Job) -> Runner:
        spec = Device[job.device]
        fn = runtime = None
        if not spec.render_only:
            runtime = spec.runtime
            fn = self.loaded(job.twin or job)
        if job.twin is not None:
            job.build = KernelBuild(job.build.how, job.twin.build.tier,
                                    unit_kernels=job.twin.build.unit_kernels,
                                    plan_s=job.build.plan_s, render_s=job.build.render_s)
            if job.build.tier == "quick":
                self.upgrades[job.device].append((job.name, job.source, job.facts, fn,
                                                  job.build))
        record = job.record
        if record is not None:
            record.build = job.build
            if fn is not None:
                record.compiled_hash = source_hash(job.source)  # the text the runtime compiled
            flops, moved = program_cost(record.program)
            names, wide = record.program.variable_names, frozenset(record.program.wide_variables)
            self.remember(job, flops, moved, names, wide)
        else:
            flops, moved = job.entry["flops"], job.entry["bytes_moved"]
            names, wide = list(job.entry["variable_names"]), frozenset(job.entry["wide_variables"])
        dims = job.facts.launch
        GlobalCounters.kernels_built += 1
        self.advance()
        target = spec.target
        return Runner(job.device, job.name, job.ast, job.source, fn, flops, moved, job.build,
                      names, dims, target.name if target else "", runtime,
                      calibration_note(target) if target else "", (self.noopt, self.beam),
                      record, wide, job.facts)

    def loaded(self, job: _Job):
        """Load `job`'s kernel from its unit (waiting for the unit's compile)."""
        if job.loaded is not None:
            return job.loaded
        built, seconds = job.unit.result()
        library, symbol, hit = built[next(i for i, j in enumerate(job.unit.jobs) if j is job)]
        start = time.perf_counter()
        job.loaded = Device[job.device].runtime.load(library, symbol)
        job.build.load_s = time.perf_counter() - start
        GlobalCounters.load_s += job.build.load_s
        if not hit:
            GlobalCounters.compile_count += 1
            compiled = sum(1 for _, _, cached in built if not cached)
            job.build.compile_s, job.build.unit_kernels = seconds, compiled
        elif job.build.how == COMPILED:
            job.build.how = BINARY_CACHED
        if job.unit.quick:
            job.build.tier = Device[job.device].runtime.tier_of(library, symbol)
            if job.build.tier == "quick":
                self.upgrades.setdefault(job.device, []).append(
                    (job.name, job.source, job.facts, job.loaded, job.build))
        return job.loaded

    def remember(self, job: _Job, flops: int, moved: int, names: list, wide: frozenset) -> None:
        """Store a newly planned program (one the runtime launches without launch dims)."""
        if job.disk_key is None or job.facts.launch is not None or job.build.how == RENDER_ONLY:
            return
        planned_cache.store(job.disk_key, {"name": job.name, "source": job.source,
                                           "facts": job.facts.as_entry(),
                                           "flops": flops, "bytes_moved": moved,
                                           "variable_names": list(names),
                                           "wide_variables": sorted(wide)})


def _compile(runtime, kernels: list[tuple], quick: bool) -> tuple[list, float]:
    """(runtime.compile_unit's answer, its wall seconds): what a compiler thread runs; `quick`:
    the quick build where the full one is not cached (build_tiers.py)."""
    start = time.perf_counter()
    built = runtime.compile_unit(kernels, quick=True) if quick else runtime.compile_unit(kernels)
    return built, time.perf_counter() - start


def _split(jobs: list[_Job], threads: int) -> list[list[_Job]]:
    """`jobs` in at most `threads` consecutive parts of similar source size, each at least
    SPLIT_BYTES (so a part's compile outweighs the compiler's start)."""
    if not jobs:
        return []
    total = sum(len(job.source) for job in jobs)
    parts = max(1, min(threads, len(jobs), total // SPLIT_BYTES))
    out, current, size = [], [], 0
    for job in jobs:
        current.append(job)
        size += len(job.source)
        if size >= total * (len(out) + 1) / parts and len(out) < parts - 1:
            out.append(current)
            current = []
    return out + ([current] if current else [])
