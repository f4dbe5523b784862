"""The workloads of the cold-start suite (bench/cold.py): each a first call a user meets, written
for tinylab and for PyTorch with the same shapes and math. `WORKLOADS[name][framework](compiled)`
builds the model and inputs (not timed) and returns the call to time: it returns once the result
is on the host. `compiled=True` wraps the PyTorch model in torch.compile (Inductor), where the
workload says it applies.
"""
from __future__ import annotations

import numpy as np

RNG_SEED = 0


# ---- tinylab --------------------------------------------------------------------------------
def _tinylab_cnn_step(batch: int):
    def build(compiled=False):
        from tinylab import Tensor, nn
        from tinylab.examples.beautiful_mnist import Model, make_steps
        Tensor.manual_seed(0)
        model = Model()
        step, _ = make_steps(model, nn.optim.Adam(nn.state.get_parameters(model)))
        rng = np.random.default_rng(RNG_SEED)
        images = Tensor(rng.random((batch, 1, 28, 28), dtype=np.float32)).realize()
        labels = Tensor(rng.integers(0, 10, batch).astype(np.int32)).realize()
        return lambda: step(images, labels).item()
    return build


class _TinylabResNet:
    """ResNet-18 (basic blocks 2-2-2-2, widths 64-512), eval mode."""

    def __init__(self):
        from tinylab import nn
        self.stem, self.bn = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm(64)
        self.blocks, width = [], 64
        for stage, out in enumerate((64, 128, 256, 512)):
            for index in range(2):
                stride = 2 if stage and not index else 1
                self.blocks.append(_TinylabBlock(width, out, stride))
                width = out
        self.fc = nn.Linear(512, 1000)

    def __call__(self, x):
        x = self.bn(self.stem(x)).relu().max_pool2d(3, 2, padding=1)
        for block in self.blocks:
            x = block(x)
        return self.fc(x.mean((2, 3)))


class _TinylabBlock:
    def __init__(self, width: int, out: int, stride: int):
        from tinylab import nn
        self.a = nn.Conv2d(width, out, 3, stride=stride, padding=1, bias=False)
        self.b = nn.Conv2d(out, out, 3, padding=1, bias=False)
        self.bn_a, self.bn_b = nn.BatchNorm(out), nn.BatchNorm(out)
        self.down = [nn.Conv2d(width, out, 1, stride=stride, bias=False), nn.BatchNorm(out)] \
            if stride != 1 or width != out else []

    def __call__(self, x):
        shortcut = x.sequential(self.down) if self.down else x
        return (self.bn_b(self.b(self.bn_a(self.a(x)).relu())) + shortcut).relu()


def _tinylab_resnet(compiled=False):
    from tinylab import Tensor
    Tensor.manual_seed(0)
    model = _TinylabResNet()
    image = Tensor(np.random.default_rng(RNG_SEED).random((1, 3, 224, 224),
                                                          dtype=np.float32)).realize()
    return lambda: model(image).numpy()


def _tinylab_transformer(compiled=False):
    from tinylab import Tensor, nn
    from tinylab.examples.tiny_gpt import Block, GPTConfig
    Tensor.manual_seed(0)
    block = Block(GPTConfig(vocab_size=64, context=64, dim=128, heads=4))
    parameters = nn.state.get_parameters(block)
    for parameter in parameters:  # a buffer each, as TinyGPT does (equal lazy values are one node)
        parameter.replace(Tensor(parameter.numpy(), requires_grad=True))
    x = Tensor(np.random.default_rng(RNG_SEED).standard_normal((4, 64, 128),
                                                               dtype=np.float32)).realize()

    def call():
        loss = block(x).square().mean()
        loss.backward()
        Tensor.realize(loss, *[p.grad for p in parameters])  # one realize, as one backward
        return [p.grad.numpy() for p in parameters], loss.item()
    return call


def _tinylab_scan(op: str):
    def build(compiled=False):
        from tinylab import Tensor
        values = np.random.default_rng(RNG_SEED).random(1024, dtype=np.float32) + 0.5
        x = Tensor(values, requires_grad=True)

        def call():
            getattr(x, op)(0).sum().backward()
            return x.grad.numpy()
        return call
    return build


def _tinylab_softmax(compiled=False):
    from tinylab import Tensor
    x = Tensor(np.random.default_rng(RNG_SEED).standard_normal((256, 1000),
                                                               dtype=np.float32)).realize()
    return lambda: x.softmax(-1).numpy()


def _tinylab_conv_backward(compiled=False):
    from tinylab import Tensor, nn
    Tensor.manual_seed(0)
    conv = nn.Conv2d(32, 32, 5)
    x = Tensor(np.random.default_rng(RNG_SEED).random((64, 32, 24, 24), dtype=np.float32),
               requires_grad=True).realize()

    def call():
        conv(x).relu().sum().backward()
        return conv.weight.grad.numpy(), x.grad.numpy()
    return call


# ---- PyTorch --------------------------------------------------------------------------------
def _torch():
    import torch
    torch.manual_seed(0)
    return torch


def _maybe_compiled(torch, model, compiled: bool):
    return torch.compile(model) if compiled else model


def _torch_cnn_step(batch: int):
    def build(compiled=False):
        torch = _torch()
        from bench.demo import torch_cnn
        model = _maybe_compiled(torch, torch_cnn(torch), compiled)
        optimizer = torch.optim.Adam(model.parameters())
        rng = np.random.default_rng(RNG_SEED)
        images = torch.from_numpy(rng.random((batch, 1, 28, 28), dtype=np.float32))
        labels = torch.from_numpy(rng.integers(0, 10, batch))

        def call():
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            return loss.item()
        return call
    return build


def _torch_resnet(compiled=False):
    torch = _torch()
    nn = torch.nn

    def block(width, out, stride):
        body = nn.Sequential(nn.Conv2d(width, out, 3, stride, 1, bias=False), nn.BatchNorm2d(out),
                             nn.ReLU(), nn.Conv2d(out, out, 3, 1, 1, bias=False),
                             nn.BatchNorm2d(out))
        down = nn.Sequential(nn.Conv2d(width, out, 1, stride, bias=False), nn.BatchNorm2d(out)) \
            if stride != 1 or width != out else nn.Identity()
        return _Residual(torch, body, down)
    layers, width = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                     nn.MaxPool2d(3, 2, 1)], 64
    for stage, out in enumerate((64, 128, 256, 512)):
        for index in range(2):
            layers.append(block(width, out, 2 if stage and not index else 1))
            width = out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    model = _maybe_compiled(torch, nn.Sequential(*layers).eval(), compiled)
    image = torch.from_numpy(np.random.default_rng(RNG_SEED).random((1, 3, 224, 224),
                                                                    dtype=np.float32))

    def call():
        with torch.no_grad():
            return model(image).numpy()
    return call


def _Residual(torch, body, down):  # noqa: N802 - a class made once torch is imported
    class Residual(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body, self.down = body, down

        def forward(self, x):
            return torch.relu(self.body(x) + self.down(x))
    return Residual()


def _torch_transformer(compiled=False):
    torch = _torch()
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, dim=128, heads=4):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.fc, self.out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

        def forward(self, x):
            batch, length, dim = x.shape
            q, k, v = (t.reshape(batch, length, self.heads, -1).transpose(1, 2)
                       for t in self.qkv(self.ln1(x)).chunk(3, dim=2))
            attended = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(attended.transpose(1, 2).reshape(batch, length, dim))
            return x + self.out(nn.functional.gelu(self.fc(self.ln2(x))))
    block = Block()
    model = _maybe_compiled(torch, block, compiled)
    x = torch.from_numpy(np.random.default_rng(RNG_SEED).standard_normal((4, 64, 128),
                                                                        dtype=np.float32))

    def call():
        loss = model(x).square().mean()
        loss.backward()
        return [p.grad.numpy() for p in block.parameters()], loss.item()
    return call


def _torch_scan(op: str):
    def build(compiled=False):
        torch = _torch()
        values = np.random.default_rng(RNG_SEED).random(1024, dtype=np.float32) + 0.5
        x = torch.tensor(values, requires_grad=True)

        def call():
            getattr(torch, op)(x, 0).sum().backward()
            return x.grad.numpy()
        return call
    return build


def _torch_softmax(compiled=False):
    torch = _torch()
    softmax = _maybe_compiled(torch, lambda t: t.softmax(-1), compiled)
    x = torch.from_numpy(np.random.default_rng(RNG_SEED).standard_normal((256, 1000),
                                                                        dtype=np.float32))
    return lambda: softmax(x).numpy()


def _torch_conv_backward(compiled=False):
    torch = _torch()
    conv = torch.nn.Conv2d(32, 32, 5)
    x = torch.from_numpy(np.random.default_rng(RNG_SEED).random((64, 32, 24, 24),
                                                                dtype=np.float32))
    x.requires_grad_()

    def call():
        conv(x).relu().sum().backward()
        return conv.weight.grad.numpy(), x.grad.numpy()
    return call


# name -> (tinylab builder, torch builder, torch.compile applies, what the goal is)
MODEL_GOAL = "first call ≤ 3× warm + 1 s"
WORKLOADS = {
    "demo step 1 (beautiful_mnist train step b512, TinyJit)":
        (_tinylab_cnn_step(512), _torch_cnn_step(512), False, "≤ 2 s"),
    "CNN train step b128 (TinyJit)": (_tinylab_cnn_step(128), _torch_cnn_step(128), False,
                                      MODEL_GOAL),
    "ResNet-18 forward 1x3x224x224": (_tinylab_resnet, _torch_resnet, True, MODEL_GOAL),
    "transformer block fwd+bwd 4x64x128": (_tinylab_transformer, _torch_transformer, True,
                                           MODEL_GOAL),
    "cumsum 1024 fwd+bwd": (_tinylab_scan("cumsum"), _torch_scan("cumsum"), False, "≤ 0.5 s"),
    "cumprod 1024 fwd+bwd": (_tinylab_scan("cumprod"), _torch_scan("cumprod"), False,
                             "≤ 0.5 s"),
    "softmax 256x1000": (_tinylab_softmax, _torch_softmax, True, MODEL_GOAL),
    "conv 32->32 5x5 backward b64@24": (_tinylab_conv_backward, _torch_conv_backward, False,
                                        MODEL_GOAL),
}
