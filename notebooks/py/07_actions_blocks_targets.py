# %% [markdown]
# # 07 · Making it fast: actions, blocks and targets
#
# The same kernel can run at very different speeds depending on how its loops are arranged.
# tinylab makes each arrangement an explicit **optimization action** on the plan, chosen by a
# readable heuristic. After this notebook you can read a plan's actions, say what each one buys,
# see how the CPU target changes the plan, and build a plan of your own that comes within 0.8× of
# the heuristic's speed on a kernel it has not shown you. (`07b_search_jit_roofline` goes on with
# BEAM search, TinyJit and the roofline.) Names, loop IR and masks are explained in the
# [reading guide](READING.md).
#
# **The plans here are the model's, the same on every machine**: the first cell switches off
# calibration (`TINYLAB_CALIBRATE`, which times a few micro-kernels on first use and plans
# matmul tiles from the fastest), so what the text describes is what you see. The cell before
# the exercise shows the plan your machine's calibration chooses.
#
# Timings depend on the machine and its load: every timing here is the median of interleaved
# rounds with its quartiles (`tinylab/engine/timing.py`), the cells that print them are marked
# for nbval not to compare and say which CPU they were measured on, and a claim about speed holds
# only where the spread allows it. Everything else (actions, names, FLOPs, bytes) is exact.

# %%
# %load_ext tinylab

import numpy as np
from exercises import check_all, claim
from machine import measured_on
from plan_exercises import MatmulKernel, check_plan, heuristic_facts
from tinylab import Context, Device, Tensor, config, trace
from tinylab.codegen.linearize import linearize
from tinylab.codegen.plan import KernelPlan, Opt  # noqa: F401 - Opt: the exercise's actions
from tinylab.engine.realize import choose_plan
from tinylab.engine.timing import interleaved, verdict
from tinylab.ir.node import prod
from tinylab.runtimes.buffer import Buffer
from tinylab.target.cpu_target import detect

config.CALIBRATE.set_default(0)   # the plans here are the model's, the same on every machine
rng = np.random.default_rng(0)
cpu = Device["CPU"]
N = 128
# the CPU every timing below was measured on (lscpu), its load, and the target the kernels were built for
MEASURED_ON = measured_on()

# %% [markdown]
# ## One kernel, measured by hand
#
# Trace a matmul, then keep its kernel AST and the buffers it reads. `launcher` compiles any
# plan of that AST with the C renderer and the CPU runtime, checks its result against numpy
# once, and returns a function that launches it (and reports the seconds it took).

# %%
a = Tensor(rng.standard_normal((N, N)).astype(np.float32))
b = Tensor(rng.standard_normal((N, N)).astype(np.float32))
with trace() as recorded:
    expected = (a @ b).numpy()
kernel = recorded.kernels[0]
item = recorded.realizes[0].schedule.items[kernel.schedule_index]
buffers = [slot.existing if slot.existing is not None else
           Buffer("CPU", prod(slot.shape), slot.dtype, cpu.allocator) for slot in item.slots]


def launcher(plan: KernelPlan):
    program = linearize(plan, plan.name)
    library, _ = cpu.runtime.compile(cpu.renderer.render(program))
    launch = cpu.runtime.load(library, program.name)
    handles = [buf.handle for buf in buffers]
    launch(*handles)
    result = buffers[0].numpy().reshape(expected.shape)
    assert np.allclose(result, expected, atol=1e-3), f"{plan.name} computed a wrong result"
    return lambda: launch(*handles)


plain = choose_plan("CPU", kernel.ast, noopt=True, beam=0)      # NOOPT: no actions
chosen = choose_plan("CPU", kernel.ast, noopt=False, beam=0)    # the heuristic's plan
print(f"{kernel.flops} FLOPs, {kernel.bytes_moved} bytes per run")
print("plain plan:     ", plain.name)
print("heuristic plan: ", chosen.name, "=", ", ".join(str(o) for o in chosen.opts))
claim("the FLOPs are the textbook 2 x 128³", kernel.flops, 2 * N ** 3)

# %% [markdown]
# ## What each action buys
#
# Apply the heuristic's actions one at a time. Each action is a rule of
# `tinylab/codegen/heuristic.py`: vectorize the axis where lanes save the most memory
# operations, tile two output axes into registers so each load feeds several accumulators,
# and spread the outer loop over the CPU's cores.

# %%
steps = [plain]
for opt in chosen.opts:
    steps.append(steps[-1].apply(opt))
for plan in steps[1:]:
    print(f"{str(plan.opts[-1]):<16} -> {plan.name}")
labels = ["(none)"] + [str(plan.opts[-1]) for plan in steps[1:]]

# %% [markdown]
# Every plan above, timed in the same 15 interleaved rounds (each round runs each plan, forward
# then backward order in turn, best of 3 launches), so a burst of load from other processes
# slows them alike. Each line gives the median GFLOPS with its quartiles, and the step's speedup
# over the plan before it, a per-round ratio with its quartiles:

# %% tags=["nbval-ignore-output"]
timed = interleaved({label: launcher(plan) for label, plan in zip(labels, steps)},
                    rounds=15, best_of=3)
print("measured on", MEASURED_ON)
speedups = {}
for before, label, plan in zip([None] + labels, labels, steps):
    rate = timed[label].median
    line = (f"{label:<16} {plan.name:<18} {kernel.flops / rate / 1e9:7.2f} GFLOPS "
            f"({kernel.flops / timed[label].high / 1e9:.1f}-{kernel.flops / timed[label].low / 1e9:.1f})")
    if before is not None:
        speedups[label] = timed.speedup(before, label)
        line += f"  {speedups[label].text(1.0, 'x', 2)} the step before: {verdict(speedups[label])}"
    print(line)
upcasts = [label for label in labels if label.startswith("UPCAST")]
claim("VECTORIZE is the largest step: its speedup's lower quartile is above every UPCAST's upper",
      all(speedups["VECTORIZE(1, 8)"].low > speedups[label].high for label in upcasts))
claim("each UPCAST makes the kernel faster, beyond the spread",
      all(verdict(speedups[label]) == "above" for label in upcasts))

# %% [markdown]
# Read the table from the top. **`VECTORIZE(1, 8)` is the big step**: the plain plan is scalar
# code (the CPU runtime compiles with `-fno-tree-loop-vectorize`, so gcc never vectorizes behind
# the planner's back), and one 8-lane fused multiply-add does the work of eight. It still keeps
# **one** vector accumulator, so every multiply-add waits for the previous one's result: a chain
# runs at one step per FMA latency (a few cycles on current cores, which could start one or two
# FMAs every cycle). **The `UPCAST`s** add independent accumulators, 2 and then 8 in flight, so
# several chains overlap: each makes the kernel faster beyond the spread, as the claims above
# check; how much each adds depends on the CPU's latencies and on the load. **`THREAD(0, 2)`**
# splits the rows over two cores: with 4 MFLOP per run the kernel is done in tens of
# microseconds, so waking the second thread is a large share of the time, and on a shared
# machine whose cores are busy (the load above) it can cost more than it saves. Its line says
# which it was on this run; the exercise leaves threads out.
#
# The register tile is visible in the loop IR: several accumulators per trip through the
# reduce loop.

# %%
print(chosen.describe())
claim("8 vector accumulators per trip (a 2 x 4 tile of 8-lane vectors)",
      [(a.kind.value, a.size) for a in chosen.axes if a.kind.value in ("upcast", "vector")],
      [("vector", 8), ("upcast", 2), ("upcast", 4)])

# %% [markdown]
# ## Cache blocks: when the operands stop fitting
#
# At 128 × 128 both matrices (64 KiB each) sit in the L2 cache. At 1024 × 1024 each is 4 MiB,
# more than L2 holds (the target's size is printed in the next section): a register tile
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
claim("two copy kernels (no FLOPs) pack the operands, then one product",
      [k.flops == 0 for k in big_trace.kernels], [True, True, False])
claim("BLOCK(1, 4) blocks the column panels; the reduce loop runs all 1024 steps",
      "BLOCK(1, 4)" in [str(o) for o in big_plan.opts] and "for ridx0 in 0..1024" in big_plan.describe())
claim("128² floats fit L2, 1024² do not", (4 * 128 * 128 < cpu.target.l2_bytes,
                                            4 * 1024 * 1024 > cpu.target.l2_bytes), (True, True))

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

from tinylab.codegen.heuristic import choose_opts  # noqa: E402
from tinylab.codegen.heuristic_costs import accumulator_budget, cache_bytes  # noqa: E402
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
planned = {}
for name in ("avx512", "avx2"):
    target = replace(PRESETS[name], cores=2)
    product_plan = KernelPlan.from_ast(product.ast)
    opts = choose_opts(product_plan, cpu.renderer.supported_actions, target)
    planned[name] = ([str(o) for o in opts], cache_bytes(target) // 1024)
    print(f"{name}: {target.lanes_of(4)} lanes, {accumulator_budget(target)} accumulator "
          f"registers, blocks of B within {cache_bytes(target) // 1024} KiB")
    print(f"  {product_plan.apply_all(opts).name} = {', '.join(str(o) for o in opts)}")
claim("AVX-512 blocks 8 column panels within 512 KiB, AVX2 4 within 256 KiB",
      [("BLOCK(1, 8)" in planned["avx512"][0], planned["avx512"][1]),
       ("BLOCK(1, 4)" in planned["avx2"][0], planned["avx2"][1])], [(True, 512), (True, 256)])
claim("neither blocks the 1024-deep reduce (no BLOCK of the reduce axis, 4)",
      not any(o.startswith("BLOCK(4") for o in planned["avx512"][0] + planned["avx2"][0]))

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
          hints={"vector lanes": "how many 32-bit floats fit in one 128-bit register?",
                 "accumulator registers": "what share of its registers does each target above "
                 "give to accumulators (compare avx512's and avx2's budgets with their register "
                 "counts)?",
                 "vector accumulators in the tile": "what is the product of the UPCAST amounts "
                 "in the plans above, and how does each compare with its target's budget?"})

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
helpers = {}
for name in ("avx512", "avx2", "neon"):
    target = replace(PRESETS[name], cores=2)
    odd_plan = KernelPlan.from_ast(odd_trace.kernels[0].ast)
    odd_plan = odd_plan.apply_all(choose_opts(odd_plan, cpu.renderer.supported_actions, target))
    source = CRenderer(target).render(linearize(odd_plan, odd_plan.name))
    helper = source[source.index("static inline"):source.index("}\n") + 2]
    helpers[name] = helper
    print(f"--- {name}: {odd_plan.name}\n{helper}")
claim("AVX-512 masks with a mask register, AVX2 with vmaskmov, NEON loads a whole vector and "
      "selects lanes", ["_mm512_maskz_loadu_ps" in helpers["avx512"],
                        "_mm256_maskload_ps" in helpers["avx2"],
                        "(int4)*(const float4_u*)p" in helpers["neon"]], [True, True, True])

# %% [markdown]
# ## Your machine's plan
#
# Everything above is the model's plan. With calibration on (the default outside these
# notebooks), the first use of a CPU times a few register tiles of a matmul micro-kernel (a few
# seconds, kept in the kernel cache) and plans big matmul tiles from the fastest. This cell
# switches it on for one plan: the 1024 product, as your machine would run it. It depends on
# your machine (and on its load while it was timed), so nbval does not compare its lines.

# %%
from tinylab.engine.calibrate import calibration_note  # noqa: E402

with Context(TINYLAB_CALIBRATE=1):
    yours = choose_plan("CPU", product.ast, noopt=False, beam=0)
    note = calibration_note(cpu.target)
print(f"your machine: {yours.name} = {', '.join(str(o) for o in yours.opts)}")
print(f"your machine: {note or 'not calibrated (no C compiler to time with)'}")
print(f"the model's:  {big_plan.name}")

# %% [markdown]
# ## Exercise: arrange the loops yourself
#
# Pick actions for the plain plan of another kernel: `a @ b.T` for 128 × 128 matrices, whose
# second operand is read transposed (the heuristic's plan for it is not shown here). Give a list
# of `Opt(action, axis, amount)` with actions from `UPCAST`, `UNROLL`, `VECTORIZE`, `SWAP`,
# `BLOCK`; axis numbers refer to the plan as it is when the action is applied
# (`print(plan.axes)` shows them). The check (`check_plan` in `notebooks/plan_exercises.py`)
# applies them, says whether each fits, verifies the result against numpy, then times yours
# against the heuristic's plan in 15 interleaved rounds, both on one core (`THREAD` is left out:
# a second core's speed depends on what else runs there): **it must run at least 0.8× as fast
# as the heuristic's**. It passes when the lower quartile of the per-round ratio is above 0.8,
# fails when the upper quartile is below it, and otherwise says this run cannot tell. Copying the
# plan above does not pass: which axis is contiguous in both operands has changed.
# `notebooks/solutions.py` holds one answer.

# %%
exercise = MatmulKernel()   # a @ b.T, 128 x 128
print([f"{n}: {axis.size} {axis.kind.value}" for n, axis in enumerate(exercise.plain.axes)])
print(exercise.plain.describe())
my_actions = ...   # a list, e.g. [Opt("UNROLL", 2, 4), ...]

# %% tags=["nbval-ignore-output"]
plan_ok = check_plan(my_actions, matmul=exercise)   # times yours against the heuristic's

# %% [markdown]
# **Next:** `07b_search_jit_roofline` — BEAM search, TinyJit and a roofline of measured
# kernels.
