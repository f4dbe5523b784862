# %% [markdown]
# # 00 · A tour: from `Tensor` to generated C in ten cells
#
# tinylab is a small deep-learning stack you can watch compile. This notebook follows one line of
# tensor code through every stage; the notebooks after it take one stage each.
#
# After it you can follow one line of tensor code from `Tensor` to C, say how many kernels
# it takes and why, and predict the kernels of a softmax (checked at the end).
#
# ```
# Tensor ops ──> lazy graph (ir) ──> schedule: kernels + the reason for every boundary
#    ──> loop IR (codegen) ──> optimized loop IR ──> linear program ──> C / OpenCL / CUDA source
#    ──> compiled and launched (runtimes) ──> buffers
# ```
#
# | notebook | the layer it opens |
# |---|---|
# | 00_tour | this tour: one line of tensor code through every stage |
# | 01_tensors_and_autograd | the Tensor API, broadcasting, the primitive ops, backward as rules; build the backward walk |
# | 02_laziness_and_fusion | lazy graphs, kernels, *why* a boundary exists, "what if"; build a cut rule |
# | 03_ir_and_codegen | views and index math, the loop IR, each pass, the C source |
# | 04_backends | the same kernel as C, OpenCL and CUDA; PoCL; the Python interpreter |
# | 05_train_mnist | a CNN on Fashion-MNIST with the training monitor; saving weights |
# | 06_write_a_backend | a renderer written in a cell, checked by the test suite's op checks; build a C one |
# | 07_actions_blocks_targets | optimization actions, cache blocks, CPU targets; build a plan near the heuristic's |
# | 07b_search_jit_roofline | BEAM search, TinyJit, a roofline with a roof per memory level |
# | 08_symbolic_shapes | variables in shapes: one kernel for every length, a tiny GPT's KV cache |
# | 09_transforms | jvp, vjp and vmap as graph rewrites; build a vjp by transposing a jvp |
# | 10_your_pytorch_model | `torch.compile(model, backend="tinylab")`: a PyTorch model through every layer; build a row of the ATen table |
#
# Each notebook ends with **Next**; the last one comes back here. `inspector.ipynb` tours the
# inspector widget itself. Every claim the text makes about a number, a count or a comparison
# is checked by the cell after it (`claim(...)` prints what it checked), so a rebuilt notebook
# stops where its text and the engine part.
#
# Every number and every piece of source below is computed by the cell above it — rerun any cell
# and compare. `%load_ext tinylab` adds the `%%tinygrad` inspector magic.

# %%
# %load_ext tinylab
import numpy as np
from exercises import check, claim
from tinylab import Device, GlobalCounters, Tensor, config, trace
from tinylab.ir.graph_printer import print_graph

config.CALIBRATE.set_default(0)   # the plans here are the model's, the same on every machine (07 shows yours)
print("default device:", Device.DEFAULT)

# %% [markdown]
# ## 1. A tensor is a recipe, not a value
#
# Operations build a graph and return at once. Nothing runs until a value is needed.

# %%
rng = np.random.default_rng(0)
a = Tensor(rng.standard_normal((4, 8)).astype(np.float32))
b = Tensor(rng.standard_normal((4, 8)).astype(np.float32))

GlobalCounters.reset()
c = (a * b).sum(axis=1) + 1          # a row-wise dot product plus one
print(c.shape, c.dtype.name, "| kernels run so far:", GlobalCounters.kernel_count)
claim("building c ran no kernel", GlobalCounters.kernel_count, 0)

# %% [markdown]
# ## 2. The graph is made of a few primitive ops
#
# `c` is a node in an immutable graph. `sum` is a `REDUCE_SUM` that keeps the reduced axis as
# size 1; the `RESHAPE` that drops it costs nothing — it only changes how memory is indexed.

# %%
print(print_graph(c.node))

# %% [markdown]
# ## 3. Asking for the value schedules, compiles and runs kernels
#
# `tinylab.trace()` records every stage of everything realized inside it. The scheduler
# decided how many kernels this takes and why:

# %%
with trace() as recorded:
    values = c.numpy()
print(values)
print("kernels:", len(recorded.kernels), [kernel.name for kernel in recorded.kernels])
for decision in recorded.decisions:
    print(decision)
claim("one kernel, named r_4_8", [k.name for k in recorded.kernels], ["r_4_8"])
claim("the only boundary is the requested output",
      [d.reason.value for d in recorded.decisions if not d.merged], ["requested"])

# %% [markdown]
# The multiply is computed *inside* the reduce loop (`into_reduce`), the reshape and the `+ 1`
# ride along in the same kernel, and the only boundary is the one you asked for (`requested`):
# `.numpy()` needs the result in a buffer. `r_4_8` says it has a reduce (`r_`) and names the
# sizes of its plan's axes: a loop over 4 rows and the 8-long reduce, which this CPU plan reads as the 8
# lanes of one vector (section 5 shows the plan). Names follow each backend's plan, so the CUDA
# kernel of section 8 is `r_8_4`; the [reading guide](READING.md) says how to read names, loop
# IR, masks and ranges.
#
# ## 4. The inspector shows the same thing beside the cell
#
# `%%tinygrad` traces a cell and shows the op graph collapsed by kernel, each kernel's source
# and every fusion decision (in JupyterLab a live widget; on GitHub the static picture below).
# Its **Provenance** panel shows the source in C, OpenCL and CUDA side by side: click a line and
# the ops it computes light up in the graph, with the lines of *your* code that built them;
# click an op (or one of your lines) and the source lines it became light up. Its **Passes**
# panel steps through how the kernel was compiled — AST, plan, each optimization action with
# its diff, linear program, source — with the ◀ ▶ buttons or the arrow keys.

# %%
# %%tinygrad
d = Tensor(rng.standard_normal((4, 8)).astype(np.float32))
((d * d).sum(axis=1) + 1).numpy()

# %% [markdown]
# ## 5. The kernel as loops
#
# Code generation turns the kernel into a loop nest (the *loop IR*) and applies optimization
# actions. Here the heuristic chose to read the 8-long reduce axis as one vector of 8 lanes:

# %%
kernel = recorded.kernels[0]
print("actions:", [str(opt) for opt in kernel.opts])
print(kernel.passes["plan"])
claim("the 8-long reduce axis is read as one vector of 8 lanes", [str(o) for o in kernel.opts],
      ["VECTORIZE(1, 8)"])

# %% [markdown]
# ## 6. The linear program
#
# The loop nest is flattened into a list of instructions — every renderer walks this list.

# %%
print(kernel.passes["linear"])

# %% [markdown]
# ## 7. The C source that ran
#
# The C renderer turns the program into C with vector types; the system compiler built it and
# the CPU runtime loaded it with ctypes. On the left of each line, the ops of the graph it
# computes — the same map the inspector's Provenance panel draws (`c` was built before the
# trace began, so no line of your code is recorded for it; the `%%tinygrad` cell above has them):

# %%
from tinylab.inspection import build_model
from tinylab.inspection.provenance import annotated_source

print(annotated_source(build_model(recorded, timings=False)))

# %% [markdown]
# ## 8. The same kernel for a GPU
#
# Any kernel renders for any backend, without the hardware. On CUDA the 4 rows become 4 threads
# of a block (`threadIdx.x`) and the reduce stays a loop, so the plan differs from the CPU's and
# so does the name: `r_8_4` lists the reduce loop of 8, then the 4 local threads.

# %%
cuda = kernel.render("CUDA")
print(cuda)
claim("the CUDA kernel is r_8_4, its rows are threadIdx.x and its reduce a loop of 8",
      "void r_8_4(" in cuda and "threadIdx.x" in cuda and "ridx0 < 8" in cuda)

# %% [markdown]
# ## 9. What it cost
#
# `GlobalCounters` counts what the engine ran since the last reset: kernel launches, FLOPs and
# bytes moved (times are in `GlobalCounters.time_sum_s`). The cell resets it first, so it counts
# only its own kernel, not the `%%tinygrad` cell's. FLOPs are the kernel's ALU instructions times
# their loop trips (the lane fold and the `+ 1` included), not a textbook count.

# %%
GlobalCounters.reset()                   # count this cell's work only
(Tensor(a.numpy()) * Tensor(b.numpy())).sum(axis=1).add(1).realize()   # `c` again, fresh inputs
print(f"{GlobalCounters.kernel_count} kernel, {GlobalCounters.global_ops} FLOPs, "
      f"{GlobalCounters.global_mem} bytes moved")
print(f"kernel {kernel.name}: {kernel.flops} FLOPs, {kernel.bytes_moved} bytes")
claim("the counters saw this cell's one kernel", GlobalCounters.kernel_count, 1)
claim("more FLOPs than the textbook's 4 x 8 multiplies and adds (lane folds and + 1 counted)",
      kernel.flops > 2 * 4 * 8)

# %% [markdown]
# ## 10. Your turn: predict, then check
#
# How many kernels does `a.softmax(axis=1)` take? Softmax is `exp(x - max) / sum(exp(x - max))`,
# and notebook 02 explains the answer. Replace the `...` with a number and run both cells.

# %%
guess = ...

# %%
fresh = Tensor(rng.standard_normal((4, 8)).astype(np.float32))
with trace() as softmax_trace:
    fresh.softmax(axis=1).realize()
cuts = sorted({d.reason.value for d in softmax_trace.decisions if not d.merged})
check("kernels in softmax", guess, len(softmax_trace.kernels), "boundaries: " + ", ".join(cuts),
      hint="which values must be complete before the next step can start: can a row's max be "
           "used before every element of the row has been read?")

# %% [markdown]
# **Next:** `01_tensors_and_autograd`. The inspector's own tour (clicking around the widget) is
# `inspector.ipynb`.
