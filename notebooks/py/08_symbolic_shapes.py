# %% [markdown]
# # 08 · Symbolic shapes: one kernel for every length
#
# A kernel is compiled for the sizes in its shapes. Sum the first 3 elements of a vector, then
# the first 4, then the first 5: three graphs, three kernels, three compiles. A language model
# that reads one more token at every step would compile at every step.
#
# tinygrad's answer, and tinylab's: a size may be a **bound variable**.
# `Variable("i", 1, 64).bind(5)` stands for "some i between 1 and 64, 5 this time". The kernel
# is compiled once with `i` as an `int` argument, and every length reuses it.
#
# After it you can put bound variables in shapes, predict how many kernels a run of lengths
# compiles, and read a KV-cache decoder's flat kernel count.
#
# Kernel names, loop IR, masks and ranges are explained in the [reading guide](READING.md).

# %%
# %load_ext tinylab
import numpy as np
from exercises import check, claim
from tinylab import GlobalCounters, Tensor, TinyJit, Variable, config, trace

config.CALIBRATE.set_default(0)   # the plans here are the model's, the same on every machine (07 shows yours)

x_host = np.arange(64, dtype=np.float32)
x = Tensor(x_host).realize()

# %% [markdown]
# ## Without variables: a kernel per length
#
# `GlobalCounters.kernels_built` counts the kernels this process made ready to run: compiled, or
# loaded from the disk cache of compiled kernels (a second run of the notebook compiles nothing,
# but still builds a kernel per length).

# %%
GlobalCounters.reset()
for n in (3, 4, 5):
    assert (x[:n] * 2).sum().item() == (x_host[:n] * 2).sum()
print("lengths 3, 4, 5 with ints:", GlobalCounters.kernels_built, "kernels built")
claim("a kernel built per length", GlobalCounters.kernels_built, 3)

# %% [markdown]
# ## A bound variable in a shape
#
# Slicing with a bound variable gives a tensor whose shape holds the variable, with its range and
# its value now:

# %%
i = Variable("i", 1, 64)
print((x[:i.bind(5)] * 2).shape)

# %% [markdown]
# Run the same sum for three lengths. One kernel is built; the three launches pass 13, 14 and 15:

# %%
GlobalCounters.reset()
for n in (13, 14, 15):
    total = (x[:i.bind(n)] * 2).sum().item()
    assert total == (x_host[:n] * 2).sum()
    print(f"i = {n}: sum {total}")
print("lengths 13, 14, 15 with a variable:", GlobalCounters.kernels_built, "kernel built")
claim("one kernel for the three lengths", GlobalCounters.kernels_built, 1)

# %% [markdown]
# ## The kernel source
#
# The C source takes `const int i` after the buffers, and the reduce loop runs to `i`. The kernel
# name shows the variable too (`r_i`: a reduce whose loop has size `i`). Where a plan would
# split or vectorize an axis by a size the variable does not promise, the planner leaves that
# axis alone.

# %%
with trace() as recorded:
    (x[:i.bind(7)] * 2).sum().realize()
kernel = recorded.kernels[0]
print(kernel.name)
print(kernel.source)
claim("the kernel r_i takes `const int i` and its reduce loop runs to i",
      kernel.name == "r_i" and "const int i" in kernel.source and "ridx0 < i;" in kernel.source)

# %% [markdown]
# ## TinyJit replays one capture for every value
#
# `TinyJit` captures the kernels of a function on its second call and replays them after that.
# An int would be frozen into the capture; a bound variable is passed at each launch. The body
# runs on calls 1 and 2 only:

# %%
body_runs = []


@TinyJit
def prefix_sum_twice(values: Tensor, length: Variable) -> Tensor:
    body_runs.append(len(body_runs) + 1)
    return (values[:length] * 2).sum().realize()


results = [prefix_sum_twice(x, i.bind(n)).item() for n in (2, 9, 30, 64, 1)]
print("results:", results)
print("numpy:  ", [float((x_host[:n] * 2).sum()) for n in (2, 9, 30, 64, 1)])
print("body ran on calls", body_runs, "| kernels per replay:", prefix_sum_twice.kernel_count)
claim("the body ran on calls 1 and 2 only, and every length gave numpy's sum",
      body_runs == [1, 2] and results == [float((x_host[:n] * 2).sum()) for n in (2, 9, 30, 64, 1)])

# %% [markdown]
# A value outside the declared range is refused when it is bound, before anything runs:

# %%
try:
    i.bind(65)
except ValueError as error:
    print(error)

# %% [markdown]
# ## A tiny GPT with a KV cache
#
# `tinylab/examples/tiny_gpt.py` is a character-level transformer (token and position
# embeddings, causal self-attention, an MLP, LayerNorm) written with `tinylab.nn`. To generate,
# it reads one token per call. Each attention layer keeps the keys and values of the tokens read
# so far in a cache of the full context length, and at position `start_pos`:
#
# ```python
# self.cache_k[:, :, start_pos:start_pos + 1] = k          # write this token's key
# keys = self.cache_k[:, :, :start_pos + 1]                 # attend to every key so far
# ```
#
# with `start_pos = Variable("start_pos", 0, context - 1).bind(position)`. The attention scores
# have shape `(1, heads, 1, start_pos + 1)`: the softmax reduces over a symbolic axis and the
# matmul with the values has a symbolic inner dimension. The whole step is one `TinyJit`.
#
# Train it briefly on the text that ships with the example (`python -m
# tinylab.examples.tiny_gpt` trains longer):

# %%
from tinylab.examples.tiny_gpt import GPTConfig, TinyGPT, generate, load_text, train

text = load_text()
Tensor.manual_seed(0)
model = TinyGPT(GPTConfig(vocab_size=len(text.chars), context=128))
losses = train(model, text, steps=12)
print(f"{len(text.tokens)} characters of text, {len(text.chars)} distinct")
print(f"loss: step 1 {losses[0]:.1f}, step 12 {losses[-1]:.1f}")

# %% [markdown]
# Generate 100 tokens after the prompt "The ". The count of kernels built is read after 20 tokens
# and after 100: the kernels of the step were built for the first positions (calls 1 and 2 of
# the jitted step) and every later position replays them.

# %%
compiled = {}


def count_kernels(generated: int) -> None:
    compiled[generated] = GlobalCounters.kernels_built


GlobalCounters.reset()
tokens = generate(model, text.encode("The "), 100, on_token=count_kernels)
print(f"kernels built after 20 tokens: {compiled[20]}")

# %% [markdown]
# **Exercise.** Predict how many kernels have been built after 100 tokens. With a kernel for each
# length it would keep growing; with symbolic shapes the jitted step replays what it built.

# %%
answer_kernels_after_100 = ...

# %%
check("kernels built after 100 tokens", answer_kernels_after_100, compiled[100],
      "the step's kernels take the position as a symbolic variable, so positions 21-100 replay "
      "the kernels built for the first two calls",
      hint="compare with the count after 20 tokens: what would make it grow, and does the "
           "position ever appear in a shape as a plain int?")

# %% [markdown]
# After 12 training steps the text is mostly letters and spaces in a plausible rhythm; the
# example's 150 steps get closer to words:

# %%
generated = text.decode(tokens)
print(generated)
letters = sum(ch.isalpha() or ch == " " for ch in generated)
claim("most of it is letters and spaces", letters / len(generated) > 0.8)

# %% [markdown]
# `bench/tiny_gpt.py` (`make bench`) times this generation, tokens per second, and a training
# step against the same model in PyTorch.

# %% [markdown]
# **Next:** `09_transforms` — jvp, vjp and vmap as rewrites of the lazy graph.
