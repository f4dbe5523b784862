"""BEAM search: find optimization actions by timing candidates on the device.

`beam_search(plan, device, width, cache_dir, target)` starts from the plain plan and the
heuristic's, tries every single action on each of the `width` fastest plans so far, compiles and
times each candidate on random inputs, keeps the fastest `width`, and repeats until a round brings
no gain. The winner is checked against the plain plan's output, replaces the heuristic's plan only
when faster beyond the noise of repeated runs (faster_beyond_noise), and is cached on disk by
kernel AST, device and CPU target, so later processes reuse it (ignore_cache=True, from
IGNORE_BEAM_CACHE=1, searches again).
`device` is the engine's DeviceSpec (a renderer and a runtime), passed in so this layer imports
neither; `target` (a CPUTarget, or None off the CPU) bounds the vector widths and gives the
cores. Called by the engine when BEAM=n (and TUNE=1: `tune`).
"""
from __future__ import annotations

import functools
import hashlib
import json
import time
from pathlib import Path

import numpy as np

from ..ir.graph_printer import print_graph
from ..runtimes.buffer import Buffer
from ..runtimes.compile_cache import secure_dir
from .linearize import linearize
from .partial_sums import plan_partial_sums
from .plan import ACTIONS, Action, KernelPlan, Opt, OptError

AMOUNTS = (2, 3, 4, 8, 16)
BLOCK_AMOUNTS = (32, 64, 128, 256)  # cache blocks are bigger than register tiles
MAX_ROUNDS = 5
RUNS = 3
CONFIRM_RUNS = 7    # runs of the final pair (a winner against the default's plan)
MIN_MARGIN = 0.03   # a winner must be this much faster than the default, or its runs' spread
CONFIRM_MAX_S = 0.5  # a kernel slower than this is confirmed on fewer runs


def faster_beyond_noise(default: list[float], challenger: list[float],
                        min_margin: float = MIN_MARGIN) -> bool:
    """Whether `challenger`'s runs are faster than `default`'s by more than the noise: its median
    below the default's by more than MIN_MARGIN and by more than either's relative spread
    ((slowest - fastest) / median over the runs, a machine's noise as these runs saw it)."""
    if not default or not challenger or min(challenger) == float("inf"):
        return False
    base, new = float(np.median(default)), float(np.median(challenger))
    if base == float("inf"):
        return True
    spread = max((max(runs) - min(runs)) / max(float(np.median(runs)), 1e-12)
                 for runs in (default, challenger))
    return new < base * (1 - max(min_margin, spread))


def keep_default_unless_faster(timer, default: "KernelPlan", winner: "KernelPlan") -> "KernelPlan":
    """The winner of a search if it is faster than the default's plan beyond the noise (timed
    again, CONFIRM_RUNS each, fewer for slow kernels), else the default's plan."""
    if tuple(winner.opts) == tuple(default.opts):
        return default
    runs = CONFIRM_RUNS if timer.time(default) < CONFIRM_MAX_S else RUNS
    base, new = timer.samples(default, runs), timer.samples(winner, runs)
    return winner if faster_beyond_noise(base, new) else default


def _candidates(plan: KernelPlan, actions, target) -> list[KernelPlan]:
    threads = target.cores if target is not None else 1
    lanes = target.lanes_of(4) if target is not None else max(AMOUNTS)
    out = []
    for axis_index in range(len(plan.axes)):
        for action in actions:
            if action == Action.THREAD:
                amounts = (threads,) if threads > 1 else ()
            elif action == Action.VECTORIZE:  # no wider than the target's vectors
                amounts = tuple(a for a in AMOUNTS if a <= lanes)
            elif action == Action.BLOCK:
                amounts = BLOCK_AMOUNTS
            elif action == Action.SWAP:
                amounts = tuple(range(len(plan.axes)))
            else:
                amounts = AMOUNTS
            for amount in amounts:
                try:
                    out.append(plan.apply(Opt(action, axis_index, amount)))
                except OptError:
                    continue
    return out


def _buffers(program, device) -> list[Buffer]:
    rng = np.random.default_rng(0)
    buffers = []
    for param in program.params:
        buf = Buffer(device.name, max(param.size, 1), param.dtype, device.allocator)
        if param.dtype.is_float:
            data = rng.standard_normal(buf.size).astype(param.dtype.np)
        elif param.dtype.is_bool:
            data = rng.random(buf.size) < 0.5
        else:
            data = rng.integers(0, 4, buf.size).astype(param.dtype.np)
        buffers.append(buf.copyin(data))
    return buffers


class _Timer:
    """Compiles and times plans of one kernel on shared random buffers."""

    def __init__(self, device, base: KernelPlan, cpu_time: bool = False, program=None):
        self.device, self.cpu_time = device, cpu_time
        self.buffers = _buffers(program or linearize(base), device)
        self.seen: dict[tuple, float] = {}
        self.loaded: dict[tuple, object] = {}  # compiled once per plan, for time() and output()

    def program(self, plan: KernelPlan):
        """The plan's kernel, launched as realize's Runner launches it: through the runtime's
        `launch` with the launch dimensions of its build facts."""
        key = tuple(plan.opts)
        if key not in self.loaded:
            name, renderer, runtime = plan.name, self.device.renderer, self.device.runtime
            finished = plan_partial_sums(plan)  # the plan the record would linearize
            kernel = renderer.render_kernel(linearize(finished, name,
                                                      fold_launch=renderer.fold_launch))
            library, _ = runtime.compile_kernel(kernel.source, kernel.facts)
            self.loaded[key] = functools.partial(runtime.launch, runtime.load(library, name),
                                                 kernel.facts.launch)
        return self.loaded[key]

    def time(self, plan: KernelPlan, give_up: float = float("inf")) -> float:
        """Best of a few runs; a first run slower than `give_up` seconds (or than 0.2 s) is
        not repeated, so a hopeless candidate of a big kernel costs one run."""
        key = tuple(plan.opts)
        if key not in self.seen:
            try:
                fn = self.program(plan)
                handles = [b.handle for b in self.buffers]
                first = self._run(fn, handles)  # includes first-touch costs
                runs = 0 if first > give_up else 1 if first > 0.2 else RUNS
                self.seen[key] = min([first] + [self._run(fn, handles) for _ in range(runs)])
            except Exception:  # noqa: BLE001 - a candidate that fails is just not chosen
                self.seen[key] = float("inf")
        return self.seen[key]

    def samples(self, plan: KernelPlan, runs: int = CONFIRM_RUNS) -> list[float]:
        """`runs` more timed runs of the plan (compiled and warm by now): what a final
        comparison against the default's plan rests on."""
        try:
            fn, handles = self.program(plan), [b.handle for b in self.buffers]
            self._run(fn, handles)
            return [self._run(fn, handles) for _ in range(runs)]
        except Exception:  # noqa: BLE001 - a plan that fails never wins
            return [float("inf")]

    def _run(self, fn, handles) -> float:
        """Seconds one run takes: the runtime's clock, or this thread's CPU time for a
        single-threaded CPU kernel (immune to other processes taking turns on the cores)."""
        if not self.cpu_time:
            return fn(*handles)
        start = time.thread_time()
        fn(*handles)
        return time.thread_time() - start

    def output(self, plan: KernelPlan) -> np.ndarray:
        self.buffers[0].copyin(np.zeros(self.buffers[0].size, self.buffers[0].dtype.np))
        self.program(plan)(*[b.handle for b in self.buffers])
        return self.buffers[0].numpy()


def _codegen_version() -> str:
    """A digest of the files that decide what a winner's actions mean and which candidates
    exist: a winner found by older code is searched again, not reused."""
    here = Path(__file__).parent
    digest = hashlib.sha256()
    for name in ("plan.py", "heuristic.py", "heuristic_costs.py", "heuristic_tile.py", "beam.py"):
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]


CODEGEN_VERSION = _codegen_version()


def _key(plan: KernelPlan, device, width: int, target) -> str:
    where = target.key if target is not None else "-"
    text = f"{CODEGEN_VERSION}\n{device.name}\n{width}\n{where}\n{print_graph(plan.ast)}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _load(cache: Path | None, key: str):
    if cache is None or not (cache / f"{key}.json").exists():
        return None
    try:
        return [Opt(a, x, n) for a, x, n in json.loads((cache / f"{key}.json").read_text())]
    except (ValueError, TypeError):
        return None


def _store(cache: Path | None, key: str, opts: list[Opt]) -> None:
    if cache is None:
        return
    tmp = cache / f"{key}.tmp{time.time_ns()}"
    tmp.write_text(json.dumps([[o.action, o.axis, o.amount] for o in opts]))
    tmp.replace(cache / f"{key}.json")


def beam_search(plan: KernelPlan, device, width: int, cache_dir: Path | None = None,
                target=None, rounds: int = MAX_ROUNDS, progress=None,
                ignore_cache: bool = False, default: KernelPlan | None = None,
                timer=None) -> KernelPlan:
    """`progress(done, total)`, if given, hears of each candidate timed (the total grows by
    each round's candidates). ignore_cache: search even when a winner is cached
    (IGNORE_BEAM_CACHE); it is rewritten. `default` (the heuristic's plan) starts in the beam
    beside the plain plan, and the search's winner replaces it only when faster beyond the
    noise (keep_default_unless_faster): BEAM is never slower than the default. `timer`: a
    _Timer-like clock (tests)."""
    cache = secure_dir(cache_dir) if cache_dir is not None else None
    key = _key(plan, device, width, target)
    cached = None if ignore_cache else _load(cache, key)
    if cached is not None:
        try:
            return plan.apply_all(cached)
        except OptError:
            pass  # an old cache entry from a different plan shape: search again
    actions = [a for a in device.renderer.supported_actions if a in ACTIONS]
    timer = timer or _Timer(device, plan)
    default = plan if default is None else default
    beam = sorted({tuple(p.opts): (timer.time(p), p) for p in (plan, default)}.values(),
                  key=lambda c: c[0])
    timed = 0
    for _ in range(rounds):
        candidates = [child for _, parent in beam
                      for child in _candidates(parent, actions, target)]
        total, children = timed + len(candidates), []
        for child in candidates:
            children.append((timer.time(child), child))
            timed += 1
            if progress is not None:
                progress(timed, total)
        best_now = min(t for t, _ in beam)
        children = sorted([c for c in children if c[0] < float("inf")], key=lambda c: c[0])
        if not children or children[0][0] >= best_now * 0.98:
            break
        beam = sorted(beam + children, key=lambda c: c[0])[:width]
    winner = min(beam, key=lambda c: c[0])[1]
    if winner is not plan and not np.allclose(timer.output(winner), timer.output(plan),
                                              rtol=1e-4, atol=1e-4, equal_nan=True):
        winner = default  # never trade correctness for speed
    winner = keep_default_unless_faster(timer, default, winner)
    _store(cache, key, winner.opts)
    return winner


TUNE_MAX_BYTES = 1 << 28  # kernels whose buffers are bigger are not timed (random inputs cost)


def tune(plan: KernelPlan, device, target, cache_dir: Path | None = None,
         progress=None, ignore_cache: bool = False, timer=None) -> KernelPlan:
    """The heuristic's candidate plans for `target` (one per vector axis and width, each with its
    register tile), timed single-threaded on the device; the fastest wins, then gets threads. A
    cheap, narrow search for the big kernels, cached like BEAM's winners (ignore_cache as there).
    The model's favourite (the default plan) is the first candidate and stays unless another
    is faster beyond the noise (keep_default_unless_faster): TUNE is never slower than the
    default. `progress(done, total)`, if given, hears of each candidate timed; `timer`: a
    _Timer-like clock (tests)."""
    from .heuristic import candidates, choose_opts, thread
    cache = secure_dir(cache_dir) if cache_dir is not None else None
    key = "tune-" + _key(plan, device, 0, target)
    cached = None if ignore_cache else _load(cache, key)
    if cached is not None:
        try:
            return plan.apply_all(cached)
        except OptError:
            pass
    actions = device.renderer.supported_actions
    program = linearize(plan)
    if sum(max(p.size, 1) * p.dtype.itemsize for p in program.params) > TUNE_MAX_BYTES:
        return plan.apply_all(choose_opts(plan, actions, target))
    timer = timer or _Timer(device, plan, cpu_time=True, program=program)  # no THREAD yet
    options = candidates(plan, actions, target)
    timed: list = []
    for index, option in enumerate(options):
        give_up = 2 * min(timed)[0] if timed else float("inf")
        timed.append((timer.time(option, give_up), index, option))
        if progress is not None:
            progress(len(timed), len(options))
    best = min(timed, key=lambda t: t[:2])[2]
    if best is not options[0] and not np.allclose(timer.output(best), timer.output(plan),
                                                  rtol=1e-4, atol=1e-4, equal_nan=True):
        best = options[0]
    best = keep_default_unless_faster(timer, options[0], best)
    if Action.THREAD in actions:
        best = thread(best, target, Action.SWAP in actions)
    _store(cache, key, best.opts)
    return best
