"""A character-level GPT: train it on a short text, then generate with a KV cache.

    python -m tinylab.examples.tiny_gpt                   # train 150 steps, generate 100 tokens
    python -m tinylab.examples.tiny_gpt --steps 50 --tokens 120

Decoder-only transformer (token + position embeddings, pre-LayerNorm blocks of causal
self-attention and a GELU MLP) trained with Adam on tiny_gpt_text.txt (our own text, see
tiny_gpt_text.NOTICE.md). Generation feeds one token per call to a TinyJit-ed step; each
attention layer writes its key and value into a cache at `start_pos` and attends to the cache up
to it. Uses only the public API (Tensor, nn, TinyJit, Variable); tests/examples and bench/tiny_gpt.py
compare it with the same model in PyTorch.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tinylab import GlobalCounters, Tensor, TinyJit, Variable, dtypes, nn

TEXT = Path(__file__).with_name("tiny_gpt_text.txt")


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int
    context: int = 128      # the longest sequence: position embeddings and the KV cache
    dim: int = 64
    heads: int = 4
    layers: int = 2


class Attention:
    """Causal multi-head self-attention; with `start_pos` it reads and writes the KV cache."""

    def __init__(self, config: GPTConfig):
        self.heads, self.context = config.heads, config.context
        self.qkv = nn.Linear(config.dim, 3 * config.dim)
        self.proj = nn.Linear(config.dim, config.dim)
        self.cache_k: Tensor | None = None
        self.cache_v: Tensor | None = None

    def __call__(self, x: Tensor, start_pos=None) -> Tensor:
        batch, length, dim = x.shape
        q, k, v = (t.reshape(batch, length, self.heads, dim // self.heads).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=2))          # each (batch, heads, length, hd)
        if start_pos is None:
            out = q.scaled_dot_product_attention(k, v, is_causal=True)
        else:
            keys, values = self.write_cache(k, v, start_pos)
            out = q.scaled_dot_product_attention(keys, values)   # one query sees every key so far
        return self.proj(out.transpose(1, 2).reshape(batch, length, dim))

    def write_cache(self, k: Tensor, v: Tensor, start_pos) -> tuple[Tensor, Tensor]:
        """Store k, v (batch, heads, 1, hd) at position start_pos; the cache up to it."""
        if k.shape[2] != 1:
            raise ValueError(f"Attention: the KV cache takes one token per call, got {k.shape[2]}")
        if self.cache_k is None or self.cache_k.shape[0] != k.shape[0]:
            shape = k.shape[:2] + (self.context, k.shape[3])
            # each cache from its own host zeros: equal lazy values (Tensor.zeros twice) are one
            # node in tinylab and would share one buffer
            self.cache_k = Tensor(np.zeros(shape, np.float32), requires_grad=False).realize()
            self.cache_v = Tensor(np.zeros(shape, np.float32), requires_grad=False).realize()
        self.cache_k[:, :, start_pos:start_pos + 1] = k
        self.cache_v[:, :, start_pos:start_pos + 1] = v
        # written now, before they are read (64 kernels a step instead of 156). Left lazy, the
        # next write fails in the plain path (KeyError on a COPY of the cache in engine.realize)
        # and jitted steps drift from the full forward by 1e-3: both reported, issue 16
        Tensor.realize(self.cache_k, self.cache_v)
        return self.cache_k[:, :, :start_pos + 1], self.cache_v[:, :, :start_pos + 1]


class Block:
    def __init__(self, config: GPTConfig):
        self.ln1, self.ln2 = nn.LayerNorm(config.dim), nn.LayerNorm(config.dim)
        self.attention = Attention(config)
        self.fc = nn.Linear(config.dim, 4 * config.dim)
        self.out = nn.Linear(4 * config.dim, config.dim)

    def __call__(self, x: Tensor, start_pos=None) -> Tensor:
        x = x + self.attention(self.ln1(x), start_pos)
        return x + self.out(self.fc(self.ln2(x)).gelu())


class TinyGPT:
    """tokens (batch, length) int -> logits (batch, length, vocab). Without start_pos the whole
    sequence runs with a causal mask; with it, one token at position start_pos through the cache."""

    def __init__(self, config: GPTConfig):
        self.config = config
        self.token = nn.Embedding(config.vocab_size, config.dim)
        self.position = nn.Embedding(config.context, config.dim)
        self.blocks = [Block(config) for _ in range(config.layers)]
        self.ln_f = nn.LayerNorm(config.dim)
        self.head = nn.Linear(config.dim, config.vocab_size)
        # every parameter gets a buffer of its own now: a TinyJit step must not close over lazy
        # tensors, and equal lazy values (LayerNorm's ones) realized apart would share one node
        for parameter in nn.state.get_parameters(self):
            parameter.replace(Tensor(parameter.numpy()))

    def __call__(self, tokens: Tensor, start_pos=None) -> Tensor:
        length = tokens.shape[1]
        first = 0 if start_pos is None else start_pos
        x = self.token(tokens) + self.position.weight[first:first + length]
        for block in self.blocks:
            x = block(x, start_pos)
        return self.head(self.ln_f(x))


# ---- data ----
class CharText:
    """A text as integer tokens, one per distinct character (sorted)."""

    def __init__(self, text: str):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}
        self.tokens = np.array([self.index[c] for c in text], dtype=np.int32)

    def encode(self, text: str) -> list[int]:
        missing = sorted(set(text) - set(self.index))
        if missing:
            raise ValueError(f"CharText.encode: characters {missing} are not in the vocabulary")
        return [self.index[c] for c in text]

    def decode(self, tokens) -> str:
        return "".join(self.chars[int(t)] for t in tokens)

    def batch(self, rng: np.random.Generator, size: int, length: int):
        """`size` random windows: inputs and their next characters, (size, length) each."""
        starts = rng.integers(0, len(self.tokens) - length - 1, size)
        windows = np.stack([self.tokens[s:s + length + 1] for s in starts])
        return Tensor(windows[:, :-1]), Tensor(windows[:, 1:])


def load_text() -> CharText:
    return CharText(TEXT.read_text(encoding="utf-8"))


# ---- training and generation ----
def parameters(model: TinyGPT) -> list[Tensor]:
    """The trained tensors: every tensor of the model but the KV caches (requires_grad=False)."""
    return [t for t in nn.state.get_parameters(model) if t.requires_grad is not False]


def make_train_step(model: TinyGPT, optimizer):
    @TinyJit
    @Tensor.train()
    def train_step(inputs: Tensor, targets: Tensor) -> Tensor:
        optimizer.zero_grad()
        loss = model(inputs).sparse_categorical_crossentropy(targets).backward()
        optimizer.step()
        return loss
    return train_step


def train(model: TinyGPT, text: CharText, steps: int, batch: int = 8, lr: float = 3e-3,
          seed: int = 0, report=None) -> list[float]:
    """Adam on random windows of the text; returns the loss of every step."""
    optimizer = nn.optim.Adam(parameters(model), lr=lr)
    train_step, rng, losses = make_train_step(model, optimizer), np.random.default_rng(seed), []
    for i in range(steps):
        inputs, targets = text.batch(rng, batch, model.config.context)
        losses.append(train_step(inputs, targets).item())
        if report is not None:
            report(i, losses[-1])
    return losses


def make_generate_step(model: TinyGPT, temperature: float = 1.0) -> TinyJit:
    """step(token (1, 1) int, start_pos) -> probabilities of the next token (1, vocab).
    start_pos is a bound Variable: the kernels take it as an int argument, so the one capture
    replays at every position (an int would be frozen into the capture)."""
    @TinyJit
    def step(token: Tensor, start_pos: Variable) -> Tensor:
        logits = model(token, start_pos)[:, -1, :]
        return (logits / temperature).softmax(-1).realize()
    return step


def position(model: TinyGPT, value: int) -> Variable:
    """start_pos bound to `value`: every position of the context, 0 (the first token) included."""
    return Variable("start_pos", 0, model.config.context - 1).bind(value)


def generate(model: TinyGPT, prompt: list[int], count: int, temperature: float = 1.0,
             seed: int = 0, step=None, on_token=None) -> list[int]:
    """Feed the prompt through the cache one token at a time, then sample `count` tokens (the
    pick from the step's probabilities happens on the host, as a sampler's job)."""
    if not prompt or len(prompt) + count > model.config.context:
        raise ValueError(f"generate: prompt of {len(prompt)} tokens + {count} new ones must be "
                         f"between 1 and the context {model.config.context}")
    step = make_generate_step(model, temperature) if step is None else step
    rng, tokens = np.random.default_rng(seed), list(prompt)
    for at in range(len(prompt) + count - 1):
        probabilities = step(Tensor([[tokens[at]]], dtype=dtypes.int32), position(model, at))
        if at + 1 < len(tokens):
            continue                                        # still reading the prompt
        p = probabilities.numpy()[0].astype(np.float64)
        tokens.append(int(rng.choice(len(p), p=p / p.sum())))
        if on_token is not None:
            on_token(len(tokens) - len(prompt))
    return tokens


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150, help="training steps (batch 8 x 128)")
    parser.add_argument("--tokens", type=int, default=100, help="tokens to generate (up to 127)")
    args = parser.parse_args(argv)
    text = load_text()
    Tensor.manual_seed(0)
    config = GPTConfig(vocab_size=len(text.chars))
    model = TinyGPT(config)
    print(f"text: {len(text.tokens)} characters, {len(text.chars)} distinct; model: {config}")
    start = time.perf_counter()

    def report(i, loss):
        if i % 25 == 24 or i == args.steps - 1:
            print(f"step {i + 1:4d}/{args.steps}  loss {loss:.3f}  "
                  f"({time.perf_counter() - start:.1f} s)", flush=True)
    train(model, text, args.steps, report=report)
    built = {}

    def count_kernels(generated: int):
        if generated in (20, args.tokens):
            built[generated] = GlobalCounters.kernels_built
    GlobalCounters.reset()
    start = time.perf_counter()
    tokens = generate(model, text.encode("T"), args.tokens, temperature=0.8,
                      on_token=count_kernels)
    seconds = time.perf_counter() - start
    print("---\n" + text.decode(tokens) + "\n---")
    print(f"generated {args.tokens} tokens in {seconds:.2f} s ({args.tokens / seconds:.1f} "
          f"tokens/s); kernels built (compiled or loaded from the disk cache): "
          + ", ".join(f"{count} after {n} tokens" for n, count in sorted(built.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
