"""tinylab/examples/tiny_gpt.py against the same network in PyTorch (bench/tiny_gpt.py's twin,
weights copied across): the forward pass, the loss and Adam steps, generation through the KV cache
against the full forward, and bad input."""
from __future__ import annotations

import numpy as np
import pytest

from bench.tiny_gpt import torch_twin
from tinylab import GlobalCounters, Tensor, dtypes, nn
from tinylab.examples.tiny_gpt import (CharText, GPTConfig, TinyGPT, generate, load_text,
                                       make_generate_step, make_train_step, parameters,
                                       position)

torch = pytest.importorskip("torch")
CONFIG = GPTConfig(vocab_size=11, context=12, dim=16, heads=2, layers=2)


def tiny_model(seed: int = 0) -> TinyGPT:
    Tensor.manual_seed(seed)
    return TinyGPT(CONFIG)


def test_forward_and_loss_match_pytorch():
    model = tiny_model()
    twin = torch_twin(torch, model)
    tokens = np.random.default_rng(0).integers(0, CONFIG.vocab_size, (3, 9)).astype(np.int32)
    targets = np.roll(tokens, -1, axis=1)
    logits = model(Tensor(tokens))
    expected = twin(torch.from_numpy(tokens).long())
    np.testing.assert_allclose(logits.numpy(), expected.detach().numpy(), rtol=1e-4, atol=1e-4)
    loss = logits.sparse_categorical_crossentropy(Tensor(targets)).item()
    expected_loss = torch.nn.functional.cross_entropy(expected.flatten(0, 1),
                                                      torch.from_numpy(targets).long().flatten())
    assert loss == pytest.approx(expected_loss.item(), rel=1e-5)


def test_adam_steps_match_pytorch_and_lower_the_loss():
    text = CharText("the cat sat on a mat; a bat ate the hat. " * 4)
    config = GPTConfig(vocab_size=len(text.chars), context=8, dim=16, heads=2, layers=1)
    Tensor.manual_seed(1)
    model = TinyGPT(config)
    twin = torch_twin(torch, model)
    optimizer = nn.optim.Adam(nn.state.get_parameters(model), lr=1e-2)
    step = make_train_step(model, optimizer)
    torch_optimizer = torch.optim.Adam(twin.parameters(), lr=1e-2)
    rng, ours, theirs = np.random.default_rng(0), [], []
    for _ in range(6):
        inputs, targets = text.batch(rng, 4, config.context)
        ours.append(step(inputs, targets).item())
        torch_optimizer.zero_grad()
        logits = twin(torch.from_numpy(inputs.numpy()).long())
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1),
                                                 torch.from_numpy(targets.numpy()).long().flatten())
        loss.backward()
        torch_optimizer.step()
        theirs.append(loss.item())
    np.testing.assert_allclose(ours, theirs, rtol=2e-4)
    assert ours[-1] < ours[0] - 0.3, f"the loss did not fall: {ours}"


def test_cached_generation_gives_the_full_forward_logits():
    model = tiny_model(2)
    tokens = [3, 1, 4, 1, 5, 9, 2, 6]
    full = model(Tensor([tokens], dtype=dtypes.int32)).softmax(-1).numpy()[0]
    step = make_generate_step(model)
    for at, token in enumerate(tokens):
        cached = step(Tensor([[token]], dtype=dtypes.int32), position(model, at)).numpy()[0]
        np.testing.assert_allclose(cached, full[at], rtol=1e-4, atol=1e-6,
                                   err_msg=f"position {at}")
    twin = torch_twin(torch, model)
    with torch.no_grad():
        for at, token in enumerate(tokens):   # the twin's cache path agrees with ours too
            logits = twin(torch.tensor([[token]]), at)[0, -1]
            np.testing.assert_allclose(logits.softmax(-1).numpy(), full[at], rtol=1e-4,
                                       atol=1e-6)


def test_one_capture_serves_every_position_so_kernels_built_stay_flat():
    """Kernels built (compiled or loaded from the disk cache) after 2, 20 and 100 tokens: the
    same, and the one captured step is what every position launches."""
    Tensor.manual_seed(5)
    model = TinyGPT(GPTConfig(vocab_size=11, context=101, dim=8, heads=2, layers=1))
    step, built = make_generate_step(model), {}

    def count(generated):
        built[generated] = GlobalCounters.kernels_built
    GlobalCounters.reset()
    tokens = generate(model, [1], 100, step=step, on_token=count)
    assert len(tokens) == 101
    assert built[1] > 0 and built[2] == built[20] == built[100], built
    names = {launch.runner.name for launch in step.step.launches if launch.runner}
    assert any("start_pos" in name for name in names), names   # kernels named by the variable


def test_generate_samples_from_the_step_and_is_reproducible():
    model = tiny_model(3)
    first = generate(model, [1, 2], 5, seed=7)
    assert first == generate(model, [1, 2], 5, seed=7)
    assert first[:2] == [1, 2] and len(first) == 7
    assert all(0 <= t < CONFIG.vocab_size for t in first)
    caches = [b.attention.cache_k for b in model.blocks] + [b.attention.cache_v for b in model.blocks]
    trained = parameters(model)      # the KV caches are state, not parameters: Adam leaves them
    assert len(trained) == len(nn.state.get_parameters(model)) - len(caches) == 2 + 12 * 2 + 4
    assert not {id(c) for c in caches} & {id(t) for t in trained}


def test_text_round_trips_and_bad_input_is_named():
    text = load_text()
    assert text.decode(text.encode("The bench")) == "The bench"
    assert len(text.tokens) > 4000 and len(text.chars) < 64
    with pytest.raises(ValueError, match=r"CharText.encode: characters \['\{'\]"):
        text.encode("a{")
    model = tiny_model(4)
    with pytest.raises(ValueError, match="generate: prompt of 0 tokens"):
        generate(model, [], 3)
    with pytest.raises(ValueError, match="context 12"):
        generate(model, [1] * 10, 3)
    with pytest.raises(ValueError, match="one token per call, got 2"):
        model(Tensor([[1, 2]], dtype=dtypes.int32), 0)
