# %% [markdown]
# # 07b · Making it fast: search, JIT and the roofline
#
# Notebook 07 chose optimization actions with a readable heuristic. Here BEAM search chooses them
# by timing candidates, **TinyJit** removes the Python overhead of a whole step, and a roofline
# puts measured kernels against what the machine can do, with a roof for each memory level.
# After it you can tell a cached search from a real one, predict which calls of a jitted
# function run its body, and read a kernel's share of the roof of the level its data lives in.
# (Names and loop IR: the [reading guide](READING.md).)
#
# Timings depend on the machine and its load: every timing here is the median of interleaved
# rounds with its quartiles (`tinylab/engine/timing.py`); cells that print them are marked for
# nbval not to compare and say which CPU they were measured on; everything else is exact.

# %%
# %load_ext tinylab
import re

import numpy as np
from exercises import check, claim
from machine import measured_on
from tinylab import Context, Tensor, TinyJit, config, trace
from tinylab.engine import progress
from tinylab.engine.realize import choose_plan
from tinylab.engine.timing import interleaved, verdict

config.CALIBRATE.set_default(0)   # the plans here are the model's, the same on every machine (07 shows yours)
rng = np.random.default_rng(0)
# the CPU every timing below was measured on (lscpu), its load, and the target the kernels were built for
MEASURED_ON = measured_on()

# %% [markdown]
# ## BEAM search
#
# `BEAM=n` replaces the heuristic's choice with a search. It starts from two plans, the plain
# one and the heuristic's, tries every single action on the `n` fastest plans so far (`BEAM=1`
# is a greedy search), compiles and times each candidate on the device, keeps the fastest and
# repeats while that helps. Its winner replaces the heuristic's plan only when it is faster
# beyond the noise of repeated runs, so BEAM never picks a plan slower than the heuristic's; it
# is checked against the plain plan and cached on disk, so the search runs once per kernel. It
# depends on timings, so its choice can differ between runs and machines (nbval does not compare
# this cell). A small kernel keeps the search short. The cell runs it twice: once with
# `IGNORE_BEAM_CACHE=1`, a real search, and once more on new inputs of the same shapes, where the
# winner comes from the cache. Each run's progress events say how many candidates it timed:

# %% tags=["nbval-ignore-output"]
def small_matmul(settings: dict):
    """The kernel BEAM chose for a 16 x 16 matmul, and how many candidates it timed."""
    a, b = (Tensor(rng.standard_normal((16, 16)).astype(np.float32)) for _ in "ab")
    timed = []

    def on_event(event):
        if event.kind == "beam" and event.finished:
            timed.append(event.done)
    with progress.listening(on_event), Context(**settings), trace() as recorded:
        (a @ b).realize()
    return recorded.kernels[0], sum(timed)


found, searched = small_matmul({"BEAM": 1, "IGNORE_BEAM_CACHE": 1})
again, cached = small_matmul({"BEAM": 1})
heuristic = choose_plan("CPU", found.ast, noopt=False, beam=0)
print("measured on", MEASURED_ON)
print(f"BEAM=1 searched:  {found.name} = {', '.join(str(o) for o in found.opts) or 'no actions'}"
      f" ({searched} candidates compiled and timed)")
print(f"BEAM=1 again:     {again.name} ({cached} candidates timed: the cached winner)")
print(f"the heuristic:    {heuristic.name} = {', '.join(str(o) for o in heuristic.opts)}")
claim("the search timed candidates, the second run none, and both ran the same plan",
      searched > 0 and cached == 0 and found.opts == again.opts)

# %% [markdown]
# That the heuristic's plan starts in the beam can be checked without a clock: give the search a
# stand-in clock on which the heuristic's plan takes 1 s and every other plan 2 s. Started from
# the plain plan alone, one round of single actions could never reach the heuristic's three
# actions; seeded with it, the search keeps it.

# %%
from tinylab import Device  # noqa: E402
from tinylab.codegen.beam import beam_search  # noqa: E402
from tinylab.codegen.plan import KernelPlan  # noqa: E402


class FavouringClock:
    """A stand-in for the search's clock: `favourite` takes 1 s, every other plan 2 s."""

    def __init__(self, favourite):
        self.favourite = favourite.opts

    def time(self, plan, give_up: float = float("inf")) -> float:
        return 1.0 if plan.opts == self.favourite else 2.0

    def output(self, plan):
        return np.zeros(1)


plain_plan = KernelPlan.from_ast(found.ast)
seeded = beam_search(plain_plan, Device["CPU"], 1, None, Device["CPU"].target, rounds=1,
                     default=heuristic, timer=FavouringClock(heuristic))
print("the search's winner:", seeded.name, "=", ", ".join(str(o) for o in seeded.opts))
claim("the search starts from the heuristic's plan too (3 actions, one round of single actions)",
      seeded.opts == heuristic.opts and len(heuristic.opts) == 3)

# %% [markdown]
# ## TinyJit: replaying a step without Python
#
# A training step builds a graph, schedules it and launches kernels — most of that is Python.
# `TinyJit` runs the function normally on call 1, captures the kernels it launches on call 2,
# and on later calls replays them with the new inputs' buffers, never entering the function
# body. A Python side effect shows which calls ran the body:

# %%
w1 = Tensor(rng.standard_normal((64, 64)).astype(np.float32) / 8)
w2 = Tensor(rng.standard_normal((64, 10)).astype(np.float32) / 8)
body_runs = []


@TinyJit
def forward(x: Tensor) -> Tensor:
    body_runs.append(len(body_runs) + 1)
    return ((x @ w1).relu() @ w2).softmax(axis=1)


# %% [markdown]
# **Predict.** `forward` is called 6 times below. On which calls does its body run (the list
# `body_runs` collects)? Write a list such as `[1, 2, 3]`.

# %%
answer_body_runs = ...

# %%
inputs = [rng.standard_normal((32, 64)).astype(np.float32) for _ in range(6)]
outputs = [forward(Tensor(x)).numpy().copy() for x in inputs]
check("calls that ran the body", answer_body_runs, body_runs,
      "call 1 runs it normally, call 2 runs it while capturing the kernels, calls 3-6 replay",
      hint="which calls does TinyJit need the body for: to run it, to watch which kernels it "
           "launches, and after that?")
print("kernels replayed per call:", forward.kernel_count)
plain_outputs = [((Tensor(x) @ w1).relu() @ w2).softmax(axis=1).numpy() for x in inputs]
print("replays match the plain computation:",
      all(np.allclose(o, p, atol=1e-6) for o, p in zip(outputs, plain_outputs)))
claim("the replays compute the same numbers", all(np.allclose(o, p, atol=1e-6)
                                                  for o, p in zip(outputs, plain_outputs)))

# %% [markdown]
# What replay saves, timed: the same call with and without TinyJit, a new input buffer each
# time as in training, in 15 interleaved rounds (each time the median, with its quartiles):

# %% tags=["nbval-ignore-output"]
calls = iter(range(10 ** 6))


def one_call(fn):
    def call() -> None:   # timed by interleaved (wall clock)
        fn(Tensor(inputs[next(calls) % len(inputs)])).realize()
    return call


per_call = interleaved({"without TinyJit": one_call(lambda x: ((x @ w1).relu() @ w2).softmax(1)),
                        "with TinyJit": one_call(forward)}, rounds=15, best_of=3)
saving = per_call.speedup("without TinyJit", "with TinyJit")
print("measured on", MEASURED_ON)
print(f"without TinyJit {per_call['without TinyJit'].text(1e6, ' µs', 1)} per call "
      "(schedule + launch each time)")
print(f"with TinyJit    {per_call['with TinyJit'].text(1e6, ' µs', 1)} per call (replay)")
print(f"replay is {saving.text(1.0, 'x', 1)} as fast: {verdict(saving)} 1")

# %% [markdown]
# ## A roofline of the measured kernels
#
# A kernel is limited by memory (bytes it must move) or by arithmetic (FLOPs it must do). Its
# arithmetic intensity — FLOPs per byte — says which: below the ridge point memory bandwidth
# bounds it, above it compute does. Which bandwidth depends on where its data lives: a working
# set that fits L1 streams far faster than one that must come from DRAM. The intensities are
# exact; the measurements are not.

# %%
M = 1 << 20
host = {"vector": rng.standard_normal(M).astype(np.float32),
        "matrix": rng.standard_normal((256, 256)).astype(np.float32)}
WORKLOADS = {   # title -> (input names, computation); inputs are fresh buffers on every run
    "x + y (1M)": (("vector", "vector"), lambda x, y: x + y),
    "x.exp() * 2 (1M)": (("vector",), lambda x: x.exp() * 2),
    "x.sum() (1M)": (("vector",), lambda x: x.sum()),
    "matmul 256": (("matrix", "matrix"), lambda x, y: x @ y),
    "matmul 256 + relu": (("matrix", "matrix"), lambda x, y: (x @ y).relu()),
}


def run_workload(title: str):
    names, fn = WORKLOADS[title]
    with trace() as one:
        fn(*[Tensor(host[name]) for name in names]).realize()
    (k,) = one.kernels
    return k


measured = {title: run_workload(title) for title in WORKLOADS}
for title, k in measured.items():
    print(f"{title:<18} {k.name:<22} {k.flops:>10} FLOPs {k.bytes_moved:>9} bytes "
          f"intensity {k.flops / k.bytes_moved:6.2f} FLOP/B")
matmul, with_relu = measured["matmul 256"], measured["matmul 256 + relu"]
claim("the matmul's FLOPs are the textbook 2·256³; the relu adds 4·256²",
      (matmul.flops, with_relu.flops - matmul.flops), (2 * 256 ** 3, 4 * 256 ** 2))
claim("the vector kernels move 12, 8 and 4 MiB; the matmuls 768 KiB",
      [k.bytes_moved >> 10 for k in measured.values()], [12288, 8192, 4096, 768, 768])
claim("both matmuls: the same name, one 256-deep reduce loop, no BLOCK",
      matmul.name == with_relu.name and "_256_" in matmul.name
      and not any(o.action.value == "BLOCK" for o in matmul.opts + with_relu.opts))

# %% [markdown]
# Two things to read in that table. The plain matmul's FLOPs are the textbook `2·256³ =
# 33,554,432`, the relu one's `4·256² = 262,144` more: `kernel.flops` counts the ALU instructions
# the generated program runs, times their loop trips, and the relu is a compare, a NaN test and
# two selects per output. And the two kernels have the same name and loops: one 256-deep reduce
# loop (`…_256_…`). B is 256 KiB, which fits AVX2's cache budget whole, so nothing is blocked.
# Bigger operands are: at 1024 the heuristic narrows the columns one block covers (notebook 07),
# and a deeper reduce is split into reduce **blocks** that each add a cache-sized part of the sum
# into the output buffer — only right when the output *is* the sum: `relu(p1) + relu(p2) ≠
# relu(p1 + p2)`, so a relu after the reduce keeps its reduce whole.
#
# ### The machine's roofs, one per memory level
#
# The roofs are the device's (`tinylab/engine/peak.py`), the same figures the inspector and
# `python -m tinylab.device` show: **compute** is float32 lanes × 2 (an FMA is a multiply and an
# add) × FMA pipes per core × cores × clock (the OS's maximum clock, or one measured with a small
# FMA kernel), and never below numpy's matmul timed in the same process. **Bandwidth** has a roof
# for **L1, L2, L3 and DRAM**: each is measured on every core with a working set of half that
# level (DRAM: at least four times the last-level cache), by a generated kernel that streams its
# working set again and again within one launch — 256 MiB per launch, so the launch's own cost
# is under 1% of the time — as a copy, an add and a read-only sum, the best of them (and of
# `np.copyto` where one call moves megabytes). Each is the best ever measured on this CPU, so a
# busy moment never lowers it. A kernel is compared with the roof of the smallest level its
# buffers fit in; a kernel measured above its level's roof raises that roof, and the model says
# which kernel, how big its working set is and why it belongs to that level.

# %% tags=["nbval-ignore-output"]
from tinylab.engine.peak import device_peak  # noqa: E402

cpu_peak = device_peak("CPU")
print("measured on", MEASURED_ON)
print(f"compute {cpu_peak.flops_per_s / 1e9:.0f} GFLOPS: {cpu_peak.compute_from}")
for row in cpu_peak.levels:
    fits = f" (working sets up to {row['fits_bytes'] >> 10} KiB)" if row["fits_bytes"] else ""
    print(f"{row['level']:<4} {row['bytes_per_s'] / 1e9:7.1f} GB/s{fits}: {row['how']}")


def working_set(row) -> int:   # from the roof's own account of how it was measured
    size, unit = re.search(r"over an? (\d+) (KiB|MiB) working set", row["how"]).groups()
    return int(size) << (10 if unit == "KiB" else 20)


timed_roofs = [row for row in cpu_peak.levels if not row["how"].startswith("raised by a kernel")]
claim("each roof streams >= 256 MiB per launch over half its level (DRAM: 4x the last level)",
      all(">= 256 MiB" in row["how"] and (2 * working_set(row) == row["fits_bytes"] if row["fits_bytes"]
          else working_set(row) >= 4 * cpu_peak.levels[-2]["fits_bytes"]) for row in timed_roofs))
claim("a roof for L1, L2, L3 and DRAM, each at least the next level's",
      [row["level"] for row in cpu_peak.levels] == ["L1", "L2", "L3", "DRAM"] and
      all(a["bytes_per_s"] >= b["bytes_per_s"] for a, b in zip(cpu_peak.levels,
                                                              cpu_peak.levels[1:])))

# %% [markdown]
# Now each workload, run 9 times in interleaved rounds, through the inspector's model
# (`build_model`): it gives every run its roof level, its % of peak — the share it reached of
# the roof at its intensity, min(compute, intensity × its level's bandwidth) — and whether it
# is memory- or compute-bound. Each line shows the median with its quartiles:

# %% tags=["nbval-ignore-output"]
from tinylab.engine.timing import Spread  # noqa: E402
from tinylab.inspection import build_model  # noqa: E402

ROUNDS = 9
with trace() as all_workloads:
    for number in range(ROUNDS):   # forward, then backward order in turn
        for title in (list(WORKLOADS) if number % 2 == 0 else list(WORKLOADS)[::-1]):
            run_workload(title)
roofline_model = build_model(all_workloads)
runs = {title: [] for title in WORKLOADS}
order = [t for n in range(ROUNDS) for t in (list(WORKLOADS) if n % 2 == 0 else list(WORKLOADS)[::-1])]
for title, kernel in zip(order, roofline_model["kernels"]):
    runs[title].append(kernel)
print("measured on", MEASURED_ON)
for title, kernels in runs.items():
    gflops = Spread(tuple(k["flops"] / k["run_s"] / 1e9 for k in kernels))
    share = Spread(tuple(k["percent_of_peak"] for k in kernels))
    print(f"{title:<18} {kernels[0]['roof_level']:<4} roof, {kernels[0]['bound']:<7}-bound: "
          f"{gflops.text(1.0, ' GFLOPS', 1)}, {share.text(1.0, '% of peak', 1)}")
for note in roofline_model["peaks"]["CPU"]["raised"]:
    print(note)
claim("no run sits above the roof of its level",
      all(k["percent_of_peak"] <= 100.0 for k in roofline_model["kernels"]))
claim("the elementwise kernels and the sum are memory-bound, the matmuls compute-bound",
      [runs[t][0]["bound"] for t in WORKLOADS], ["memory"] * 3 + ["compute"] * 2)

# %% [markdown]
# Elementwise kernels and plain reductions do little arithmetic per byte, so the best they can
# do is stream memory; a matmul reuses each loaded value many times (its intensity grows with
# N), which is what register tiles and vectors exploit. A 1M-element vector is 4 MiB, so the
# vector kernels' working sets (4 to 12 MiB, in the first table) fit the last-level cache where
# it holds them (32 MiB on the machine these notebooks were built on: L3, not DRAM), and the
# matmuls' 768 KiB fit L2 on most current CPUs; the level each was compared with is printed
# beside it. The inspector's kernels table has the % of peak as a column, its *Roofline* view
# draws the chart below, and `TrainingMonitor` lists each step's slowest kernels with it.
#
# The same as the inspector's static HTML, for one more round of the workloads: the
# intensities are compared by the notebook tests, the measured part (the roofs, the chart, % of
# peak from that round's one run of each) is masked for them, as everything timed is.

# %%
from IPython.display import HTML  # noqa: E402
from tinylab.inspection.html_views import roofline_html  # noqa: E402

with trace() as one_round:
    for title in WORKLOADS:
        run_workload(title)
HTML(roofline_html(build_model(one_round)).replace("<details", "<details open"))

# %% [markdown]
# That is how a kernel is made fast, and how to tell how fast it could be. The map of the tree
# (docs/tree.md) says where each stage lives; every one of them prints itself, so the fastest
# way to learn more is to run it with `DEBUG=5`.

# %% [markdown]
# **Next:** `08_symbolic_shapes` — one kernel for every length, and a tiny GPT that generates
# text without compiling at each position.
