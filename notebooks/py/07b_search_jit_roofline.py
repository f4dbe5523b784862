# %% [markdown]
# # 07b · Making it fast: search, JIT and the roofline
#
# Notebook 07 chose optimization actions with a readable heuristic. Here BEAM search chooses them
# by timing candidates, **TinyJit** removes the Python overhead of a whole step, and a roofline
# puts measured kernels against what the machine can do. After it you can tell a cached search
# from a real one, predict which calls of a jitted function run its body, and read a kernel's
# share of its roof. (Names and loop IR: the [reading guide](READING.md).)
#
# Timings depend on the machine and its load: cells that print them are marked for nbval not to
# compare and say which CPU they were measured on; everything else is exact.

# %%
# %load_ext tinylab
import importlib.util
import time

import numpy as np
from exercises import check
from machine import measured_on
from tinylab import Context, Tensor, TinyJit, trace
from tinylab.engine.realize import choose_plan

rng = np.random.default_rng(0)
# the CPU every timing below was measured on (lscpu), its load, and the target the kernels were built for
MEASURED_ON = measured_on()

# %% [markdown]
# ## BEAM search
#
# `BEAM=n` replaces the heuristic: starting from the plain plan it tries every single action on
# the `n` fastest plans so far (`BEAM=1` is a greedy search), compiles and times each candidate
# on the device, keeps the fastest and repeats while that helps. The winner is checked against
# the plain plan and cached on disk, so the search runs once per kernel. It depends on timings,
# so its choice can differ between runs and machines (nbval does not compare this cell). A small
# kernel keeps the search short. The cell runs it twice: once with `IGNORE_BEAM_CACHE=1`, a real
# search that times its candidates, and once more on new inputs of the same shapes, where the
# winner comes from the cache and no candidate is timed — which is what every later run of a
# BEAM program sees:

# %% tags=["nbval-ignore-output"]
if importlib.util.find_spec("tinylab.codegen.beam") is None:
    print("BEAM search is not in this tree (tinylab/codegen/beam.py); the heuristic runs instead")
else:
    def small_matmul(settings: dict):
        a, b = (Tensor(rng.standard_normal((16, 16)).astype(np.float32)) for _ in "ab")
        start = time.perf_counter()
        with Context(**settings), trace() as recorded:
            (a @ b).realize()
        return recorded.kernels[0], time.perf_counter() - start

    found, searched_s = small_matmul({"BEAM": 1, "IGNORE_BEAM_CACHE": 1})
    again, cached_s = small_matmul({"BEAM": 1})
    print("measured on", MEASURED_ON)
    print(f"BEAM=1 searched:  {found.name} = {', '.join(str(o) for o in found.opts) or 'no actions'}"
          f" in {searched_s:.2f} s (every candidate compiled and timed)")
    print(f"BEAM=1 again:     {again.name} in {cached_s:.3f} s (the cached winner: nothing timed)")
    heuristic = choose_plan("CPU", found.ast, noopt=False, beam=0)
    print(f"the heuristic:    {heuristic.name} = {', '.join(str(o) for o in heuristic.opts)}")

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
      hint="reread how TinyJit treats call 1, call 2 and the calls after")
print("kernels replayed per call:", forward.kernel_count)
plain_outputs = [((Tensor(x) @ w1).relu() @ w2).softmax(axis=1).numpy() for x in inputs]
print("replays match the plain computation:",
      all(np.allclose(o, p, atol=1e-6) for o, p in zip(outputs, plain_outputs)))

# %% tags=["nbval-ignore-output"]
def per_call(fn, repeats: int = 24) -> float:
    start = time.perf_counter()
    for i in range(repeats):   # a new input buffer each call, as in training
        fn(Tensor(inputs[i % len(inputs)])).realize()
    return (time.perf_counter() - start) / repeats


eager = per_call(lambda x: ((x @ w1).relu() @ w2).softmax(axis=1))
replay = per_call(forward)
print("measured on", MEASURED_ON)
print(f"without TinyJit {eager * 1e6:8.1f} µs per call (schedule + launch each time)")
print(f"with TinyJit    {replay * 1e6:8.1f} µs per call (replay)")

# %% [markdown]
# ## A roofline of the measured kernels
#
# A kernel is limited by memory (bytes it must move) or by arithmetic (FLOPs it must do). Its
# arithmetic intensity — FLOPs per byte — says which: below the ridge point memory bandwidth
# bounds it, above it compute does. The intensities are exact; the measurements are not.

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

# %% [markdown]
# Two things to read in that table. The plain matmul's FLOPs are the textbook `2·256³ =
# 33,554,432`, the relu one's `4·256² = 262,144` more: `kernel.flops` counts the ALU instructions
# the generated program runs, times their loop trips, and the relu is a compare, a NaN test and
# two selects per output. And the two kernels have the same name and loops: one 256-deep reduce
# loop (`…_256_…`). B is 256 KiB, which fits AVX2's cache budget whole, so nothing is blocked.
# Bigger operands are: at 1024 the heuristic narrows the columns one block covers (notebook 07),
# and a deeper reduce is split into reduce **blocks** that each add a cache-sized part of the sum
# into the output buffer — only right when the output *is* the sum: `relu(p1) + relu(p2) ≠
# relu(p1 + p2)`, so a relu after the reduce keeps its reduce whole. The timings below show what
# each kernel costs on this CPU.

# %% tags=["nbval-ignore-output"]
# memory roof: a plain copy; compute roof: numpy's BLAS matmul (a practical peak)
# (each the best of several runs, as the kernels' times are: a busy machine slows some runs)
src = np.ones(M, dtype=np.float32)         # the workloads' size: 4 MB, mostly in cache
dst = np.empty_like(src)
blas_a = np.ones((512, 512), dtype=np.float32)


def best_seconds(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


bandwidth = 2 * src.nbytes / best_seconds(lambda: np.copyto(dst, src), 40)
peak = 2 * 512 ** 3 / best_seconds(lambda: blas_a @ blas_a, 10)

points = {}
for title, k in measured.items():
    best = min(run_workload(title).run_s for _ in range(3))
    points[title] = (k.flops / k.bytes_moved, k.flops / best)
print("measured on", MEASURED_ON)
print(f"memory roof {bandwidth / 1e9:.1f} GB/s (numpy copy of 4 MB), "
      f"compute roof {peak / 1e9:.1f} GFLOPS (numpy matmul)")
for title, (intensity, flops) in points.items():
    bound = min(peak, bandwidth * intensity)
    print(f"{title:<18} {flops / 1e9:7.2f} GFLOPS  = {flops / bound:5.2f}x numpy's line here")

# %% tags=["nbval-ignore-output"]
def roofline_svg(points: dict, bandwidth: float, peak: float) -> str:
    from math import log10
    width, height, margin = 560, 320, 50
    lo_x, hi_x, lo_y, hi_y = -2.0, 3.0, 6.0, 12.0       # log10 of FLOP/B and FLOP/s

    def at(x, y):
        return (margin + (log10(x) - lo_x) / (hi_x - lo_x) * (width - 2 * margin),
                height - margin - (log10(y) - lo_y) / (hi_y - lo_y) * (height - 2 * margin))

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             'font-family="monospace" font-size="11" style="background:#fff">']
    ridge = peak / bandwidth
    roof = [at(10 ** lo_x, bandwidth * 10 ** lo_x), at(ridge, peak), at(10 ** hi_x, peak)]
    parts.append('<polyline fill="none" stroke="#dc2626" stroke-width="2" points="'
                 + " ".join(f"{x:.1f},{y:.1f}" for x, y in roof) + '"/>')
    for title, (intensity, flops) in points.items():
        x, y = at(intensity, flops)
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="#2563eb"/>'
                     f'<text x="{x + 6:.1f}" y="{y - 6:.1f}">{title}</text>')
    parts.append(f'<text x="{margin}" y="{height - 12}">FLOP/byte (log) →   '
                 f'roof: {bandwidth / 1e9:.0f} GB/s, {peak / 1e9:.0f} GFLOPS</text>')
    parts.append(f'<text x="8" y="{margin - 20}">FLOP/s (log) ↑</text></svg>')
    return "".join(parts)


from IPython.display import HTML  # noqa: E402

HTML(roofline_svg(points, bandwidth, peak))

# %% [markdown]
# Elementwise kernels and plain reductions do little arithmetic per byte, so the best they can
# do is stream memory; a matmul reuses each loaded value many times (its intensity grows with
# N), which is what register tiles and vectors exploit. The table of intensities above says
# where each one sits.
#
# ### The inspector's roofline: against the machine's peak
#
# The roofs above are what numpy reaches. The inspector compares every kernel with the device's
# *roofs*, which nothing on this machine beats, numpy included: compute is float32 lanes × 2 (an
# FMA is a multiply and an add) × FMA pipes per core × cores × clock (the OS's maximum clock, or
# one measured with a small FMA kernel), and never below numpy's matmul timed in the same process;
# bandwidth has a DRAM roof (a copy several times the last-level cache) and an L2 roof (a copy that
# fits L2), each the best of a generated copy kernel and `np.copyto`, the best ever seen on this
# CPU (`engine/peak.py`). A kernel's **% of peak** is the share it reached of the roof at its
# intensity, for the memory level its buffers fit in; a kernel above a roof raises it, so it never
# exceeds 100%. The kernels table of the inspector has it as a column, its *Roofline* view draws
# the chart, and `TrainingMonitor` lists each step's slowest kernels with it.

# %% tags=["nbval-ignore-output"]
from tinylab.engine.peak import device_peak  # noqa: E402
from tinylab.inspection import build_model  # noqa: E402

cpu_peak = device_peak("CPU")
print("measured on", MEASURED_ON)
print(f"compute {cpu_peak.flops_per_s / 1e9:.0f} GFLOPS: {cpu_peak.compute_from}")
print(f"DRAM {cpu_peak.bytes_per_s / 1e9:.1f} GB/s: {cpu_peak.bandwidth_from}")
print(f"L2 {cpu_peak.cache_bytes_per_s / 1e9:.1f} GB/s: {cpu_peak.cache_from}")
with trace() as all_workloads:
    for title in WORKLOADS:
        run_workload(title)
roofline_model = build_model(all_workloads)
for kernel in roofline_model["kernels"]:
    if kernel.get("percent_of_peak") is not None:
        print(f"{kernel['name']:<22} {kernel['percent_of_peak']:5.1f}% of peak "
              f"({kernel['roof_level']} roof)")
for note in roofline_model["peaks"]["CPU"]["raised"]:
    print(note)

# %% [markdown]
# Each kernel's % of peak comes from the one launch it made in that trace, on new buffers, not
# from a best of three as in the table further up, so on a busy machine (the load is printed)
# it can sit far below what the same kernel reached there — the matmuls especially. Read it as
# one measurement; `TrainingMonitor` shows it step after step.
#
# The same as the inspector's static HTML: the intensities are compared by the notebook tests,
# the measured part (chart, % of peak) is masked for them, as everything timed is.

# %%
from tinylab.inspection.html_views import roofline_html  # noqa: E402

HTML(roofline_html(roofline_model).replace("<details", "<details open"))

# %% [markdown]
# That is the whole stack. The map of the tree (docs/tree.md) says where each stage lives; every one
# of them prints itself, so the fastest way to learn more is to run it with `DEBUG=5`.
#
# **Next:** `08_symbolic_shapes` — one kernel for every length, and a tiny GPT that generates
# text without compiling at each position.
