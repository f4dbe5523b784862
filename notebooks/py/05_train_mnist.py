# %% [markdown]
# # 05 · Training a CNN on Fashion-MNIST
#
# The flagship example (`python -m tinylab.examples.beautiful_mnist`, tinygrad's
# `beautiful_mnist` model) trained for a handful of small steps, so the notebook stays quick:
# a live training monitor, the kernels of one step and why they are cut where they are, and the
# weights saved and loaded as safetensors. `make demo` trains it properly (70 steps of 512).
#
# After it you can train the CNN, count its trainable parameters, read one training step's
# kernels and why they are cut there, and save and load its weights.
#
# Kernel names, loop IR, masks and ranges are explained in the [reading guide](READING.md).

# %%
# %load_ext tinylab
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
from exercises import check, claim
from machine import measured_on
from tinylab import Tensor, config, nn, trace
from tinylab.examples.beautiful_mnist import Model, make_steps, print_step_kernels
from tinylab.schedule.fusion_rules import FUSION_RULES
from tinylab_widgets import TrainingMonitor

config.CALIBRATE.set_default(0)   # the plans here are the model's, the same on every machine (07 shows yours)
STEPS, BATCH = 12, 32

# %% [markdown]
# ## The data
#
# `nn.datasets.mnist(fashion=True)` reads the IDX files (from Debian's `dataset-fashion-mnist`
# package when installed, else from a download into the user cache) as uint8 tensors. Batches
# are picked on the host, as a data loader would.

# %%
X_train, Y_train, X_test, Y_test = nn.datasets.mnist(fashion=True)
print("train:", X_train.shape, X_train.dtype.name, "| test:", X_test.shape)
images = X_train.numpy().astype(np.float32) / 255.0
labels = Y_train.numpy().astype(np.int32)
test_images = X_test[:500].numpy().astype(np.float32) / 255.0
test_labels = Y_test[:500].numpy().astype(np.int32)

CLASSES = ["T-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker",
           "bag", "boot"]
shades = " .:-=+*#%@"
picture = images[0, 0].reshape(14, 2, 14, 2).mean(axis=(1, 3))   # 28x28 -> 14x14
print(f"image 0 is a {CLASSES[labels[0]]}:")
print("\n".join("".join(shades[int(v * 9.99)] * 2 for v in row) for row in picture))

# %% [markdown]
# ## The model
#
# Two 5×5 convolutions, batch norm, max-pool, two 3×3 convolutions, batch norm, max-pool and a
# linear layer — the same `Model` class the example trains. Parameters are plain tensor
# attributes; `nn.state.get_parameters` finds them.

# %%
Tensor.manual_seed(0)
model = Model()
parameters = nn.state.get_parameters(model)
optimizer = nn.optim.Adam(parameters)
train_step, correct = make_steps(model, optimizer)   # both wrapped in TinyJit
for name, tensor in list(nn.state.get_state_dict(model).items())[:6]:
    print(f"{name:<22} {tensor.shape}")
print("...")
kinds = [type(layer).__name__ + (f" {layer.weight.shape[2]}x{layer.weight.shape[3]}"
                                 if isinstance(layer, nn.Conv2d) else "")
         for layer in model.layers if isinstance(layer, (nn.Conv2d, nn.BatchNorm, nn.Linear))]
claim("two 5×5 convolutions, batch norm, two 3×3 convolutions, batch norm, a linear layer", kinds,
      ["Conv2d 5x5", "Conv2d 5x5", "BatchNorm", "Conv2d 3x3", "Conv2d 3x3", "BatchNorm", "Linear"])
claim("the linear layer is Linear(576, 10)", model.layers[-1].weight.shape, (10, 576))

# %% [markdown]
# **Exercise.** How many trainable numbers does the model have? Work it out from the layer
# shapes (a conv has `out · in · k · k` weights plus `out` biases; batch norm has a weight and a
# bias per channel; `Linear(576, 10)` has `576 · 10 + 10`).

# %%
answer_parameters = ...

# %%
trainable = sum(p.numel() for p in parameters if p.requires_grad)   # running stats do not train
check("trainable parameters", answer_parameters, trainable,
      "; ".join(f"{name} {t.numel()}" for name, t in nn.state.get_state_dict(model).items()
                if t.requires_grad),
      hint="only tensors that train (requires_grad): weights and biases; batch norm's "
           "running mean and variance are state, not parameters")

# %% [markdown]
# ## One step, traced
#
# `train_step` is a `TinyJit`: its first call runs the Python body (forward, backward, Adam) and
# realizes everything normally, so a trace sees every kernel and every fusion decision. The
# first call also compiles each kernel once.

# %%
rng = np.random.default_rng(0)


def batch():
    picked = rng.integers(0, len(images), BATCH)
    return Tensor(images[picked]), Tensor(labels[picked])


with trace() as first_step:
    loss = train_step(*batch())
print(f"step 1: loss {loss.item():.3f}; {len(first_step.realizes)} realize(s), "
      f"{len(first_step.kernels)} kernels")
boundaries = Counter(d.reason for d in first_step.decisions if not d.merged)
for reason, count in boundaries.most_common():
    print(f"{count:4d} × {reason.value:<20} {FUSION_RULES.explanation(reason)}")
claim("the whole step is one realize: forward, backward and Adam's update in one schedule",
      len(first_step.realizes), 1)

# %% [markdown]
# Each count is a rule of the scheduler firing; the sentence beside it is the rule's own
# explanation. The step is a single realize: the loss, the gradients and Adam's update of every
# parameter are scheduled together. Adam's state (its moments, and `b1^t` and `b2^t` under
# tinygrad's names) starts as buffers copied in from the host, so its assigns need no kernel of
# their own before the step. The largest kernels by arithmetic:

# %%
by_flops = sorted(first_step.kernels, key=lambda k: -k.flops)[:6]
for kernel in by_flops:
    print(f"{kernel.flops / 1e6:8.2f} MFLOP  {kernel.name}")

# %% [markdown]
# ## Training, with the monitor
#
# `TrainingMonitor` is a live widget: progress, the loss curve, the kernels of the latest step
# and where each step's time went. The second call of `train_step` captures its kernels; later
# calls replay them without running the Python body, scheduling or compiling (the monitor shows
# each step's time; `07b_search_jit_roofline` measures what replay saves).

# %%
monitor = TrainingMonitor(total_steps=STEPS - 1, title="Fashion-MNIST CNN", jit=train_step)
monitor

# %%
for step in monitor.track(range(STEPS - 1)):
    monitor.log(train_step(*batch()))
monitor.summary()   # a static record of the run, for readers of the saved notebook

# %% [markdown]
# ## The kernels of one step
#
# The captured step is a fixed list of kernel launches. Their FLOPs are counted from the
# generated programs:

# %%
runners = [launch.runner for launch in train_step.step.launches if launch.runner is not None]
print(f"one step replays {train_step.kernel_count} kernel launches, "
      f"{sum(r.flops for r in runners) / 1e6:.1f} MFLOP in all")
claim("the replay launches step 1's kernels, no more and no fewer",
      train_step.kernel_count, len(first_step.kernels))

# %% [markdown]
# And where the time goes: the captured step replayed 9 times, kernel by kernel, each kernel's
# median time with its quartiles (timings differ on every run and machine, so nbval does not
# compare this cell):

# %% tags=["nbval-ignore-output"]
print("measured on", measured_on())
print_step_kernels(train_step)

# %% [markdown]
# ## How good is it after so few steps?
#
# The monitor's last loss is the training loss of one batch, computed in training mode: batch
# norm normalizes each layer with *that batch's* mean and variance. Evaluation (`Tensor.test()`,
# as `correct` runs) uses the *running* statistics instead, which each training step moves only
# 10% of the way (momentum 0.1) from where they started (mean 0, variance 1): after 12 steps,
# 0.9¹² ≈ 28% of each is still the starting value. The same weights, evaluated with batch
# statistics (a copy of the model, in training mode), show how much of the gap that is:

# %%
EVAL = 250


def test_accuracy(net, training: bool) -> float:
    hits = 0
    for i in range(0, len(test_images), EVAL):
        x, y = Tensor(test_images[i:i + EVAL]), Tensor(test_labels[i:i + EVAL])
        if training:
            with Tensor.train():
                hits += int((net(x).argmax(axis=1) == y).sum().item())
        else:
            hits += int(correct(x, y).item())
    return 100 * hits / len(test_images)


with_running = test_accuracy(model, training=False)
probe = Model()                          # a copy: training mode moves its running statistics
claim("running statistics start at mean 0, variance 1", all(   # the new model's, before the copy
    (n.running_mean.numpy() == 0).all() and (n.running_var.numpy() == 1).all()
    for n in probe.layers if isinstance(n, nn.BatchNorm)))
nn.state.load_state_dict(probe, nn.state.get_state_dict(model))
with_batch = test_accuracy(probe, training=True)
print(f"test accuracy after {STEPS} steps of {BATCH} ({len(test_images)} test images): "
      f"{with_running:.1f}% with the running statistics, {with_batch:.1f}% with each batch's")
norms = [layer for layer in model.layers if isinstance(layer, nn.BatchNorm)]
claim("12 steps, each batch norm moving its statistics 10% of the way (momentum 0.1)",
      (STEPS, {layer.momentum for layer in norms}), (12, {0.1}))
claim("0.9 ** 12 of the starting statistics is left", round((1 - norms[0].momentum) ** STEPS, 2),
      0.28)
claim("with batch statistics the same weights score higher", with_batch > with_running)

# %% [markdown]
# ## One layer in the inspector
#
# A whole step is too many kernels to read at once; one convolution with its backward pass is
# not. A conv is a sliding-window view plus multiply and sum — no im2col buffer:

# %%
layer = nn.Conv2d(1, 2, 3)
Tensor.realize(*nn.state.get_parameters(layer))   # its random init is not part of the picture
pixels = Tensor(images[:2, :, :8, :8])

# %%
# %%tinygrad
layer(pixels).relu().sum().backward()
layer.weight.grad.numpy().shape

# %% [markdown]
# ## Saving and loading weights
#
# `nn.state.safe_save` writes a `.safetensors` file (byte-compatible with the `safetensors`
# package); `safe_load` reads it back and `load_state_dict` copies it into a fresh model.

# %%
with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "fashion_cnn.safetensors"
    nn.state.safe_save(nn.state.get_state_dict(model), path)
    loaded = nn.state.safe_load(path)
    print(f"{len(loaded)} tensors, {path.stat().st_size} bytes")
    restored = Model()
    nn.state.load_state_dict(restored, loaded)

probe = Tensor(test_images[:EVAL])   # the evaluation's batch size: its kernels exist already
with Tensor.test():
    same = np.array_equal(model(probe).numpy(), restored(probe).numpy())
print("restored model gives identical outputs:", same)

# %% [markdown]
# ## The trained model on your own GPU
#
# `tinylab.export.webgpu(fn, example_inputs, path)` runs `fn` once more, records its kernels,
# renders each as WGSL (WebGPU's shading language) and writes **one HTML file**: the kernels,
# the weights as binary and a small runner. It needs no Python and no network. Open it in a
# browser with WebGPU (recent Chrome, Edge or Safari) from this Jupyter server — in JupyterLab,
# right-click the file, *Open in New Browser Tab* — then draw a piece of clothing or pick one of
# the test images: the classification runs on *your* GPU. The page shows the adapter and the
# time; without WebGPU it says why.

# %%
from tinylab import export

with Tensor.test():   # batch norm uses its running statistics, as in evaluation
    page = export.webgpu(lambda x: model(x).softmax(1), [Tensor.zeros(1, 1, 28, 28)],
                         "fashion_cnn_webgpu.html", title="tinylab: Fashion-MNIST CNN",
                         labels=CLASSES, samples=X_test[:30].numpy(),
                         sample_labels=Y_test[:30].numpy())
text = page.read_text()
print(f"{page.name}: {text.count('@compute')} WGSL kernels, "
      f"{len(nn.state.get_parameters(model))} weight tensors inlined, works offline")

# %% [markdown]
# **Next:** `06_write_a_backend`.
