# %% [markdown]
# # 07 · Making it fast: actions, blocks and targets
#
# The same kernel can run at very different speeds depending on how its loops are arranged.
# tinylab makes each arrangement an explicit **optimization action** on the plan, chosen by a
# readable heuristic. After this notebook you can read a plan's actions, say what each one buys,
# see how the CPU target changes the plan, and build a plan of your own that beats the plain
# loops. (`07b_search_jit_roofline` goes on with BEAM search, TinyJit and the roofline.)
# Names, loop IR and masks are explained in the [reading guide](READING.md).
#
# Timings depend on the machine and its load: cells that print them are marked for nbval not to
# compare, say which CPU they were measured on, and everything else (actions, names, FLOPs,
# bytes) is exact.

# %%
# %load_ext tinylab

import numpy as np
from exercises import check_all, check_plan, heuristic_facts
from machine import measured_on
from tinylab import Device, Tensor, trace
from tinylab.codegen.linearize import linearize
from tinylab.codegen.plan import KernelPlan, Opt  # noqa: F401 - Opt: the exercise's actions
from tinylab.engine.realize import choose_plan
from tinylab.ir.node import prod
from tinylab.runtimes.buffer import Buffer
from tinylab.target.cpu_target import detect

rng = np.random.default_rng(0)
cpu = Device["CPU"]
N = 128
# the CPU every timing below was measured on (lscpu), its load, and the target the kernels were built for
MEASURED_ON = measured_on()

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
    seconds = min(launch(*[buf.handle for buf in buffers])
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
print("measured on", MEASURED_ON)
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
print("measured on", MEASURED_ON)
for plan in steps:
    seconds = run_plan(plan)
    label = str(plan.opts[-1]) if plan.opts else "(none)"
    print(f"{label:<16} {plan.name:<26} {kernel.flops / seconds / 1e9:7.2f} GFLOPS")

# %% [markdown]
# Read the table from the top. **`VECTORIZE(1, 8)` is the big step**, close to the 8× its 8 lanes
# promise: the plain plan is scalar code (the CPU runtime compiles with `-fno-tree-loop-vectorize`,
# so gcc never vectorizes behind the planner's back), and one 8-lane fused multiply-add does the
# work of eight. It still keeps **one** vector accumulator, so every multiply-add waits for the
# previous one's result (about 4 cycles on current x86 cores, which can start 2 per cycle).
# **The `UPCAST`s** add independent accumulators, 2 and then 8 in flight, enough to keep the FMA
# units busy; how much each of the two adds on its own depends on the CPU's latencies and on the
# load, which is why the CPU and its load are printed. **`THREAD(0, 2)`** splits the rows over two
# cores: with 4 MFLOP per run the kernel is done in tens of microseconds, so starting the second
# thread is a large share of the time, and on a shared machine whose cores are busy (the load
# above) it can cost more than it saves. The exercise's reference plan leaves it out.
#
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
# block of the shared one fits in half the CPU's L2 (`bidx` is the block loop). Each pass after
# the first reads the partial sums back, though; so a reduce of at most 1,024 steps is left whole
# where a narrower `BLOCK` of the output *columns* (at least four cache lines of them) keeps all
# of its depth of `b` within that budget. The 1024 product below is planned so: `BLOCK(1, 4)`
# blocks the column panels, and its reduce loop runs all 1024 steps.
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
from tinylab.target.cpu_target import PRESETS  # noqa: E402

print("detected:  ", detect().describe())
print("CPU device:", cpu.target.describe())

# %% [markdown]
# `CPU_TARGET=avx2` (or `sse4`, `avx512`, `neon`) replaces the detected target with a named
# preset, so anyone can see what the planner does for another CPU. A preset this CPU cannot run
# only renders (`DEV=NULL:C`); the CPU device keeps one it can run. (These notebooks are built
# with `CPU_TARGET=avx2`, which every x86 machine of the last decade runs, so their printed plans
# and sources are the same wherever they are rebuilt.) Here are the presets, and the 1024 product
# kernel planned for two of them: an AVX-512 register holds 16 floats and there are 32 of them;
# AVX2 has 16 registers of 8 floats, so its tile keeps fewer, narrower accumulators. Neither
# blocks the 1024-deep reduce; each blocks the output columns so that all 1024 steps of the part
# of B it revisits fit its cache budget: 8 panels of 16 columns for AVX-512's 512 KiB
# (`BLOCK(1, 8)`), 4 for AVX2's 256 KiB (`BLOCK(1, 4)`).

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
# **Predict.** The `neon` preset is AArch64's: 128-bit vectors and 32 vector registers. For the
# 128 × 128 matmul of the first section, what does the heuristic choose under it? Give the
# VECTORIZE width (float32 lanes), the accumulator-register budget, and how many vector
# accumulators its register tile holds (the product of its UPCAST amounts). The check runs the
# real heuristic (`choose_opts`) with that target and compares.

# %%
my_neon = {"vector lanes": ..., "accumulator registers": ..., "vector accumulators in the tile": ...}

# %%
neon = replace(PRESETS["neon"], cores=2)
check_all(my_neon, heuristic_facts(kernel.ast, neon),
          why={"vector lanes": "128 bits / 32 bits per float32",
               "accumulator registers": "3/4 of the 32 vector registers; the rest hold operands",
               "vector accumulators in the tile": "the largest product of power-of-two UPCASTs "
               "within 24: 8 x 2 (AVX2's budget of 12 gives 2 x 4 = 8)"},
          hints={"vector lanes": "a float32 is 32 bits wide",
                 "accumulator registers": "compare the budgets printed above for avx512 and avx2 "
                 "with their register counts",
                 "vector accumulators in the tile": "multiply the UPCAST amounts of the plans "
                 "above and compare each product with its target's budget"})

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
#
# ## Exercise: arrange the loops yourself
#
# Pick actions for the 128 × 128 matmul's plain plan — a list of `Opt(action, axis, amount)`
# with actions from `UPCAST`, `UNROLL`, `VECTORIZE`, `THREAD`, `SWAP`, `BLOCK`. Axis numbers refer to
# the plan as it is when the action is applied (`print(plan.axes)` shows them). The check
# (`check_plan` in `notebooks/exercises.py`) applies them, says whether each fits, verifies the
# result against numpy, then times yours against NOOPT in the same run, back to back over 21
# rounds, and takes the median ratio, so a busy machine slows both alike: **it must run at least
# 2× faster than NOOPT**, with no BEAM. `notebooks/solutions.py` holds one answer.

# %%
SPEEDUP = 2
print([f"{n}: {axis.size} {axis.kind.value}" for n, axis in enumerate(plain.axes)])
my_actions = ...   # a list, e.g. [Opt("UNROLL", 2, 4), ...]

# %% tags=["nbval-ignore-output"]
plan_ok = check_plan(my_actions, SPEEDUP)   # times yours against NOOPT in this run

# %% [markdown]
# **Next:** `07b_search_jit_roofline` — BEAM search, TinyJit and a roofline of measured
# kernels.
