"""Realize: schedule lazy nodes, compile each kernel (cached), allocate buffers, launch, time,
count, print (DEBUG) and record (Trace).

`realize(nodes)` -> the BUFFER node holding each one's value. `compile_kernel(device, ast)`
-> Runner (a compiled kernel, cached in memory by AST in `Device.state`, engine/engine_state.py; the
binary is cached on disk by the runtime). This is the only layer that reads settings (config)
and passes them down as arguments.
"""
from __future__ import annotations

import contextvars
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

import numpy as np

from .. import config
from ..caps import caps_for
from ..codegen.linear_program import LinearProgram, program_cost
from ..codegen.plan import KernelPlan
from ..ir import node as ir
from ..ir.node import Node
from ..ir.ops import Op
from ..ir.symbolic import max_shape
from ..runtimes.buffer import Buffer
from ..schedule.fusion import SchedulerOptions
from ..schedule.cache import reuse, structure_key, template
from ..schedule.memory import plan_schedule
from ..schedule.schedule import Schedule, schedule
from ..target.threads import thread_count
from . import progress
from . import trace as tracing
from .calibrate import calibration_note
from .counters import GlobalCounters
from .devices import Device
from .compile_record import (TUNE_WORK, CompileRecord, choose_plan,  # noqa: F401 (API)
                             compile_record, source_hash)
from .engine_state import FreshRealized


STATE = Device.state       # the engine's caches, one object with one lock (engine/engine_state.py)
REALIZED = STATE.realized  # lazy node -> the BUFFER node holding its value


@dataclass(eq=False)
class Runner:
    """One compiled kernel on one device."""
    device: str
    name: str
    ast: Node
    plan: KernelPlan
    program: LinearProgram
    source: str
    fn: object              # runtime Program, None when render-only
    flops: int
    bytes_moved: int
    compile_s: float
    cache_hit: bool
    target: str = ""        # the CPU target it was planned and compiled for ("" off the CPU)
    runtime: object = None  # the Runtime that loaded fn: it launches it
    record: CompileRecord | None = None  # every stage of its compilation (compile_record.py)
    calibration: str = ""   # what calibration measured for its CPU target (calibrate.py)

    def __call__(self, buffers: list[Buffer], var_vals: dict | None = None) -> float:
        """Launch on `buffers`; a symbolic kernel takes its variables' values from var_vals."""
        return self.runtime.launch(self.fn, self.program.launch, *[b.handle for b in buffers],
                                   scalars=self.variable_values(var_vals))

    def launch_flops(self, var_vals: dict | None) -> int:
        """FLOPs of one launch: a symbolic kernel's loops run to this launch's values."""
        if not self.program.variables:
            return self.flops
        return program_cost(self.program, var_vals)[0]

    def variable_values(self, var_vals: dict | None) -> list[int]:
        names, wide = self.program.variable_names, self.program.wide_variables
        missing = [n for n in names if n not in (var_vals or {})]
        if missing:
            raise ValueError(f"kernel {self.name} takes symbolic sizes {names}; no value was "
                             f"bound for {missing}")
        # typed as the kernel declares them: int64 where a variable's range leaves int32
        return [np.int64(var_vals[n]) if n in wide else np.int32(var_vals[n]) for n in names]

    def passes(self) -> dict[str, str]:
        """The printed passes, from the compile record ("plan": the plan as linearized)."""
        return self.record.passes()


def render_for(ast: Node, device: str) -> str:
    """The source `device`'s renderer makes for a kernel AST, planned with that device's heuristic
    (the same kernel on every backend: "CPU"/"C", "CL", "CUDA", "PYTHON"). Compiles nothing."""
    return record_for(ast, device).source


def record_for(ast: Node, device: str) -> CompileRecord:
    """The compile record of `ast` on `device` (compiled there when it was, else made by the same
    pipeline for display only, once per kernel and settings)."""
    noopt, beam = bool(config.NOOPT.value), int(config.BEAM.value)
    with STATE.lock:
        known = STATE.runners.get(_runner_key(device, ast, noopt, beam))
    if known is not None:
        return known.record
    key = ("display",) + _runner_key(device, ast, noopt, 0)
    with STATE.lock:
        found = STATE.display_records.get(key)
    if found is None:
        found = compile_record(device, ast, noopt, 0)
        with STATE.lock:
            found = STATE.display_records.setdefault(key, found)
    return found


def compile_kernel(device: str, ast: Node, noopt: bool | None = None,
                   beam: int | None = None) -> Runner:
    noopt = bool(config.NOOPT.value) if noopt is None else noopt
    beam = int(config.BEAM.value) if beam is None else beam
    spec = Device[device]
    key = _runner_key(device, ast, noopt, beam)
    while True:   # one thread compiles a kernel; others asking for it meanwhile wait for it
        with STATE.lock:
            known = STATE.runners.get(key)
            underway = STATE.compiling.get(key) if known is None else None
            if known is None and underway is None:
                announce = (device, key[-1]) not in STATE.announced
                STATE.announced[(device, key[-1])] = None
                done = STATE.compiling[key] = threading.Event()
                break
        if known is not None:
            return known
        underway.wait()
    try:
        return _compile_new(device, spec, key, ast, noopt, beam, announce)
    finally:
        with STATE.lock:
            STATE.compiling.pop(key, None)
        done.set()


def _compile_new(device: str, spec, key: tuple, ast: Node, noopt: bool, beam: int,
                 announce: bool) -> Runner:
    """Compile a kernel no runner holds yet (compile_kernel made sure no other thread does)."""
    target = spec.target
    if announce:
        if int(config.DEBUG.value) >= 1:
            print(f"opened device {device}: {spec.backend.description}"
                  + (" (render only)" if spec.render_only else "")
                  + (f"; target {target.describe()}" if target else ""))
    record = compile_record(device, ast, noopt, beam)
    plan, program, source = record.plan, record.program, record.source
    # named by its loops alone, whatever the process compiled before: the same kernel compiles
    # to the same text (and hits the disk cache) everywhere; a trace tells same-named kernels
    # apart with n1, n2... of its own (trace.KernelNames)
    name = plan.name
    flops, moved = program_cost(program)
    start = time.perf_counter()
    fn, hit, runtime = None, False, None
    if not spec.render_only:
        runtime = spec.runtime
        library, hit = runtime.compile(source)
        record.compiled_hash = source_hash(source)   # the text the runtime compiled
        fn = runtime.load(library, plan.name)
    compile_s = time.perf_counter() - start
    GlobalCounters.compile_count += 0 if hit else 1
    GlobalCounters.kernels_built += 1
    GlobalCounters.compile_time_s += compile_s
    runner = Runner(device, name, ast, plan, program, source, fn, flops, moved, compile_s, hit,
                    target.name if target else "", runtime, record,
                    calibration_note(target) if target else "")
    with STATE.lock:  # another thread may have compiled the same kernel meanwhile: keep one
        return STATE.runners.setdefault(key, runner)


def _runner_key(device: str, ast: Node, noopt: bool, beam: int) -> tuple:
    """What makes a compiled kernel reusable in this process: the kernel, its device, the
    NOOPT/BEAM settings, whether the disk cache may be used and the CPU target it was planned
    for (DISABLE_COMPILER_CACHE=1 compiles each kernel again once)."""
    target = Device[device].target
    return (device, ast, noopt, beam, bool(config.COMPILER_CACHE_ON),
            target.key if target else None)


def _item_device(item) -> str:
    return Device.canonicalize(item.slots[0].device)


def compile_schedule(sched: Schedule) -> list[Runner | None]:
    """Runners for every kernel of a schedule; kernels not yet compiled build in parallel, as
    one progress task (engine/progress.py) when there are any."""
    kernels = [(i, item) for i, item in enumerate(sched.items)
               if item.kind == "kernel" and ir.prod(max_shape(item.slots[0].shape)) > 0]  # 0: no work
    runners: list[Runner | None] = [None] * len(sched.items)
    noopt, beam = bool(config.NOOPT.value), int(config.BEAM.value)
    work = []
    for i, item in kernels:
        key = _runner_key(_item_device(item), item.ast, noopt, beam)
        with STATE.lock:
            known = STATE.runners.get(key)
        if known is not None:
            runners[i] = known
        else:
            work.append((i, item))
    if not work:
        return runners
    with progress.task("compile", f"{len(work)} kernels", len(work)) as compiling:
        if config.PARALLEL_COMPILE.value and len(work) > 1 and thread_count().count > 1:
            def build(item):
                with progress.within(compiling.id):  # a TUNE / BEAM nests in this task
                    return compile_kernel(_item_device(item), item.ast, noopt, beam)
            with ThreadPoolExecutor(thread_count().count) as pool:
                # each thread runs in a copy of this context: it sees the Context() overrides
                futures = {pool.submit(contextvars.copy_context().run, build, item): i
                           for i, item in work}
                for future in as_completed(futures):
                    runners[futures[future]] = future.result()
                    compiling.advance()
        else:
            for i, item in work:
                runners[i] = compile_kernel(_item_device(item), item.ast, noopt, beam)
                compiling.advance()
    return runners


def _allocate(sched: Schedule, record: tracing.RealizeRecord | None = None) -> dict:
    """A Buffer per slot; intermediate slots with disjoint lifetimes share one (schedule/memory.py).
    A traced realize keeps the plan (slot -> slot whose storage it shares) in its record."""
    representative, saved = plan_schedule(sched)
    GlobalCounters.bytes_saved += saved
    if record is not None:
        slots = {id(slot): slot for item in sched.items for slot in item.slots}
        record.memory_plan = {slots[key]: slots[rep] for key, rep in representative.items()}
    buffers = {}
    for item in sched.items:
        for slot in item.slots:
            if id(slot) in buffers:
                continue
            if slot.existing is not None:
                buffers[id(slot)] = slot.existing
            elif id(slot) in representative:
                continue
            else:
                spec = Device[slot.device]
                buffers[id(slot)] = Buffer(spec.name, ir.prod(max_shape(slot.shape)), slot.dtype,
                                           spec.allocator)
    for key, rep in representative.items():
        buffers[key] = buffers[rep]
    return buffers


def _debug_line(index: int, runner: Runner, seconds: float, args: int, flops: int) -> str:
    total = GlobalCounters.time_sum_s * 1e3
    gflops = flops / seconds / 1e9 if seconds else 0.0
    gbps = runner.bytes_moved / seconds / 1e9 if seconds else 0.0
    name = runner.plan.colored_name() if config.COLOR.value and sys.stdout.isatty() \
        else runner.name
    pad = max(0, 26 - len(runner.name))
    return (f"*** {runner.device:<7} {index:4d} {name}{' ' * pad} arg {args:2d} "
            f"mem {GlobalCounters.mem_used / 1e9:6.2f} GB tm {seconds * 1e6:9.2f}us/"
            f"{total:9.2f}ms ({gflops:9.2f} GFLOPS {gbps:7.2f} GB/s)")


def run_schedule(sched: Schedule, record: tracing.RealizeRecord | None = None) -> dict:
    """Execute a schedule; returns slot id -> Buffer."""
    debug = int(config.DEBUG.value)
    runners = compile_schedule(sched)
    buffers = _allocate(sched, record)
    for i, item in enumerate(sched.items):
        bufs = [buffers[id(s)] for s in item.slots]
        if item.kind == "copy":
            bufs[0].copyin(bufs[1].numpy())
            _notify_capture(None, bufs)
            continue
        runner = runners[i]
        if runner is None:  # a kernel over zero elements is never compiled nor launched
            continue
        if debug >= 3:
            where = f" ({runner.target} target)" if runner.target else ""
            print(f"    opts for {runner.name}{where}: [{', '.join(map(str, runner.plan.opts))}]"
                  + (f"; launch: {runner.program.launch}" if runner.program.launch else ""))
        if debug >= 4:
            print(runner.source)
        if debug >= 5:
            passes = runner.record.passes()
            print(passes["ast"], passes["plan"], passes["linear"], sep="\n")
        kept = _keep_inputs(record, runner, bufs)
        if runner.fn is None:
            seconds = 0.0  # render-only device
        else:
            seconds = runner(bufs, item.var_vals)
        flops = runner.launch_flops(item.var_vals)
        GlobalCounters.kernel_count += 1
        GlobalCounters.global_ops += flops
        GlobalCounters.global_mem += runner.bytes_moved
        GlobalCounters.time_sum_s += seconds
        if debug >= 2:
            print(_debug_line(GlobalCounters.kernel_count, runner, seconds, len(bufs), flops))
        if record is not None:
            record.kernels.append(_kernel_record(runner, i, seconds, bufs, record.names, kept,
                                                 item.var_vals))
        _notify_capture(runner, bufs, item.var_vals)
    return buffers


# Trace records: each compiled kernel's compile cost is reported by the first record only
# (later launches reuse it from memory: a cache hit).
def _keep_inputs(record, runner: Runner, bufs) -> tuple:
    """(inputs, note): the buffers before this launch, kept in the trace when small."""
    if record is None or record.data_budget is None:
        return None, ""
    if runner.fn is None:
        return None, "render-only device: nothing ran"
    return record.data_budget.snapshot(runner, bufs)


def _kernel_record(runner: Runner, index: int, seconds: float, bufs,
                   names: tracing.KernelNames,
                   kept: tuple = (None, ""), var_vals: dict | None = None) -> tracing.KernelRecord:
    spec = Device[runner.device]
    language = spec.language
    first = runner not in STATE.recorded
    STATE.recorded.add(runner)
    inputs, note = kept
    outputs = None if inputs is None else {
        p.index: bufs[p.index].numpy() for p in runner.program.params if p.is_output}
    return tracing.KernelRecord(names.name_of(runner), runner.device, runner.ast, index,
                                list(runner.plan.opts), runner.record.passes(), runner.source,
                                language, runner.launch_flops(var_vals), runner.bytes_moved,
                                runner.compile_s if first else 0.0,
                                runner.cache_hit or not first, seconds, [b.nbytes for b in bufs],
                                inputs, outputs, note, dict(var_vals or {}), plan=runner.plan,
                                steps=runner.record.steps(), compiled=runner.record,
                                calibration=runner.calibration)


def capturing(hook, owner=None):
    """`with capturing(hook):` calls hook(runner, buffers, var_vals) with every kernel launch and
    copy (runner None) the engine makes inside the block (TinyJit's capture, engine/capture.py);
    `capturer()` gives `owner` meanwhile."""
    return STATE.capturing(hook, owner)


def capturer():
    """The TinyJit capturing a step now, else None (EngineState.capturer: the one flag)."""
    return STATE.capturer


def _notify_capture(runner: Runner, bufs: list[Buffer], var_vals: dict | None = None) -> None:
    for capture in STATE.captures:
        capture(runner, bufs, var_vals or {})


def scheduler_options() -> SchedulerOptions:
    return SchedulerOptions(fuse=bool(config.FUSE.value),
                            relayout_operands=bool(config.RELAYOUT.value))


def cached_schedule(todo: list[Node], realized) -> Schedule:
    """The schedule of `todo`; a graph whose structure was scheduled before (same ops, shapes,
    consts, which leaves are the same buffer, scheduler options and devices' panel, rows and lane
    widths) reuses that schedule over its own buffers (schedule/cache.py)."""
    options, caps = scheduler_options(), Device.caps()
    if not config.SCHEDULE_CACHE.value:
        return schedule(todo, options, realized=realized, caps=caps)
    structure, leaves, order = structure_key(todo, realized)
    devices = sorted({node.device for node in leaves + todo if node.device is not None})
    declared = [caps_for(caps, d) for d in devices]
    key = (structure, options,
           tuple((c.device, c.panel_width, c.pack_rows, c.relayout_lanes) for c in declared))
    known = STATE.known_schedule(key)
    if known is False:  # a structure whose schedule cannot be templated (schedule/cache.py)
        return schedule(todo, options, realized=realized, caps=caps)
    if known is not None:
        GlobalCounters.schedule_cache_hits += 1
        cached, stand_ins, held, walk = known
        return reuse(cached, stand_ins, leaves, held, realized, walk, order)
    sched = schedule(todo, options, realized=realized, caps=caps)
    made = template(sched, leaves, realized, order)
    STATE.remember_schedule(key, False if made is None else made)
    return sched


def _graph_nodes(outputs, sched: Schedule) -> list[Node]:
    """The lazy nodes a schedule covered (stopping at realized leaves)."""
    from ..schedule.graph import graph_order
    return graph_order(outputs, sched.leaves)


def realize(nodes: list[Node], computed_outside: dict | None = None,
            assigned: dict | None = None) -> list[Node]:
    """Compute every node; returns the BUFFER node that now holds each value. Every assign the
    schedule ran (a requested one or one under a requested node) is done: its ASSIGN node maps
    to the buffer's new version, in REALIZED and in `assigned` when given, so it never runs twice.
    While TinyJit captures, earlier results are not reused (every kernel must be recorded) but
    those in `computed_outside` (values made before the step, lazy node -> BUFFER node), and
    new ones are not remembered (replays overwrite their buffers)."""
    realized = dict(computed_outside or {}) if STATE.captures else FreshRealized(REALIZED)
    assigned = {} if assigned is None else assigned
    todo = [n for n in dict.fromkeys(nodes) if n.op is not Op.BUFFER and n not in realized]
    # keep the BUFFER nodes of values already realized alive until the end: an entry held
    # weakly (RealizedTable.hold_weakly) must not vanish in a garbage collection mid-realize
    # (looked up now: an assign this schedule runs may make a FreshRealized entry stale later)
    kept_alive = {n: realized[n] for n in dict.fromkeys(nodes)
                  if n.op is not Op.BUFFER and n not in todo}
    results = {}
    if todo:
        sched = cached_schedule(todo, realized)
        debug = int(config.DEBUG.value)
        if debug >= 1:
            print(f"scheduled {len(sched.kernels)} kernel(s) for {len(todo)} output(s)")
        if debug >= 3:
            print(sched)
        records = []
        traces = tracing.active()
        if traces:
            forced = tracing.user_frame()
            lines = tracing.graph_lines(_graph_nodes(todo, sched), sched.leaves)
            records = [tracing.RealizeRecord(todo, sched, forced, source_lines=lines,
                                             data_budget=t.data_budget, names=t.names)
                       for t in traces]
            for t, r in zip(traces, records):
                t.realizes.append(r)
        buffers = run_schedule(sched, records[0] if records else None)
        for r in records[1:]:
            r.kernels, r.memory_plan = list(records[0].kernels), records[0].memory_plan
        for item in sched.items:  # the buffer's new version
            if item.kind == "kernel" and item.output.op is Op.ASSIGN:
                node, buf = item.output, buffers[id(item.slots[0])]
                buf.version += 1
                assigned[node] = ir.buffer(buf, node.shape, node.dtype, node.device, buf.version)
                if not STATE.captures:
                    REALIZED[node] = assigned[node]
        for node in todo:
            if node in assigned:
                results[node] = assigned[node]
                continue
            slot = sched.outputs[node]
            buf = slot.existing if slot.existing is not None else buffers[id(slot)]
            results[node] = ir.buffer(buf, node.shape, node.dtype, node.device, buf.version)
            if not STATE.captures:
                REALIZED[node] = results[node]
    return [n if n.op is Op.BUFFER else results.get(n) or kept_alive[n] for n in nodes]
