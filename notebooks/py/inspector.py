# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py//py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Watching tinylab compile: the inspector
#
# `%load_ext tinylab` adds the `%%tinygrad` magic. A cell run under it is **traced**: every
# realize (`.numpy()`, `.item()`, `.realize()`) records the op graph, how the scheduler cut it into
# kernels and *why* each kernel boundary is there, each kernel's generated source and what it cost.
# The inspector appears under the cell's output:
#
# - **Graph** — collapsed by kernel: one box per kernel, labelled with the ops fused into it. Red
#   edges are kernel boundaries, labelled with the reason. Click the `+` on a kernel (or
#   double-click it) to see its ops.
# - **Kernels** — a sortable table (shape, FLOPs, bytes, time, GFLOPS, GB/s, cache hit); the selected
#   kernel's source in C / OpenCL / CUDA tabs, its loop IR and the optimization actions applied.
# - **Why** — every fusion decision, and a *what if* switch: the same graph scheduled with a fusion
#   rule switched off.
#
# Clicking a kernel, an op or a decision selects it in every panel. Opened on GitHub, or without a
# running kernel, each cell still shows a static picture of the same thing.

# %%
# %load_ext tinylab
import numpy as np
from tinylab import Tensor, config

config.CALIBRATE.set_default(0)   # the plans here are the model's, the same on every machine (07 shows yours)

N = 16
a = Tensor(np.arange(N * N, dtype=np.float32).reshape(N, N) / N).realize()
b = Tensor(np.eye(N, dtype=np.float32)).realize()

# %% [markdown]
# ## Matrix multiply written as multiply + sum
#
# `a.reshape(N, 1, N) * b.T.reshape(1, N, N)` is an `N×N×N` product that is never stored: the
# reshapes, the transpose and the broadcasts are *views* (index arithmetic), the multiply is computed
# inside the reduce loop, so the whole expression is **one kernel**. The only boundary is the one
# you asked for: `.numpy()` needs the result in a buffer.

# %%
# %%tinygrad
c = (a.reshape(N, 1, N) * b.T.reshape(1, N, N)).sum(axis=2)
c.numpy()[0, :4]

# %% [markdown]
# ## Softmax: three kernels, and why
#
# `softmax(x) = exp(x - max(x)) / sum(exp(x - max(x)))`. The max is a reduce whose result is read
# back across the axis it reduced (every element of a row needs its row's max), so it must be
# finished before the next loop starts: a **broadcast_reduce** boundary. The sum is cut for the same
# reason. `exp(x - max)` is cheap, so it is **recomputed** in the two kernels that read it instead
# of being stored. Try the *what if* switch: with recomputation off, it gets its own kernel and
# buffer.

# %%
x = Tensor((np.arange(20, dtype=np.float32) % 7).reshape(4, 5)).realize()

# %%
# %%tinygrad
y = x.softmax(1)
y.numpy().round(3)

# %% [markdown]
# `%tinygrad EXPR` shows the kernels of one expression (this one fuses into one kernel), with
# the last kernel's source open. `--backend CUDA` adds (and selects) the CUDA source of the same
# kernel — rendered, not run, on a machine without an NVIDIA GPU.

# %% tags=["nbval-ignore-output"]
# %tinygrad --backend CUDA (x * 2 + 1).exp()

# %% [markdown]
# `--static` shows only the static picture (script-free HTML: what GitHub and untrusted
# notebooks display). Other options: `--graph`, `--source`, `--debug N`; `%tinygrad on` inspects
# every cell until `%tinygrad off`.

# %%
# %%tinygrad --static
x.layernorm().numpy().shape

# %% [markdown]
# ## Following a training loop
#
# `TrainingMonitor` is a live widget a loop updates: progress, the loss curve, the kernels of the
# latest step and where its time went (compiling, running kernels, the rest). The first step
# compiles its kernels; later steps hit the cache.

# %%
from tinylab import nn
from tinylab_widgets import TrainingMonitor

rng = np.random.default_rng(0)
X = Tensor(rng.standard_normal((256, 3)).astype(np.float32))
Y = X @ Tensor([[2.0], [-1.0], [0.5]])
w = Tensor(np.zeros((3, 1), dtype=np.float32), requires_grad=True)
optimizer = nn.optim.SGD([w], lr=0.1)
monitor = TrainingMonitor(total_steps=40, title="linear regression")
monitor

# %%
for step in monitor.track(range(40)):
    optimizer.zero_grad()
    loss = ((X @ w - Y) ** 2).mean()
    loss.backward()
    optimizer.step()
    monitor.log(loss)
print("w =", w.numpy().ravel().round(2))
monitor.summary()   # a static record of the run, for readers of the saved notebook
