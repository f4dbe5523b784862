"""Calibration: the CPU's fastest matmul micro-kernel, measured once per CPU and kept on disk.

`calibrated(target, renderer, runtime, cache_dir)` -> the target with `micro_kernel` (rows,
vectors, reduce block) and `measured` filled in. The first call for a key (CPU model, target,
compiler, codegen version) times a few register tiles sized for the target's vector registers
(rows x vectors with accumulators + loaded vectors + one broadcast <= registers: 6x2 and 4x3 for
16 registers, 14x2 for 32) and the model's own plan, single-threaded on a matmul that overflows
L2, then the reduce-block depths that fit L1d for the best tile, in at most ~10 s with progress
shown; the winner is written to cache_dir/<key>.json and read from there afterwards. Where no
candidate can be timed (no compiler, a failing kernel) the model's target comes back, recorded
as such. `measure(candidate, run)` -> seconds is the clock (tests pass a fake one).
"""
from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from ..codegen.beam import CODEGEN_VERSION, _buffers
from ..codegen.heuristic import choose_opts
from ..codegen.heuristic_costs import block_sizes
from ..codegen.linearize import linearize
from ..codegen.partial_sums import plan_partial_sums
from ..codegen.plan import Action, KernelPlan
from ..dtype import dtypes
from ..ir import node as ir
from ..ir.ops import Op
from ..memo import Memo
from ..runtimes.compile_cache import secure_dir
from ..target.cpu_target import CPUTarget
from ..schedule.schedule import schedule
from . import progress

VERSION = 1
BUDGET_S = 10.0             # calibration stops timing new candidates after this
RUNS = 3                    # best of, per candidate (thread CPU time: immune to other processes)
TIE = 0.05                  # candidates this close to the fastest count as equally fast
ROWS_TARGET, COLUMNS, DEPTH = 240, 384, 2048  # the timed matmul: its right operand (3 MiB)
MAX_ROWS = 14               # overflows every L2 up to 2 MiB, so reduce blocks matter
_LOCK = threading.Lock()
_DONE = Memo("calibrated targets", 64)   # (key, cache dir) -> the calibrated CPUTarget


def candidate_tiles(target: CPUTarget) -> list[tuple[int, int]]:
    """(rows, vectors) register tiles, one per vector count 1..4: the most rows whose
    accumulators (rows x vectors), loaded vectors and one broadcast fit the vector registers."""
    out = []
    for vectors in (2, 3, 1, 4):
        rows = min(MAX_ROWS, (target.vector_registers - vectors - 1) // vectors)
        if rows >= 2:
            out.append((rows, vectors))
    return out


def calibration_key(target: CPUTarget, compiler: str) -> str:
    text = f"{VERSION}\n{CODEGEN_VERSION}\n{target.model}\n{target.key}\n{compiler}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def matmul_plan(rows: int) -> KernelPlan:
    """The plain plan of out(m, n) = SUM_k x(m, k) * w(k, n), row-major operands."""
    m = rows * -(-ROWS_TARGET // rows)
    x = ir.buffer(object(), (m, DEPTH), dtypes.float32, "CPU")
    w = ir.buffer(object(), (DEPTH, COLUMNS), dtypes.float32, "CPU")
    shape = (m, COLUMNS, DEPTH)
    product = ir.alu(Op.MUL, ir.expand(ir.reshape(x, (m, 1, DEPTH)), shape),
                     ir.expand(ir.reshape(ir.permute(w, (1, 0)), (1, COLUMNS, DEPTH)), shape))
    out = ir.reshape(ir.reduce(Op.REDUCE_SUM, product, (2,)), (m, COLUMNS))
    (kernel,) = schedule([out]).kernels
    return KernelPlan.from_ast(kernel.ast)


def thread_seconds(candidate, run: Callable[[], None]) -> float:
    """Best of RUNS runs' thread CPU time (after one untimed warm-up run)."""
    run()
    best = float("inf")
    for _ in range(RUNS):
        start = time.thread_time()
        run()
        best = min(best, time.thread_time() - start)
    return best


def calibrated(target: CPUTarget, renderer, runtime, cache_dir: Path | None,
               measure: Callable = thread_seconds, budget_s: float = BUDGET_S) -> CPUTarget:
    """`target` planned from its measurements (cached per key in memory and in cache_dir)."""
    try:
        compiler = runtime.version()
    except Exception:  # noqa: BLE001 - no compiler: nothing can be timed
        return dataclasses.replace(target, measured="not timed: no C compiler")
    key = calibration_key(target, compiler)
    with _LOCK:
        if (key, cache_dir) not in _DONE:
            record = _load(cache_dir, key)
            if record is None:
                record = _calibrate(target, renderer, runtime, measure, budget_s)
                _store(cache_dir, key, record)
            _DONE[(key, cache_dir)] = dataclasses.replace(
                target, micro_kernel=tuple(record["micro_kernel"]), measured=record["summary"])
        return _DONE[(key, cache_dir)]


def calibration_note(target: CPUTarget) -> str:
    """What the calibration measured for `target`, for the inspector: the micro-kernel the
    heuristic plans matmul tiles from and how it was chosen, read from the target (the
    record calibrated() loaded or stored; nothing is timed here). "" when not calibrated
    (TINYLAB_CALIBRATE=0, or a target that was never calibrated)."""
    if not target.measured:
        return ""
    chosen = _label(target.micro_kernel, target) if target.micro_kernel else "the model's tile"
    return (f"micro-kernel {chosen} for {target.name}; measured on first use on this CPU "
            f"({target.measured}) and kept in the kernel cache per CPU, target and compiler")


def forget() -> None:
    """Drop the in-memory results (tests; a new cache directory is its own key anyway)."""
    with _LOCK:
        _DONE.clear()


def _load(cache_dir: Path | None, key: str) -> dict | None:
    path = None if cache_dir is None else cache_dir / f"{key}.json"
    if path is None or not path.exists():
        return None
    try:
        record = json.loads(path.read_text())
        return record if isinstance(record.get("micro_kernel"), list) else None
    except (OSError, ValueError, AttributeError):
        return None


def _store(cache_dir: Path | None, key: str, record: dict) -> None:
    if cache_dir is None:
        return
    folder = secure_dir(cache_dir)
    tmp = folder / f"{key}.tmp{time.time_ns()}"
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(folder / f"{key}.json")


def _compiled(plan: KernelPlan, renderer, runtime) -> tuple:
    """(the linear program, its shared object): what a compiler thread does for a candidate."""
    linear = linearize(plan_partial_sums(plan), plan.name)
    kernel = renderer.render_kernel(linear)
    library, _ = runtime.compile_kernel(kernel.source, kernel.facts)
    return linear, library


def _runner(plan: KernelPlan, renderer, runtime, pool=None) -> Callable[[], None]:
    """A closure that runs the plan on random inputs, compiled on its first call (by then
    already compiling on `pool`'s threads when one is given: the candidates of one round
    compile together, across the cores, before any is timed)."""
    state: dict = {}
    future = None if pool is None else pool.submit(contextvars.copy_context().run, _compiled,
                                                   plan, renderer, runtime)

    def run() -> None:
        if not state:
            linear, library = future.result() if future else _compiled(plan, renderer, runtime)
            device = _Device(runtime)
            state["fn"] = runtime.load(library, plan.name)
            state["handles"] = [b.handle for b in _buffers(linear, device)]
        runtime.launch(state["fn"], None, *state["handles"])  # the CPU: loops run in the C
    return run


@dataclasses.dataclass
class _Device:  # what beam._buffers needs of a device
    runtime: object
    name: str = "CPU"

    @property
    def allocator(self):
        return self.runtime.allocator


def _plan(target: CPUTarget, micro_kernel: tuple, actions) -> KernelPlan:
    """The heuristic's single-threaded plan of the timed matmul with this micro-kernel."""
    planned = dataclasses.replace(target, micro_kernel=micro_kernel, cores=1)
    plan = matmul_plan(micro_kernel[0] if micro_kernel else ROWS_TARGET)
    return plan.apply_all(choose_opts(plan, [a for a in actions if a != Action.THREAD], planned))


def _calibrate(target: CPUTarget, renderer, runtime, measure, budget_s: float) -> dict:
    actions = renderer.supported_actions
    tiles = [(rows, vectors, 0) for rows, vectors in candidate_tiles(target)]
    depths = block_sizes(target)
    start, timed = time.perf_counter(), {}
    with progress.task("calibrate", target.model or target.name, len(tiles) + 1 + len(depths)) \
            as shown, ThreadPoolExecutor(max(1, min(target.cores, 4))) as pool:
        for candidate, run in _runners([()] + tiles, target, actions, renderer, runtime, pool):
            _time(candidate, run, measure, timed)
            shown.advance()
            if time.perf_counter() - start > budget_s:
                break
        best = _best(_flops(timed)) if timed else None
        if best:  # a tile won (not the model's plan): its reduce-block depth
            blocks = [best[:2] + (depth,) for depth in depths]
            for candidate, run in _runners(blocks, target, actions, renderer, runtime, pool):
                if time.perf_counter() - start > budget_s:
                    break
                _time(candidate, run, measure, timed)
                shown.advance()
        pool.shutdown(wait=False, cancel_futures=True)  # candidates the budget left untimed
    return _record(target, timed, time.perf_counter() - start)


def _runners(candidates: list, target, actions, renderer, runtime, pool) -> list:
    """(candidate, its runner or None where it cannot be planned), every one already
    compiling on the pool."""
    out = []
    for candidate in candidates:
        try:
            out.append((candidate, _runner(_plan(target, candidate, actions), renderer, runtime,
                                           pool)))
        except Exception:  # noqa: BLE001 - a candidate that cannot be planned is not chosen
            out.append((candidate, None))
    return out


def _time(candidate, run, measure, timed: dict) -> None:
    if run is None:
        return
    try:
        seconds = measure(candidate, run)
    except Exception:  # noqa: BLE001 - a candidate that cannot run is not chosen
        return
    if 0 < seconds < float("inf"):
        timed[candidate] = seconds


def _record(target: CPUTarget, timed: dict, seconds: float) -> dict:
    if not timed:
        return {"micro_kernel": [], "timed": {}, "summary": "not timed (no candidate ran); "
                                                            "the model plans"}
    flops = _flops(timed)
    best = _best(flops)
    label = _label(best, target)
    summary = (f"micro-kernel {label} at {flops[best] / 1e9:.1f} GFLOPS on 1 core "
               f"(model {flops.get((), 0) / 1e9:.1f}), {len(timed)} candidates in {seconds:.1f} s")
    return {"micro_kernel": list(best), "summary": summary,
            "timed": {_label(c, target): round(f / 1e9, 2) for c, f in flops.items()}}


def _flops(timed: dict) -> dict:
    """Candidate -> FLOP/s (each candidate's matmul has a row count its tile divides)."""
    return {c: 2 * matmul_plan(c[0] if c else ROWS_TARGET).shape[0] * COLUMNS * DEPTH / s
            for c, s in timed.items()}


def _best(flops: dict) -> tuple:
    """The fastest candidate, except that among those within TIE of it the tile with the most
    accumulators wins (a difference that small is noise on a busy machine; more accumulators
    hide more FMA latency on the real kernels), then the one timed first (tiles in
    candidate_tiles' order, a tile before its reduce blocks, deeper blocks first): two
    calibrations of one CPU chose block 256 in one run and 128 in the other at 56.2 and 54.9
    GFLOPS, so the kernels differed between two cold caches. The model's plan must win
    outright."""
    fastest = max(flops.values())
    order = {c: i for i, c in enumerate(flops)}  # the order they were timed in
    close = [c for c, f in flops.items() if f >= fastest * (1 - TIE) and c]
    if not close:
        return max(flops, key=flops.get)
    return max(close, key=lambda c: (c[0] * c[1], -order[c]))


def _label(candidate: tuple, target: CPUTarget) -> str:
    if not candidate:
        return "model"
    rows, vectors, depth = candidate
    text = f"{rows}x{vectors * target.lanes_of(4)}"
    return text + (f" block {depth}" if depth else "")
