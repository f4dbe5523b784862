"""Real models through torch.compile(backend="tinylab") against eager in the same process:
transformers' ResNet, GPT-2, BERT, ViT and Llama built from small configs with random weights
(nothing is downloaded), each in inference (forward within 1e-4) and a training step (every
parameter's gradient within 1e-3 of its scale, floored at 1e-3 of the model's largest).
"""
import copy

import pytest

torch = pytest.importorskip("torch")
tf = pytest.importorskip("transformers")

from bridge_check import assert_close, assert_gradients_close  # noqa: E402


def resnet():
    return tf.ResNetForImageClassification(tf.ResNetConfig(
        num_labels=10, embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1],
        layer_type="basic"))


def gpt2():
    return tf.GPT2LMHeadModel(tf.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100,
                                            n_positions=32, attn_pdrop=0.0, resid_pdrop=0.0,
                                            embd_pdrop=0.0))


def bert():
    return tf.BertForMaskedLM(tf.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                                            num_attention_heads=2, intermediate_size=64,
                                            max_position_embeddings=32, hidden_dropout_prob=0.0,
                                            attention_probs_dropout_prob=0.0))


def vit():
    return tf.ViTForImageClassification(tf.ViTConfig(
        image_size=16, patch_size=4, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, num_labels=5, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0))


def llama():
    return tf.LlamaForCausalLM(tf.LlamaConfig(vocab_size=100, hidden_size=32,
                                              intermediate_size=64, num_hidden_layers=1,
                                              num_attention_heads=4, num_key_value_heads=2,
                                              max_position_embeddings=32))


def image(seed):
    return torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(seed))


def tokens(seed):
    return torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(seed))


MODELS = {"resnet": (resnet, image), "gpt2": (gpt2, tokens), "bert": (bert, tokens),
          "vit": (vit, image), "llama": (llama, tokens)}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_forward_matches_eager(name):
    make, inputs = MODELS[name]
    torch.manual_seed(0)
    model, x = make().eval(), inputs(0)
    torch._dynamo.reset()
    with torch.no_grad():
        expected = model(x).logits
        got = torch.compile(model, backend="tinylab")(x).logits
    assert_close(got, expected, 1e-4, what=f"{name} logits")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_training_step_matches_eager(name):
    make, inputs = MODELS[name]
    torch.manual_seed(0)
    eager = make().train()
    compiled = copy.deepcopy(eager)
    x = inputs(1)
    torch._dynamo.reset()
    (eager(x).logits ** 2).mean().backward()
    (torch.compile(compiled, backend="tinylab")(x).logits ** 2).mean().backward()
    assert_gradients_close(eager, compiled)


def _torchvision():
    """torchvision where it loads; its PyPI wheel is CUDA-linked and its ops library does not
    load against the CPU torch of the test extra ('operator torchvision::nms does not exist')."""
    try:
        import torchvision
        return torchvision
    except (ImportError, RuntimeError) as error:
        pytest.skip(f"torchvision does not load here ({type(error).__name__}: "
                    f"{str(error).splitlines()[0][:80]}); it stays optional")


def test_a_torchvision_resnet18_forward_matches_eager_where_torchvision_loads():
    torchvision = _torchvision()
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).eval()
    x = torch.randn(1, 3, 32, 32)
    torch._dynamo.reset()
    with torch.no_grad():
        assert_close(torch.compile(model, backend="tinylab")(x), model(x), 1e-4,
                     what="torchvision resnet18")
