# %% [markdown]
# # 10 · Your PyTorch model, compiled where you can watch it
#
# Everything so far was tinylab code. Most models are written in PyTorch. `torch.compile(model,
# backend="tinylab")` hands such a model to tinylab: Dynamo captures the Python into an FX graph,
# AOTAutograd splits it into ATen graphs (the forward, and the backward when you train), and the
# bridge maps every ATen op through **one table** to tinylab's Tensor API. From there it is the
# pipeline you know: a lazy graph, a schedule with its fusion decisions, generated C, kernels.
#
# After this notebook you can compile a `transformers` model and your own module, find the kernel a
# line of your `forward` became, read why two ops did not fuse, put tinylab's kernels beside
# Inductor's (PyTorch's own compiler), and write a row of the table yourself.

# %%
# %load_ext tinylab
import warnings

import torch
import torch.nn.functional as F
import transformers

import tinylab
from tinylab import GlobalCounters, inspection
from tinylab.torch import TABLE
from exercises import check
from bridge_exercises import check_sinc_row

tinylab.config.CALIBRATE.set_default(0)   # the plans here are the model's, the same on every machine (07 shows yours)

warnings.filterwarnings("ignore", category=UserWarning, module="torch")
transformers.logging.set_verbosity_error()
torch.manual_seed(0)
print("backends torch.compile knows by name include tinylab:", "tinylab" in torch._dynamo.list_backends())
print("ATen ops in the bridge's table:", len(TABLE))

# %% [markdown]
# `backend="tinylab"` works without importing tinylab: the package registers the name with
# PyTorch's `torch_dynamo_backends` entry point when it is installed.
#
# ## A transformers ResNet
#
# A small ResNet from a config, random weights (nothing is downloaded). The compiled model is
# called like the model itself; its answer must be eager's:

# %%
resnet = transformers.ResNetForImageClassification(transformers.ResNetConfig(
    num_labels=10, embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic")).eval()
images = torch.randn(2, 3, 32, 32)
compiled = torch.compile(resnet, backend="tinylab")
with torch.no_grad():
    eager_logits = resnet(images).logits
    launched = GlobalCounters.kernel_count
    tinylab_logits = compiled(images).logits
    kernels_run = GlobalCounters.kernel_count - launched
error = float((tinylab_logits - eager_logits).abs().max() / eager_logits.abs().max())
print(f"largest difference from eager, relative to the largest logit: {error:.0e}")
print("tinylab kernels that ran:", kernels_run)
assert error < 1e-4 and kernels_run > 0   # the claim above: eager's answer, from tinylab kernels

# %% [markdown]
# ## Which kernel did a line of `forward` become?
#
# Every ATen node carries the stack trace of the Python line that made it. The bridge builds each
# node's tinylab ops under that line, so the trace knows, for every kernel, the lines of *your*
# (here: transformers') code it computes, and the ATen ops they were. `inspection.find_kernels`
# looks a line up:

# %%
with torch.no_grad(), tinylab.trace() as record:
    compiled(images)
convolutions = inspection.find_kernels(record, "self.convolution(")
for name, lines in list(convolutions.items())[:3]:
    print(name)
    for line in lines:
        print("   ←", line)
print("kernels that compute a line calling self.convolution(...):", len(convolutions))

# %% [markdown]
# One line of `forward` can become several kernels, and one kernel can compute several lines.
# The convolution's line in `modeling_resnet.py` is in a copy kernel of its own (`E_...` with
# no ops: the weights moved into the order the convolution's vector loads want), in the
# convolution's reduce (`r_...`: MUL, REDUCE_SUM), and, fused, in kernels that read its output:
# there the batch norm and ReLU of the next lines sit in the same loop, each line naming its
# ATen ops.
#
# **Predict**: the embedder's first layer alone is a 7×7 convolution (3 → 16 channels), a batch
# norm and a ReLU. How many kernels does tinylab run for that layer, compiled on its own? (What
# does the convolution need before its reduce? Can elementwise ops after a reduce join its
# kernel? And batch norm's 1/√(var + ε) is one number per channel.)

# %%
my_count = ...  # an int

# %%
first_layer = torch.compile(resnet.resnet.embedder.embedder, backend="tinylab")
with torch.no_grad():
    first_layer(images)   # compiled (and its kernels built) before the traced call
    with tinylab.trace() as layer_record:
        first_layer(images)
print(inspection.summary_text(layer_record))
check("kernels of the embedder's first layer", my_count, len(layer_record.kernels),
      why="the weights' copy, batch norm's per-channel 1/sqrt(var + eps), and the "
          "convolution's reduce with the normalization and ReLU fused after it",
      hint="count the kernel names in the summary: which one has no ops, which one runs per "
           "channel, which one reduces?")

# %% [markdown]
# ## Your own module, trained with torch.optim
#
# A module of your own: attention through `F.scaled_dot_product_attention`, then a linear head.
# Training uses the backward graph AOTAutograd derives; its ATen ops (the attention's backward,
# `threshold_backward`, ...) have rows in the table too. A few optimizer steps, compiled and
# eager from the same weights, must give the same losses:

# %%
class TinyAttention(torch.nn.Module):
    def __init__(self, width=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.head = torch.nn.Linear(width, 4)

    def forward(self, x):
        b, t, w = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        mixed = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        pooled = mixed.transpose(1, 2).reshape(b, t, w).mean(1)
        return self.head(pooled.relu())


import copy
torch.manual_seed(1)
eager_model = TinyAttention()
tinylab_model = copy.deepcopy(eager_model)
step_fn = torch.compile(tinylab_model, backend="tinylab")
optimizers = [torch.optim.Adam(m.parameters(), lr=0.01) for m in (eager_model, tinylab_model)]
tokens, labels = torch.randn(8, 6, 16), torch.randint(0, 4, (8,))
losses = {"eager": [], "tinylab": []}
built_per_step = []
for step in range(5):
    before = GlobalCounters.kernels_built
    for name, fn, opt in (("eager", eager_model, optimizers[0]), ("tinylab", step_fn, optimizers[1])):
        opt.zero_grad()
        loss = F.cross_entropy(fn(tokens), labels)
        loss.backward()
        opt.step()
        losses[name].append(round(loss.item(), 4))
    built_per_step.append(GlobalCounters.kernels_built - before)
print("eager  :", losses["eager"])
print("tinylab:", losses["tinylab"])
print("kernels built per step after the first:", built_per_step[1:])
assert all(abs(a - b) < 1e-3 for a, b in zip(losses["eager"], losses["tinylab"]))
assert built_per_step[2:] == [0, 0, 0]   # from the third step the JIT replays; nothing compiles

# %% [markdown]
# The losses agree to the printed digits, and from the third step nothing is built: the second
# call captured the step's kernels and later calls replay them (TinyJit), as for tinylab code.
#
# ## Why two ops did not fuse
#
# The `%%tinygrad` magic shows a cell's kernels, with the reason for every boundary, for a
# compiled PyTorch call too. Softmax over the last dim, in PyTorch:

# %%
def scores(x):
    return F.softmax(x * 0.5, dim=-1)


compiled_scores = torch.compile(scores, backend="tinylab")
x = torch.randn(4, 8)

# %%
# %%tinygrad --graph
compiled_scores(x)

# %% [markdown]
# Three kernels: the row maximum, the sum of exponentials, and the division. Read the cut
# edges: each is `broadcast_reduce`, a reduce's result (one value per row) read back at every
# element of the row it reduced. A kernel computes its reduce while it walks the row, so the
# value cannot be used inside that same loop; tinygrad cuts softmax the same way. The cut
# reasons as data:

# %%
with tinylab.trace() as record_scores:
    compiled_scores(x)
cuts = [d for d in inspection.build_model(record_scores, timings=False)["decisions"]
        if not d["merged"] and d["reason"] != "requested"]
for cut in cuts:
    print(cut["reason"], ":", cut["text"].split(": ", 1)[1][:90])
assert len(record_scores.kernels) == 3 and {c["reason"] for c in cuts} == {"broadcast_reduce"}

# %% [markdown]
# ## Beside Inductor
#
# Inductor, PyTorch's default `torch.compile` backend, generates C++ on a CPU. Its
# `output_code` for the same function (`run_and_get_code` returns it as text):

# %%
from torch._inductor.utils import run_and_get_code

torch._dynamo.reset()
_, (inductor_code,) = run_and_get_code(torch.compile(scores), x)
inductor_kernels = inductor_code.count("cpp_fused_")  // 2   # each kernel: defined, then called
inductor_loops = [line.strip() for line in inductor_code.splitlines() if line.strip().startswith("for(")]
print("Inductor kernels:", inductor_kernels, "  tinylab kernels:", len(record_scores.kernels))

# %% [markdown]
# Inductor makes **one** kernel for softmax: its C++ function runs three loops over each row
# one after the other (max, sum of exponentials, division), keeping the row's two reduced values
# in local variables between them. tinylab makes three kernels, each one loop nest, and passes
# the reduced values through memory. On a small tensor Inductor's choice saves two launches;
# on a large one both read the input three times. Here is Inductor's kernel (its vector type
# depends on this machine's CPU, so this cell's output is not compared by the tests):

# %% tags=["nbval-ignore-output"]
start = inductor_code.index('extern "C"')
print(inductor_code[start:inductor_code.index("''')", start)].strip()[:1200])

# %% [markdown]
# and the last of tinylab's three, the division: its kernel function from the generated C
# (helper functions such as the vector exp2 above it left out):

# %%
division = record_scores.kernels[-1].source
print(division[division.index("void "):])

# %% [markdown]
# ## Exercise: write a row of the table
#
# The table has no row for `aten.sinc` (`torch.sinc(x)`, sin(πx)/(πx), with sinc(0) = 1). A
# model that calls `torch.sinc` stops with an error naming the op and your line (or runs it in
# PyTorch with `options={"fallback": "eager"}`). Write its row with tinylab Tensor methods: a
# function of `x` (a tinylab Tensor) that returns sinc(x).
#
# The check adds your row to the table, compiles `torch.sinc` (forward, and backward: AOTAutograd
# writes sinc's derivative with ops the table already has) and compares with eager at points
# that include 0 and a large x.

# %%
my_sinc = ...            # e.g. def my_sinc(x): ...
passed = check_sinc_row(my_sinc)

# %% [markdown]
# The reference row is in `notebooks/solutions.py`. In the library each row is one line of
# `tinylab/torch/aten_table.py`, or a named function beside it where it outgrows a line.

# %% [markdown]
# **Next:** back to `00_tour` ([00 · the tour](00_tour.ipynb)), the course's map.
