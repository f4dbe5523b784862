"""Realize: schedule lazy nodes, compile each kernel (cached), allocate buffers, launch, time,
count, print (DEBUG) and record (Trace).

`realize(nodes)` -> the BUFFER node holding each one's value. `compile_kernel(device, ast)`
-> Runner (a compiled kernel, cached in memory by AST in `Device.state`, engine/engine_state.py; the
binary is cached on disk by the runtime). This is the only layer that reads settings (config)
and passes them down as arguments.
"""
from __future__ import annotations

import sys
import time

from .. import config
from ..caps import caps_for
from ..ir import node as ir
from ..ir.node import Node
from ..ir.ops import Op
from ..ir.symbolic import max_shape
from ..runtimes.buffer import Buffer
from ..schedule.fusion import SchedulerOptions
from ..schedule.items import ItemKind
from ..schedule.cache import reuse, structure_key, template
from ..schedule.memory import plan_schedule
from ..schedule.schedule import Schedule, schedule
from . import collector, progress, schedule_store
from . import trace as tracing
from .counters import GlobalCounters
from .devices import Device
from .compile_record import (TUNE_WORK, CompileRecord, choose_plan,  # noqa: F401 (API)
                             compile_record, source_hash)
from .engine_state import FreshRealized
from .kernel_builder import Runner, build_runners, runner_key


STATE = Device.state       # the engine's caches, one object with one lock (engine/engine_state.py)
REALIZED = STATE.realized  # lazy node -> the BUFFER node holding its value


def render_for(ast: Node, device: str) -> str:
    """The source `device`'s renderer makes for a kernel AST, planned with that device's heuristic
    (the same kernel on every backend: "CPU"/"C", "CL", "CUDA", "PYTHON"). Compiles nothing."""
    return record_for(ast, device).source


def record_for(ast: Node, device: str) -> CompileRecord:
    """The compile record of `ast` on `device` (compiled there when it was, else made by the same
    pipeline for display only, once per kernel and settings)."""
    noopt, beam = bool(config.NOOPT.value), int(config.BEAM.value)
    with STATE.lock:
        known = STATE.runners.get(runner_key(device, ast, noopt, beam))
    if known is not None:
        return known.record
    key = ("display",) + runner_key(device, ast, noopt, 0)
    with STATE.lock:
        found = STATE.display_records.get(key)
    if found is None:
        found = compile_record(device, ast, noopt, 0)
        with STATE.lock:
            found = STATE.display_records.setdefault(key, found)
    return found


def compile_kernel(device: str, ast: Node, noopt: bool | None = None,
                   beam: int | None = None) -> Runner:
    """The Runner of one kernel (built once per process, engine/kernel_builder.py)."""
    noopt = bool(config.NOOPT.value) if noopt is None else noopt
    beam = int(config.BEAM.value) if beam is None else beam
    key = runner_key(device, ast, noopt, beam)
    return build_runners([(key, device, ast)], noopt, beam)[key]


def _item_device(item) -> str:
    return Device.canonicalize(item.slots[0].device)


def compile_schedule(sched: Schedule) -> list[Runner | None]:
    """Runners for every kernel of a schedule; kernels not yet built in this process are built
    together (engine/kernel_builder.py), as one progress task (engine/progress.py) when there
    are any."""
    noopt, beam = bool(config.NOOPT.value), int(config.BEAM.value)
    requests = {i: (runner_key(_item_device(item), item.ast, noopt, beam), _item_device(item),
                    item.ast) for i, item in enumerate(sched.items)
                if item.kind is ItemKind.KERNEL and ir.prod(max_shape(item.slots[0].shape)) > 0}
    with STATE.lock:   # a kernel over zero elements (above) is never compiled nor launched
        new = len({key for key, _, _ in requests.values() if key not in STATE.runners})
    if new:
        with progress.task("compile", f"{new} kernels", new) as compiling:
            built = build_runners(list(requests.values()), noopt, beam, compiling.advance)
    else:
        built = build_runners(list(requests.values()), noopt, beam)
    runners: list[Runner | None] = [None] * len(sched.items)
    for i, (key, _, _) in requests.items():
        runners[i] = built[key]
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
        if item.kind is ItemKind.COPY:
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
    widths) reuses that schedule over its own buffers (schedule/cache.py), in this process or,
    from the disk cache, in an earlier one (engine/schedule_store.py)."""
    options, caps = scheduler_options(), Device.caps()
    if not config.SCHEDULE_CACHE.value:
        return schedule(todo, options, realized=realized, caps=caps)
    structure, leaves, order = structure_key(todo, realized)
    devices = sorted({node.device for node in leaves + todo if node.device is not None})
    declared = [caps_for(caps, d) for d in devices]
    key = (structure, options,
           tuple((c.device, c.panel_width, c.pack_rows, c.relayout_lanes) for c in declared))
    known = STATE.known_schedule(key)
    on_disk = schedule_store.disk_key(key, declared) if known is None and \
        config.COMPILER_CACHE_ON else None   # a new process: what an earlier one scheduled
    if on_disk is not None:
        known = schedule_store.load(on_disk)
        if known is not None:
            STATE.remember_schedule(key, known)
            GlobalCounters.schedules_loaded += 1
    if known is False:  # a structure whose schedule cannot be templated (schedule/cache.py)
        return schedule(todo, options, realized=realized, caps=caps)
    if known is not None:
        GlobalCounters.schedule_cache_hits += on_disk is None
        cached, stand_ins, held, walk = known
        return reuse(cached, stand_ins, leaves, held, realized, walk, order)
    start = time.perf_counter()
    sched = schedule(todo, options, realized=realized, caps=caps)
    made = template(sched, leaves, realized, order)
    STATE.remember_schedule(key, False if made is None else made)
    if made is not None and on_disk is not None and \
            time.perf_counter() - start >= schedule_store.WORTH_S:
        schedule_store.store(on_disk, made)
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
        with collector.paused():  # planning makes no garbage cycles (engine/collector.py)
            results = _realize_todo(todo, realized, assigned)
    return [n if n.op is Op.BUFFER else results.get(n) or kept_alive[n] for n in nodes]


def _realize_todo(todo: list[Node], realized, assigned: dict) -> dict:
    """realize()'s work on the nodes left to compute (schedule, compile, run, record): each
    one's BUFFER node."""
    results = {}
    start = time.perf_counter()
    sched = cached_schedule(todo, realized)
    GlobalCounters.schedule_s += time.perf_counter() - start
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
        if item.kind is ItemKind.KERNEL and item.output.op is Op.ASSIGN:
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
    return results
