"""The tiny GPT (tinylab/examples/tiny_gpt.py) beside the same model in PyTorch with the same
weights: generation (tokens per second through the KV cache, one token per call) and one Adam
training step, timed interleaved in one process. `torch_twin` is also the tests' reference.
"""
from __future__ import annotations

import numpy as np

from bench.common import Row, median_times, optional_torch
from tinylab import Tensor, nn
from tinylab.examples.tiny_gpt import GPTConfig, TinyGPT, load_text, make_generate_step
from tinylab.examples.tiny_gpt import make_train_step, parameters
from tinylab.examples.tiny_gpt import position as bound


def torch_twin(torch, model: TinyGPT):
    """The same network in PyTorch, its weights copied from `model` (a tinylab TinyGPT).
    `twin(tokens)` is the full causal forward; `twin(token, start_pos)` one step through a
    KV cache, as in tinylab."""
    functional, config = torch.nn.functional, model.config

    def copy(t: Tensor):   # read a clone: realizing the parameter itself would merge equal ones
        return torch.nn.Parameter(torch.from_numpy(t.clone().numpy()))

    def linear(layer):
        out = torch.nn.Linear(*layer.weight.shape[::-1])
        out.weight, out.bias = copy(layer.weight), copy(layer.bias)
        return out

    def layer_norm(layer):
        out = torch.nn.LayerNorm(config.dim)
        out.weight, out.bias = copy(layer.weight), copy(layer.bias)
        return out

    class Attention(torch.nn.Module):
        def __init__(self, ours):
            super().__init__()
            self.qkv, self.proj, self.cache = linear(ours.qkv), linear(ours.proj), None

        def forward(self, x, start_pos=None):
            batch, length, dim = x.shape
            q, k, v = (t.reshape(batch, length, config.heads, -1).transpose(1, 2)
                       for t in self.qkv(x).chunk(3, dim=2))
            if start_pos is None:
                out = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                if self.cache is None or self.cache[0].shape[0] != batch:
                    shape = (batch, config.heads, config.context, dim // config.heads)
                    self.cache = (torch.zeros(shape), torch.zeros(shape))
                self.cache[0][:, :, start_pos:start_pos + 1] = k
                self.cache[1][:, :, start_pos:start_pos + 1] = v
                out = functional.scaled_dot_product_attention(
                    q, self.cache[0][:, :, :start_pos + 1], self.cache[1][:, :, :start_pos + 1])
            return self.proj(out.transpose(1, 2).reshape(batch, length, dim))

    class Block(torch.nn.Module):
        def __init__(self, ours):
            super().__init__()
            self.ln1, self.ln2 = layer_norm(ours.ln1), layer_norm(ours.ln2)
            self.attention = Attention(ours.attention)
            self.fc, self.out = linear(ours.fc), linear(ours.out)

        def forward(self, x, start_pos=None):
            x = x + self.attention(self.ln1(x), start_pos)
            return x + self.out(functional.gelu(self.fc(self.ln2(x))))

    class Twin(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.token, self.position = copy(model.token.weight), copy(model.position.weight)
            self.blocks = torch.nn.ModuleList(Block(b) for b in model.blocks)
            self.ln_f, self.head = layer_norm(model.ln_f), linear(model.head)

        def forward(self, tokens, start_pos=None):
            first = 0 if start_pos is None else start_pos
            x = self.token[tokens] + self.position[first:first + tokens.shape[1]]
            for block in self.blocks:
                x = block(x, start_pos)
            return self.head(self.ln_f(x))
    return Twin()


def _generation(torch, model: TinyGPT, twin, tokens: int):
    """Two callables that each generate `tokens` greedy tokens from position 0 (cache refilled)."""
    step = make_generate_step(model)

    def ours():
        token = 0
        for at in range(tokens):
            token = int(step(Tensor([[token]], dtype="int32"), bound(model, at)).numpy().argmax())

    @torch.no_grad()
    def theirs():
        token = 0
        for position in range(tokens):
            logits = twin(torch.tensor([[token]]), position)[:, -1, :]
            token = int(logits.softmax(-1).argmax())
    return ours, theirs


def _training(torch, model: TinyGPT, twin, batch: int):
    text = load_text()
    inputs, targets = text.batch(np.random.default_rng(0), batch, model.config.context)
    optimizer = nn.optim.Adam(parameters(model), lr=1e-4)
    train_step = make_train_step(model, optimizer)
    torch_optimizer = torch.optim.Adam(twin.parameters(), lr=1e-4)
    torch_inputs = torch.from_numpy(inputs.numpy()).long()
    torch_targets = torch.from_numpy(targets.numpy()).long()

    def theirs():
        torch_optimizer.zero_grad()
        logits = twin(torch_inputs)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), torch_targets.flatten())
        loss.backward()
        torch_optimizer.step()
        return loss.item()
    return (lambda: train_step(inputs, targets).item()), theirs


def run(tokens: int = 100, batch: int = 8, runs: int = 5) -> list[Row]:
    Tensor.manual_seed(0)
    config = GPTConfig(vocab_size=len(load_text().chars))
    model = TinyGPT(config)
    torch = optional_torch()
    if torch is None:
        return [Row("tiny GPT", "-", {}, notes=["PyTorch is not installed"])]
    torch.manual_seed(0)
    twin = torch_twin(torch, model)
    ours, theirs = _generation(torch, model, twin, tokens)
    times = median_times({"tinylab": ours, "torch": theirs}, runs, warmup=2)
    rates = {name: tokens / seconds for name, seconds in times.items()}
    rows = [Row(f"tiny GPT generate {tokens} tokens (KV cache)", "tokens/s", rates,
                "", rates["tinylab"] / rates["torch"], "torch",
                [f"{config}; one token per call, greedy"])]
    ours, theirs = _training(torch, model, twin, batch)
    times = median_times({"tinylab": ours, "torch": theirs}, runs, warmup=3)
    rows.append(Row(f"tiny GPT train step b{batch}x{config.context}", "ms/step",
                    {name: seconds * 1e3 for name, seconds in times.items()}, "",
                    times["torch"] / times["tinylab"], "torch", [f"{config}, Adam"]))
    return rows
