# %% [markdown]
# # 07 · Making it fast
#
# The same kernel can run at very different speeds depending on how its loops are arranged.
# tinylab makes each arrangement an explicit **optimization action** on the plan, chosen by a
# readable heuristic or by BEAM search that times candidates. Above the kernels, **TinyJit**
# removes the Python overhead of a step. A roofline puts the measured kernels in context.
#
# Timings depend on the machine and its load: cells that print them are marked for nbval not to
# compare, and everything else (actions, names, FLOPs, bytes) is exact.

# %%
# %load_ext tinylab
import importlib.util
import time

import numpy as np
from exercises import check
from tinylab import Context, Device, Tensor, TinyJit, trace
from tinylab.codegen.linearize import linearize
from tinylab.codegen.plan import KernelPlan, Opt, OptError
from tinylab.engine.realize import choose_plan
from tinylab.ir.node import prod
from tinylab.runtimes.buffer import Buffer

rng = np.random.default_rng(0)
cpu = Device["CPU"]
N = 128

# %% [markdown]
# ## One kernel, measured by hand
#
# Trace a matmul, then keep its kernel AST and the buffers it reads. `run_plan` compiles any
# plan of that AST with the C renderer and the CPU runtime, checks the result against numpy and
# returns the best of a few timings.

# %%
a = Tensor(rng.standard_normal((N, N)).astype(np.float32))
b = Tensor(rng.standard_normal((N, N)).astype(np.float32))
with trace() as recorded:
    expected = (a @ b).numpy()
kernel = recorded.kernels[0]
item = recorded.realizes[0].schedule.items[kernel.schedule_index]
buffers = [slot.existing if slot.existing is not None else
           Buffer("CPU", prod(slot.shape), slot.dtype, cpu.allocator) for slot in item.slots]


def run_plan(plan: KernelPlan, repeats: int = 5) -> float:
    program = linearize(plan, plan.name)
    library, _ = cpu.runtime.compile(cpu.renderer.render(program))
    launch = cpu.runtime.load(library, program.name)
    seconds = min(launch(*[buf.handle for buf in buffers], global_size=program.loops)
                  for _ in range(repeats))
    result = buffers[0].numpy().reshape(expected.shape)
    assert np.allclose(result, expected, atol=1e-3), f"{plan.name} computed a wrong result"
    return seconds


plain = choose_plan("CPU", kernel.ast, noopt=True, beam=0)      # NOOPT: no actions
chosen = choose_plan("CPU", kernel.ast, noopt=False, beam=0)    # the heuristic's plan
print(f"{kernel.flops} FLOPs, {kernel.bytes_moved} bytes per run")
print("plain plan:     ", plain.name)
print("heuristic plan: ", chosen.name, "=", ", ".join(str(o) for o in chosen.opts))

# %% tags=["nbval-ignore-output"]
for title, plan in (("plain (NOOPT)", plain), ("heuristic", chosen)):
    seconds = run_plan(plan)
    print(f"{title:<14} {seconds * 1e3:8.3f} ms  {kernel.flops / seconds / 1e9:7.2f} GFLOPS")

# %% [markdown]
# ## What each action buys
#
# Apply the heuristic's actions one at a time and time each step. Each action is a rule of
# `tinylab/codegen/heuristic.py`: vectorize the axis where lanes save the most memory
# operations, tile two output axes into registers so each load feeds several accumulators,
# unroll the reduce loop, and spread the outer loop over the CPU's cores.

# %%
steps = [plain]
for opt in chosen.opts:
    steps.append(steps[-1].apply(opt))
for plan in steps[1:]:
    print(f"{str(plan.opts[-1]):<16} -> {plan.name}")

# %% tags=["nbval-ignore-output"]
for plan in steps:
    seconds = run_plan(plan)
    label = str(plan.opts[-1]) if plan.opts else "(none)"
    print(f"{label:<16} {plan.name:<26} {kernel.flops / seconds / 1e9:7.2f} GFLOPS")

# %% [markdown]
# The register tile is visible in the loop IR: several accumulators per trip through the
# reduce loop.

# %%
print(chosen.describe())

# %% [markdown]
# ## Cache blocks: when the operands stop fitting
#
# At 128 × 128 both matrices sit in the L2 cache. At 1024 × 1024 each is 4 MiB: a register tile
# that runs the whole reduce loop streams a 1024-deep panel of `b` from further away for every
# row of tiles. `BLOCK` on the reduce axis splits it into cache-sized blocks and moves the block
# loop *outside* the output loops; each pass adds its block's partial sums to the output
# buffer (the first pass starts from zero), so one block of `b` stays in cache while every
# output tile uses it. The heuristic blocks a reduce when its operands overflow the cache and a
# block of the shared one fits in half the CPU's L2 (`bidx` is the block loop).
#
# A big `a @ b` on the CPU also *packs* its operands first, as BLAS libraries do: two small copy
# kernels lay `a` out as panels of 16 rows side by side (`(M/16, K, 16)`) and `b` as panels of 16
# columns (`(N/16, K, 16)`): 16 floats are one 64-byte cache line. A register tile of 16 rows
# then reads 16 consecutive floats per step of the reduce, where in row-major `a` its rows are
# 4 KiB apart — a power-of-two stride that lands them all in the same few cache sets. The
# product is still a `MUL` and a `SUM`:

# %%
big_a = Tensor(rng.standard_normal((1024, 1024)).astype(np.float32))
big_b = Tensor(rng.standard_normal((1024, 1024)).astype(np.float32))
with trace() as big_trace:
    (big_a @ big_b).realize()
for k in big_trace.kernels:
    print(f"{k.name:<24} {k.flops / 1e6:8.1f} MFLOP")
product = max(big_trace.kernels, key=lambda k: k.flops)
big_plan = choose_plan("CPU", product.ast, noopt=False, beam=0)
print(big_plan.name, "=", ", ".join(str(o) for o in big_plan.opts))
print(big_plan.describe())

# %% [markdown]
# ## The CPU target: the same rules on different data
#
# Nothing above is a constant of one CPU. The heuristic reads a **CPU target**: the vector width
# (lanes per vector), how many vector registers hold the register tile's accumulators, the cache
# sizes the blocks must fit, the cores to thread over. tinylab detects it once per process from
# the compiler's view of `-march=native` and from the OS; `python -m tinylab.device` and
# `DEBUG=1` print it. What this machine says (it differs from machine to machine, so nbval does
# not compare this cell):

# %% tags=["nbval-ignore-output"]
from dataclasses import replace  # noqa: E402

from tinylab.codegen.heuristic import accumulator_budget, cache_bytes, choose_opts  # noqa: E402
from tinylab.runtimes.cpu_target import PRESETS, detect  # noqa: E402

print("detected:  ", detect().describe())
print("CPU device:", cpu.target.describe())

# %% [markdown]
# `CPU_TARGET=avx2` (or `sse4`, `avx512`, `neon`) replaces the detected target with a named
# preset, so anyone can see what the planner does for another CPU. A preset this CPU cannot run
# only renders (`DEV=NULL:C`); the CPU device keeps one it can run. (These notebooks are built
# with `CPU_TARGET=avx2`, which every x86 machine of the last decade runs, so their printed plans
# and sources are the same wherever they are rebuilt.) Here are the presets, and the 1024 product
# kernel planned for two of them: an AVX-512 register holds 16 floats and there are 32 of them;
# AVX2 has 16 registers of 8 floats, so its tile keeps fewer, narrower accumulators, and its
# smaller L2 takes shallower blocks.

# %%
for preset in PRESETS.values():
    print(replace(preset, cores=2).describe())
print()
for name in ("avx512", "avx2"):
    target = replace(PRESETS[name], cores=2)
    product_plan = KernelPlan.from_ast(product.ast)
    opts = choose_opts(product_plan, cpu.renderer.supported_actions, target)
    print(f"{name}: {target.lanes_of(4)} lanes, {accumulator_budget(target)} accumulator "
          f"registers, blocks of B within {cache_bytes(target) // 1024} KiB")
    print(f"  {product_plan.apply_all(opts).name} = {', '.join(str(o) for o in opts)}")

# %% [markdown]
# The C renderer follows the target too: vector types no wider than its registers, and masked
# loads (the lanes of a vector that run past the end of a row) in the form its ISA has —
# AVX-512 mask registers, AVX2's `vmaskmov`, and on SSE or NEON, which have neither, one whole
# vector load and a lane select when the vector lies inside the buffer. The helper each target
# gets for the 29-column matmul below:

# %%
from tinylab.renderers.c import CRenderer  # noqa: E402

odd = Tensor(rng.standard_normal((37, 53)).astype(np.float32)) @ \
    Tensor(rng.standard_normal((53, 29)).astype(np.float32))
with trace() as odd_trace:
    odd.realize()
for name in ("avx512", "avx2", "neon"):
    target = replace(PRESETS[name], cores=2)
    odd_plan = KernelPlan.from_ast(odd_trace.kernels[0].ast)
    odd_plan = odd_plan.apply_all(choose_opts(odd_plan, cpu.renderer.supported_actions, target))
    source = CRenderer(target).render(linearize(odd_plan, odd_plan.name))
    helper = source[source.index("static inline"):source.index("}\n") + 2]
    print(f"--- {name}: {odd_plan.name}\n{helper}")

# %% [markdown]
# ## BEAM search
#
# `BEAM=n` replaces the heuristic: starting from the plain plan it tries every single action on
# the `n` fastest plans so far (`BEAM=1` is a greedy search), compiles and times each candidate on the device, keeps the
# fastest and repeats while that helps. The winner is checked against the plain plan and cached
# on disk, so the search runs once per kernel. It depends on timings, so its choice can differ
# between runs and machines (nbval does not compare this cell). A small kernel keeps the search
# short:

# %% tags=["nbval-ignore-output"]
if importlib.util.find_spec("tinylab.codegen.beam") is None:
    print("BEAM search is not in this tree (tinylab/codegen/beam.py); the heuristic runs instead")
else:
    small_a = Tensor(rng.standard_normal((16, 16)).astype(np.float32))
    small_b = Tensor(rng.standard_normal((16, 16)).astype(np.float32))
    start = time.perf_counter()
    with Context(BEAM=1), trace() as searched:
        (small_a @ small_b).realize()
    found = searched.kernels[0]
    print(f"BEAM=1 chose {found.name}: {', '.join(str(o) for o in found.opts) or 'no actions'} "
          f"(search and compile: {time.perf_counter() - start:.1f} s)")
    heuristic = choose_plan("CPU", found.ast, noopt=False, beam=0)
    print(f"the heuristic chose {heuristic.name}: {', '.join(str(o) for o in heuristic.opts)}")

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


inputs = [rng.standard_normal((32, 64)).astype(np.float32) for _ in range(6)]
outputs = [forward(Tensor(x)).numpy().copy() for x in inputs]
print("calls: 6, body ran on calls:", body_runs, "| kernels replayed per call:",
      forward.kernel_count)
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

# %% tags=["nbval-ignore-output"]
# memory roof: a plain copy; compute roof: numpy's BLAS matmul (a practical peak)
src = np.ones(M, dtype=np.float32)         # the workloads' size: 4 MB, mostly in cache
dst = np.empty_like(src)
start = time.perf_counter()
for _ in range(20):
    np.copyto(dst, src)
bandwidth = 20 * 2 * src.nbytes / (time.perf_counter() - start)
blas_a = np.ones((512, 512), dtype=np.float32)
start = time.perf_counter()
for _ in range(3):
    blas_a @ blas_a
peak = 3 * 2 * 512 ** 3 / (time.perf_counter() - start)

points = {}
for title, k in measured.items():
    best = min(run_workload(title).run_s for _ in range(3))
    points[title] = (k.flops / k.bytes_moved, k.flops / best)
print(f"memory roof {bandwidth / 1e9:.1f} GB/s (numpy copy of 4 MB), "
      f"compute roof {peak / 1e9:.1f} GFLOPS (numpy matmul)")
for title, (intensity, flops) in points.items():
    bound = min(peak, bandwidth * intensity)
    print(f"{title:<18} {flops / 1e9:7.2f} GFLOPS  = {100 * flops / bound:5.1f}% of its roof")

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
# The same as the inspector's static HTML: the intensities are compared by the notebook tests,
# the measured part (chart, % of peak) is masked for them, as everything timed is.

# %%
from tinylab.inspection.html_views import roofline_html  # noqa: E402

HTML(roofline_html(roofline_model).replace("<details", "<details open"))

# %% [markdown]
#
# ## Exercise: arrange the loops yourself
#
# Pick actions for the 128 × 128 matmul's plain plan — a list of `Opt(action, axis, amount)`
# with actions from `UPCAST`, `UNROLL`, `VECTORIZE`, `THREAD`, `SWAP`, `BLOCK`. Axis numbers refer to
# the plan as it is when the action is applied (`print(plan.axes)` shows them). The check
# applies them, says whether each fits, and verifies the result against numpy; the next cell
# times yours against the heuristic.

# %%
print([f"{n}: {axis.size} {axis.kind.value}" for n, axis in enumerate(plain.axes)])
my_actions = ...   # e.g. [Opt("UPCAST", 0, 4), Opt("VECTORIZE", 1, 8)]

# %%
if my_actions is ...:
    check("your plan", ..., None)
    mine = None
else:
    mine = plain
    try:
        for opt in my_actions:
            mine = mine.apply(opt)
        run_plan(mine, repeats=1)
        check("your plan computes a @ b", True, True, f"{mine.name}: " + mine.describe())
    except (OptError, AssertionError) as error:
        check("your plan is valid", True, False, str(error))
        mine = None

# %% tags=["nbval-ignore-output"]
if mine is not None:
    for title, plan in (("yours", mine), ("heuristic", chosen)):
        print(f"{title:<10} {plan.name:<26} {kernel.flops / run_plan(plan) / 1e9:7.2f} GFLOPS")

# %% [markdown]
# That is the whole stack. The README's map of the tree says where each stage lives; every one
# of them prints itself, so the fastest way to learn more is to run it with `DEBUG=5`.
#
# **Next:** `08_symbolic_shapes` — one kernel for every length, and a tiny GPT that generates
# text without compiling at each position.
