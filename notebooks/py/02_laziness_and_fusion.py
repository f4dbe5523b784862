# %% [markdown]
# # 02 · Laziness and fusion: how many kernels, and why
#
# A tinylab program is a lazy graph. When a value is needed, the **scheduler** cuts the graph
# into kernels: everything it can compute in one loop nest shares a kernel, and every boundary
# it places is recorded as a `FusionDecision` with a reason. This notebook reads those decisions.
#
# After it you can predict how many kernels an expression takes and why, price a fusion rule
# with what-if (a measured time with its spread), and build a fusion switch, the scheduler's cut
# rule for reduces and a memory-sharing policy, checked by the scheduler (kernel counts, cut
# reasons, numbers) and by the planner's rules (no live overlap, peak bytes).
#
# Kernel names, loop IR, masks and ranges are explained in the [reading guide](READING.md).

# %%
# %load_ext tinylab
from collections import Counter

import numpy as np
from exercises import check_all, claim
from tinylab import Context, GlobalCounters, Tensor, config, trace
from tinylab.schedule.fusion import SchedulerOptions
from tinylab.schedule.schedule import schedule

config.CALIBRATE.set_default(0)   # the plans here are the model's, the same on every machine (07 shows yours)
rng = np.random.default_rng(0)


def fresh(*shape) -> Tensor:
    """A new input buffer: nothing computed earlier can be reused for it."""
    return Tensor(rng.standard_normal(shape).astype(np.float32))


def run(fn, *shapes):
    """Realize fn(*fresh inputs) inside a trace; returns the trace."""
    inputs = [fresh(*shape) for shape in shapes]
    with trace() as recorded:
        fn(*inputs).realize()
    return recorded


def cut_reasons(recorded) -> str:
    counts = Counter(d.reason.value for d in recorded.decisions if not d.merged)
    return ", ".join(f"{reason}×{n}" for reason, n in sorted(counts.items()))


# %% [markdown]
# ## Nothing runs until a value is needed

# %%
GlobalCounters.reset()
x, y = fresh(4, 8), fresh(4, 8)
z = ((x + y) * 2).relu().exp()
print("after building z:  ", GlobalCounters.kernel_count, "kernels")
z.realize()
print("after z.realize(): ", GlobalCounters.kernel_count, "kernel")
z.numpy()
print("after z.numpy():   ", GlobalCounters.kernel_count, "kernel (the value is already there)")
claim("nothing ran until z was realized, then one kernel, and numpy() ran none",
      GlobalCounters.kernel_count, 1)
elementwise = [n.op.name for n in z.node.toposort() if n.op.name not in ("BUFFER", "CONST")]
print("its primitive ops:", " ".join(elementwise))

# %% [markdown]
# Every primitive op of the chain (printed last above: the add, the multiply, relu's compares and
# selects, exp's multiply and `EXP2`) ran in that one loop: each element is loaded once, computed
# through the whole chain in registers, and stored once.
#
# ## A matmul written as reshape, multiply and sum is one kernel
#
# `a.reshape(N, 1, N) * b.T.reshape(1, N, N)` describes an N × N × N tensor of products. It is
# never stored: the reshapes, the transpose and the broadcast are views, the multiply happens
# inside the reduce loop that sums it. (`inspector.ipynb` runs this cell under the inspector;
# here the trace's numbers are enough.)

# %%
N = 16
a, b = fresh(N, N), fresh(N, N)

# %%
c = (a.reshape(N, 1, N) * b.T.reshape(1, N, N)).sum(axis=2)
c.numpy()[0, :4]

# %%
recorded = run(lambda a, b: (a.reshape(N, 1, N) * b.T.reshape(1, N, N)).sum(axis=2), (N, N), (N, N))
(kernel,) = recorded.kernels
print("kernels:", len(recorded.kernels))
print(f"bytes the kernel moves: {kernel.bytes_moved}  "
      f"(the N×N×N product would be {N ** 3 * 4} bytes on its own)")
print("equals a @ b:", np.allclose(c.numpy(), a.numpy() @ b.numpy(), atol=1e-5))
claim("one kernel, moving less than the product alone would take",
      len(recorded.kernels) == 1 and kernel.bytes_moved < N ** 3 * 4)

# %% [markdown]
# With fusion switched off (`FUSE=0`, the scheduler's `fuse=False`) every op gets a kernel and
# every intermediate a buffer:

# %%
with Context(FUSE=0):
    unfused = run(lambda a, b: (a.reshape(N, 1, N) * b.T.reshape(1, N, N)).sum(axis=2),
                  (N, N), (N, N))
print(f"FUSE=0: {len(unfused.kernels)} kernels, "
      f"{sum(k.bytes_moved for k in unfused.kernels)} bytes moved; "
      f"fused: {len(recorded.kernels)} kernel, {kernel.bytes_moved} bytes")
claim("without fusion: more kernels, and more bytes through a buffer",
      len(unfused.kernels) > 1 and sum(k.bytes_moved for k in unfused.kernels) > kernel.bytes_moved)

# %% [markdown]
# ## Softmax is several kernels — and each boundary says why
#
# `softmax(x) = exp(x - max(x)) / sum(exp(x - max(x)))` along a row. Run it under the inspector
# and open the *why* panel (or read the static summary):

# %%
s = fresh(4, 5)

# %%
# %%tinygrad
s.softmax(axis=1).numpy().round(3)

# %% [markdown]
# The same facts as data: every decision of the schedule, grouped by kernel.

# %%
softmax_trace = run(lambda s: s.softmax(axis=1), (4, 5))
print(softmax_trace.realizes[0].schedule)
cut_nodes = {d.producer: d.reason.value for d in softmax_trace.decisions if not d.merged}
claim("the max and the sum are cut (broadcast_reduce), the output requested",
      sorted(cut_nodes.values()), ["broadcast_reduce", "broadcast_reduce", "requested"])
claim("exp(x - max) is recomputed, never cut",
      any(d.reason.value == "recomputed" for d in softmax_trace.decisions)
      and not any(n.op.name == "EXP2" for n in cut_nodes))

# %% [markdown]
# Read the `CUT` lines: a row's max is a reduce whose result is read back across the axis it
# reduced (every element of the row needs it), so it must be complete before the next loop
# starts — `broadcast_reduce`. The sum is cut for the same reason. `exp(x - max)` is cheap, so it
# is `recomputed` in both kernels that read it instead of getting a buffer.
#
# ## What if a rule were off?
#
# The scheduler takes its rules as arguments, so a counterfactual is one call: schedule the same
# outputs with a `SchedulerOptions` switch flipped. The inspector's *what if* panel shows these;
# here they are by hand.

# %%
record = softmax_trace.realizes[0]
scenarios = {"the real schedule": SchedulerOptions(),
             "fuse=False": SchedulerOptions(fuse=False),
             "recompute_shared=False": SchedulerOptions(recompute_shared=False),
             "fuse_into_reduce=False": SchedulerOptions(fuse_into_reduce=False),
             "fuse_after_reduce=False": SchedulerOptions(fuse_after_reduce=False)}
counted = {}
for title, options in scenarios.items():
    other = schedule(record.outputs, options, realized=record.schedule.leaves)
    moved = sum(slot.nbytes for item in other.items for slot in item.slots)
    counted[title] = (len(other.kernels), moved)
    print(f"{title:<24} {len(other.kernels)} kernels, {moved:4d} bytes read+written")
claim("recompute_shared=False: one kernel more, and more bytes, than the real schedule",
      counted["recompute_shared=False"][0] == counted["the real schedule"][0] + 1
      and counted["recompute_shared=False"][1] > counted["the real schedule"][1])

# %% [markdown]
# With `recompute_shared=False`, `exp(x - max)` gets a kernel and a buffer of its own instead of
# being computed in both kernels that read it: compare that row's kernels and bytes with the
# real schedule's: in bytes, for a producer this cheap, recomputing it is the better trade.
#
# ### ... and what each one costs
#
# Counts and bytes are half of the answer; time is the other half. `run_scenario` re-schedules
# the realize, compiles it and times it beside the actual schedule, on copies of its inputs (the
# inspector's *What-if, measured* panel calls it from its **run** buttons and keeps the result
# in the saved widget). Besides the fusion rules it knows "no optimization actions", "BEAM=2" and
# "matmul not packed". Kernel and byte deltas are exact; the times are measurements: both
# schedules run in interleaved rounds (`tinylab/engine/timing.py`, the helper every timing in
# these notebooks uses), and each time is the median with its quartiles.

# %%
from tinylab.inspection.what_if_run import run_scenario  # noqa: E402

priced = {key: run_scenario(record, key, repeats=15)
          for key in ("fuse_off", "no_recompute", "no_opts")}
for key, result in priced.items():
    print(f"{key:<14} {result['delta_kernels']:+d} kernels, {result['delta_bytes']:+5d} bytes")
claim("fuse_off adds 5 kernels, no_recompute 1, no_opts none",
      [priced[k]["delta_kernels"] for k in priced], [5, 1, 0])

# %% tags=["nbval-ignore-output"]
from machine import measured_on  # noqa: E402

print("measured on", measured_on())
for key, result in priced.items():
    low, high = result["ratio_quartiles"]
    print(f"{key:<14} {result['actual_s'] * 1e6:6.1f} µs -> {result['scenario_s'] * 1e6:6.1f} µs"
          f"  ({result['ratio']:.2f}x, quartiles {low:.2f}-{high:.2f}): {result['verdict']}")
low, high = priced["fuse_off"]["ratio_quartiles"]
claim("fuse_off's five extra launches are never faster beyond the spread", high >= 1.0)

# %% [markdown]
# Each line's verdict says whether this run can tell the two schedules apart: the scenario counts
# as slower only when even the lower quartile of its per-round ratio is above 1. On inputs this
# small a kernel launch costs more than its arithmetic, so `fuse_off`'s five extra launches are
# usually slower beyond the spread. `no_opts` runs the same kernels without optimization
# actions: on these few elements the difference is a few percent at most, and the verdict may go
# either way. A busy machine widens the spread, and then the cell says it cannot tell.

# %% [markdown]
# ### Exercise: move a kernel boundary
#
# `x.layernorm()` takes 3 kernels: the mean and the variance are reduces read back across the
# axis they reduced (`broadcast_reduce`). Flip **one** rule in `SchedulerOptions` so that the
# scheduler makes **4** kernels, and name the `Reason` it records for the new boundary. The
# check asks the scheduler for that schedule, counts its kernels, compares its cut reasons with
# the real schedule's, and runs its kernels against numpy's layernorm.

# %%
from schedule_exercises import check_fusion_options  # noqa: E402
from tinylab.schedule.fusion import Reason  # noqa: E402, F401  (for my_reason)

my_options = ...   # e.g. SchedulerOptions(some_rule=False)
my_reason = ...    # e.g. Reason.ELEMENTWISE


def layernorm_numpy(x):
    centred = x - x.mean(axis=1, keepdims=True)
    return centred / np.sqrt((centred * centred).mean(axis=1, keepdims=True) + 1e-5)


fusion_ok = check_fusion_options(my_options, my_reason, lambda x: x.layernorm(), layernorm_numpy,
                                 [rng.standard_normal((8, 16)).astype(np.float32)], kernels=4)

# %% [markdown]
# ## Where the buffers live
#
# Every kernel boundary is a buffer: written by one kernel, read by later ones. The engine's
# memory planner (`schedule/memory.py`) lets buffers whose lifetimes do not overlap share one
# allocation. The inspector's *Memory* view draws each buffer's lifetime across the kernel order;
# here is its static rendering for a chain of four kernels, each forced by `.contiguous()`.

# %%
from IPython.display import HTML  # noqa: E402
from tinylab.inspection import build_model  # noqa: E402
from tinylab.inspection.html_views import memory_html  # noqa: E402

chain = run(lambda x: (((x * 2).contiguous() + 1).contiguous() * 3).contiguous() + 1, (8, 8))
memory = build_model(chain, timings=False)["realizes"][0]["memory"]
for buffer in memory["buffers"]:
    shared = f"  shares storage with {buffer['shares_with']}" if buffer["shares_with"] else ""
    print(f"{buffer['id']:<5} {buffer['label']:<28} {buffer['role']:<12} "
          f"kernels {buffer['first'] + 1}-{buffer['last'] + 1}{shared}")
print(f"{memory['bytes_without_plan']} bytes without the planner, {memory['bytes_with_plan']} "
      f"with it; at most {memory['peak_live']} live at once")
claim("3(2x + 1) takes 2x's storage", memory["buffers"][3]["storage"], memory["buffers"][0]["id"])
claim("bytes without the planner, with it, and live at once",
      (memory["bytes_without_plan"], memory["bytes_with_plan"], memory["peak_live"]),
      (1024, 768, 512))

# %%
HTML(memory_html(build_model(chain, timings=False)).replace("<details", "<details open"))

# %% [markdown]
# The third buffer, `3 · (2x + 1)`, is first written after the first one, `2x`, was last read,
# so the planner hands it `2x`'s storage: 768 bytes instead of 1024. It cannot get below 512,
# because two of these buffers are live at every kernel. In the widget, clicking a buffer lights
# up the kernels that write and read it.

# %% [markdown]
# ### Exercise: write the planner's policy
#
# A plan maps each buffer to the buffer whose allocation it reuses. Write `my_policy(steps,
# size_of, keep)`: `steps[t]` lists the buffers kernel `t` touches, `size_of[key]` is a buffer's
# `(device, nbytes)`, and `keep` holds the buffers that must own their memory (inputs,
# outputs). Return `{key: home}` for each buffer that moves into `home`'s allocation. The check
# runs it on 200 random programs: kept buffers keep their memory, a buffer only moves into one of
# the same device and size, no two buffers of one allocation are live at the same step, and the
# plan allocates no more bytes than `share_by_lifetime` does.

# %%
from schedule_exercises import check_memory_policy  # noqa: E402


def my_policy(steps, size_of, keep):
    return {}   # no sharing: correct, but allocates more than the planner


policy_ok = check_memory_policy(my_policy)

# %% [markdown]
# ## A write lands through a view
#
# A view (`t.T`, `t[1]`, `t.reshape(9)`) of a realized tensor shares its storage, as in
# PyTorch: a write into the view lands in the base's elements through the view's index map. A
# lazy value made before the write keeps the value it was made from. An assign whose value
# reads its own target elsewhere (a shift by one) is computed into a buffer first: a cut with
# reason `assign_hazard`.

# %%
t = Tensor.zeros(3, 3).contiguous().realize()
before = t.sum()        # lazy: the sum of the zeros
t.T[2, 0] = 7           # t.T[2, 0] is t[0, 2]
t[1][1] = 5             # chained indexing writes through the view t[1]
t.reshape(9)[8] = 1     # element 8 of the flat view is t[2, 2]
print(t.numpy())
print("sum before the writes:", before.item(), "  after:", t.sum().item())
claim("the writes landed in t[0, 2], t[1, 1] and t[2, 2]; the lazy sum kept 0",
      (t.numpy()[0, 2], t.numpy()[1, 1], t.numpy()[2, 2], before.item()), (7.0, 5.0, 1.0, 0.0))
t.reshape(9)[1:].assign(t.reshape(9)[:-1])  # shift every element one place on
with trace() as recorded:
    t.realize()
print(t.numpy())
print("cuts:", cut_reasons(recorded))
claim("the shift is cut by assign_hazard", cut_reasons(recorded), "assign_hazard×1")

# %% [markdown]
# ## A table of kernel counts, computed here
#
# Each row is realized from fresh inputs and counted from the trace; each count is the one
# tinygrad 0.14 reports for the same expression. Cut reasons other than `requested` are the
# boundaries the scheduler chose.

# %%
EXPRESSIONS = {
    "((x+y)*2).relu().exp()": (lambda x, y, w: ((x + y) * 2).relu().exp()),
    "(x*y).sum(1)": (lambda x, y, w: (x * y).sum(1)),
    "x.sum(1).sqrt()": (lambda x, y, w: x.sum(1).sqrt()),
    "(x @ y.T + 1).relu()": (lambda x, y, w: (x @ y.T + 1).relu()),
    "x - x.max(1, keepdim=True)": (lambda x, y, w: x - x.max(1, keepdim=True)),
    "x.softmax(1)": (lambda x, y, w: x.softmax(1)),
    "x.layernorm()": (lambda x, y, w: x.layernorm()),
    "t = (x+1).exp(); t + t.T": (lambda x, y, w: (lambda t: t + t.T)((x + 1).exp())),
    "m = x @ y; m + m.T": (lambda x, y, w: (lambda m: m + m.T)(x @ y)),
    "x.cumsum(1)": (lambda x, y, w: x.cumsum(1)),
}
table = {}
for text, fn in EXPRESSIONS.items():
    counted = run(fn, (8, 8), (8, 8), (8, 8))
    table[text] = len(counted.kernels)
    print(f"{text:<28} {len(counted.kernels)} kernel(s)   cuts: {cut_reasons(counted)}")
claim("each count is the one tinygrad 0.14 reports for the same expression",
      list(table.values()), [1, 1, 1, 1, 2, 3, 3, 1, 2, 1])

# %% [markdown]
# ### Exercise: write the cut rule for reduces
#
# Every count above 1 comes from a reduce whose result is read somewhere that one loop
# nest cannot serve. Write that rule: `my_cut_rule(reduce, views)` gets a reduce node and the
# movement ops (`views`, each a node with `.op`) on one path from it to where its value is read
# (elementwise ops on the way fuse after the reduce and are skipped), and returns the `Reason`
# the scheduler records for cutting there, or `None` to fuse. The check runs a scheduler whose
# only choice is your rule on every row of the table above and compares its kernel counts and
# cut reasons with the real scheduler's.

# %%
from schedule_exercises import check_cut_rule  # noqa: E402
from tinylab.ir.ops import Op  # noqa: E402, F401  (view.op is an Op)
from tinylab.schedule.fusion import Reason  # noqa: E402, F401  (for the rule's answer)


def my_cut_rule(reduce, views):
    return ...   # a Reason, or None to fuse


cut_rule_ok = check_cut_rule(my_cut_rule, EXPRESSIONS)

# %% [markdown]
# tinygrad users asked why `a + (b - a) * w` is one kernel there but `a * (1 - w) + b * w` is
# two, with nothing to say why (tinygrad issue #5527). The issue's `w` is a broadcast scalar of
# shape `(1,)`, not a full tensor; here are both forms with that `w`, each boundary with its
# reason:

# %%
LERPS = {"x + (y - x) * w": (lambda x, y, w: x + (y - x) * w),
         "x * (1 - w) + y * w": (lambda x, y, w: x * (1 - w) + y * w)}
lerp_counts = {}
for text, fn in LERPS.items():
    counted = run(fn, (8, 8), (8, 8), (1,))
    lerp_counts[text] = (len(counted.kernels), cut_reasons(counted))
    print(f"{text:<28} w of shape (1,): {len(counted.kernels)} kernel(s)   "
          f"cuts: {cut_reasons(counted)}")
lerp_cut = next(d for d in counted.decisions if d.reason.value == "expensive_recompute")
print("the cut's detail:", lerp_cut.evidence["detail"])
claim("one kernel, then two with an expensive_recompute cut", list(lerp_counts.values()),
      [(1, "requested×1"), (2, "expensive_recompute×1, requested×1")])

# %% [markdown]
# The two forms differ here too, and the cut says why: in `x * (1 - w) + y * w` the value
# `1 - w` is read through the broadcast, so fusing it would redo its 2 ops for each of the 64
# outputs; the rule counts that work (the detail above: 2 x 64 reaches its 128 ops per value), not
# time, and computes `1 - w` once in a kernel of its own. `x + (y - x) * w` broadcasts `w` itself,
# a buffer, which costs only a load: one kernel.
#
# The rule is written for large tensors, where the recomputation grows with every output and a
# launch does not. At 8 x 8, as the what-if above showed for softmax, a launch costs more than
# the arithmetic it saves: the cell below times the real schedule against the same graph with
# the rule switched off (`recompute_limit=0`, one kernel) in interleaved rounds, and says which
# is faster only where the spread allows.

# %% tags=["nbval-ignore-output"]
from tinylab.engine.timing import interleaved, verdict  # noqa: E402
from tinylab.inspection.what_if_run import prepare_schedule, run_prepared  # noqa: E402

lerp = counted.realizes[0]
fused = schedule(lerp.outputs, SchedulerOptions(recompute_limit=0), realized=lerp.schedule.leaves)
runs = {"the real schedule": prepare_schedule(lerp.schedule, {}),
        "recompute_limit=0": prepare_schedule(fused, {})}
lerp_rounds = interleaved({name: (lambda r=r: run_prepared(*r)) for name, r in runs.items()})
ratio = lerp_rounds.ratio("recompute_limit=0", "the real schedule")
print("measured on", measured_on())
for name in runs:
    kernels = sum(1 for _, runner in runs[name][0] if runner is not None)
    print(f"{name:<18} {kernels} kernel(s): {lerp_rounds[name].text(1e6, ' µs')}")
print(f"the real schedule takes {ratio.text(1.0, 'x')} the one-kernel schedule's time: "
      f"{verdict(ratio)} 1")
claim("at 8 x 8 the cut does not pay: the real schedule is not faster beyond the spread",
      verdict(ratio) != "below")

# %% [markdown]
# ## DEBUG levels
#
# `Context(DEBUG=n)` prints what each stage did, scoped to the block: 1 the schedule sizes,
# 2 one line per kernel run (time, GFLOPS, GB/s), 3 the fusion decisions and optimization
# actions, 4 the generated source (5 adds the kernel AST, loop IR and linear program).

# %%
for level in (1, 2, 3, 4):
    print(f"----- DEBUG={level}")
    with Context(DEBUG=level):
        (fresh(4, 8) * 2).sum(axis=1).realize()

# %% [markdown]
# ## Exercises: predict the kernel counts
#
# Fill in a number for each, then run the check (it realizes each from fresh inputs).

# %%
guesses = {
    "x.exp().sum(1) + 1": ...,
    "(x - x.mean(1, keepdim=True)).exp()": ...,
    "(x @ y).relu() @ y": ...,
    "x.max(1) + y.sum(0)": ...,
}

# %%
QUESTIONS = {
    "x.exp().sum(1) + 1": lambda x, y: x.exp().sum(1) + 1,
    "(x - x.mean(1, keepdim=True)).exp()": lambda x, y: (x - x.mean(1, keepdim=True)).exp(),
    "(x @ y).relu() @ y": lambda x, y: (x @ y).relu() @ y,
    "x.max(1) + y.sum(0)": lambda x, y: x.max(1) + y.sum(0),
}
actual, why = {}, {}
for text, fn in QUESTIONS.items():
    counted = run(fn, (8, 8), (8, 8))
    actual[text], why[text] = len(counted.kernels), "cuts: " + cut_reasons(counted)
check_all(guesses, actual, why, hints={
    "x.exp().sum(1) + 1": "is the sum read back across the axis it reduced, or only once per "
                          "row?",
    "(x - x.mean(1, keepdim=True)).exp()": "the mean is a sum times 1/8: which element of a row "
                                           "needs the whole row's mean?",
    "(x @ y).relu() @ y": "a matmul is a reduce: is the first product read at the same index it "
                          "was computed at, or across a row of it?",
    "x.max(1) + y.sum(0)": "two reduces of different inputs: can one kernel hold two reduce "
                           "loops, and does either result need the other?"})

# %% [markdown]
# **Next:** `03_ir_and_codegen` — what happens inside one kernel.
