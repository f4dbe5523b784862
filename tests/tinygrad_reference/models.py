"""Tiny models written the way tinygrad's examples and extra/models are (tinygrad's names only:
`from tinygrad import ...`), run by real tinygrad in make_reference.py and by tinylab through
`python -m tinylab.as_tinygrad` in check_models.py: a ResNet, a ViT whose MLP uses `.gelu()`, a
Llama-style block with a rotary table marked `is_param_(False)` and one LARS step, and a BERT
encoder. Weights come from numpy with a fixed seed and travel through safetensors.
"""
import numpy as np

from tinygrad import Context, Tensor, dtypes, nn
from tinygrad.nn.state import get_state_dict, load_state_dict, safe_load, safe_save


# ---- ResNet: basic blocks, batchnorm in eval mode ---------------------------------------------
class BasicBlock:
    def __init__(self, cin, cout, stride=1):
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = [] if stride == 1 and cin == cout else \
            [nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)]

    def __call__(self, x):
        out = self.bn1(self.conv1(x)).relu()
        out = self.bn2(self.conv2(out))
        return (out + x.sequential(self.downsample)).relu()


class ResNet:
    def __init__(self, classes=5):
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = [BasicBlock(8, 8), BasicBlock(8, 16, stride=2)]
        self.fc = nn.Linear(16, classes)

    def __call__(self, x):
        x = self.bn1(self.conv1(x)).relu().max_pool2d((2, 2))
        x = x.sequential(self.layer1)
        return self.fc(x.mean((2, 3)))


# ---- ViT: patches, class token, pre-norm blocks with a gelu MLP ------------------------------
class Attention:
    def __init__(self, dim, heads):
        self.heads = heads
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def __call__(self, x, mask=None):
        b, t, c = x.shape
        q, k, v = [y.reshape(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for y in self.qkv(x).chunk(3, dim=2)]
        out = q.scaled_dot_product_attention(k, v, attn_mask=mask)
        return self.proj(out.transpose(1, 2).reshape(b, t, c))


class ViTBlock:
    def __init__(self, dim, heads):
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.fc1, self.fc2 = nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)

    def __call__(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(self.fc1(self.ln2(x)).gelu())   # tinygrad's gelu: the tanh form


class ViT:
    def __init__(self, dim=16, heads=2, depth=2, patch=4, classes=5):
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls = Tensor.zeros(1, 1, dim)
        self.pos = Tensor.zeros(1, 5, dim)
        self.blocks = [ViTBlock(dim, heads) for _ in range(depth)]
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, classes)

    def __call__(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = self.cls.expand(x.shape[0], -1, -1).cat(x, dim=1) + self.pos
        x = x.sequential(self.blocks)
        return self.head(self.norm(x)[:, 0])


# ---- Llama-style block: RMSNorm, rotary embedding, causal attention, SwiGLU ------------------
def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (Tensor.arange(0, dim, 2)[:(dim // 2)] / dim))
    freqs = Tensor.arange(end).unsqueeze(1) * freqs.unsqueeze(0)
    return Tensor.stack(freqs.cos(), freqs.sin(), dim=-1).reshape(1, end, 1, dim // 2, 2)


def apply_rotary_emb(x, freqs_cis):
    a, b = x.reshape(*x.shape[:-1], -1, 2).chunk(2, dim=-1)
    c, d = freqs_cis[..., 0:1], freqs_cis[..., 1:2]
    return (a * c - b * d).cat(a * d + b * c, dim=-1).flatten(3)


class LlamaBlock:
    def __init__(self, dim=16, heads=2, hidden=32, max_context=8):
        self.heads, self.head_dim = heads, dim // heads
        self.attention_norm, self.ffn_norm = nn.RMSNorm(dim, 1e-5), nn.RMSNorm(dim, 1e-5)
        self.wq, self.wk = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.wv, self.wo = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.w1, self.w2 = nn.Linear(dim, hidden, bias=False), nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        # a buffer, not a parameter: the optimizer realizes it and leaves it as it is
        self.freqs_cis = precompute_freqs_cis(self.head_dim, max_context).contiguous() \
            .is_param_(False)

    def __call__(self, x):
        b, t, _ = x.shape
        h = self.attention_norm(x)
        q, k, v = [w(h).reshape(b, t, self.heads, self.head_dim) for w in (self.wq, self.wk,
                                                                          self.wv)]
        freqs = self.freqs_cis[:, :t]
        q, k = apply_rotary_emb(q, freqs), apply_rotary_emb(k, freqs)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        mask = Tensor.full((1, 1, t, t), float("-inf")).triu(1)
        out = q.scaled_dot_product_attention(k, v, mask).transpose(1, 2).reshape(b, t, -1)
        h = x + self.wo(out)
        n = self.ffn_norm(h)
        return h + self.w2(self.w1(n).silu() * self.w3(n))


# ---- BERT: embeddings, post-norm encoder layers with an attention mask, pooler ---------------
class BertLayer:
    def __init__(self, dim, heads):
        self.attention = Attention(dim, heads)
        self.ln1, self.ln2 = nn.LayerNorm(dim, eps=1e-12), nn.LayerNorm(dim, eps=1e-12)
        self.intermediate, self.output = nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)

    def __call__(self, x, mask):
        x = self.ln1(x + self.attention(x, mask))
        return self.ln2(x + self.output(self.intermediate(x).gelu()))


class Bert:
    def __init__(self, vocab=20, dim=16, heads=2, depth=2, positions=8):
        self.word, self.position = nn.Embedding(vocab, dim), nn.Embedding(positions, dim)
        self.token_type = nn.Embedding(2, dim)
        self.ln = nn.LayerNorm(dim, eps=1e-12)
        self.layers = [BertLayer(dim, heads) for _ in range(depth)]
        self.pooler = nn.Linear(dim, dim)

    def __call__(self, ids, types, attention):
        t = ids.shape[1]
        x = self.word(ids) + self.position(Tensor.arange(t).reshape(1, t)) + \
            self.token_type(types)
        x = self.ln(x)
        mask = (1.0 - attention.reshape(attention.shape[0], 1, 1, t).cast(dtypes.float32)) * -1e4
        for layer in self.layers:
            x = layer(x, mask)
        return x, self.pooler(x[:, 0]).tanh()


# ---- shared by both sides ---------------------------------------------------------------------
def seeded_weights(model, seed):
    """Every tensor of the model's state dict replaced by numpy draws (running variances kept
    positive), so both libraries run the same numbers."""
    rng = np.random.default_rng(seed)
    values = {}
    for name, t in get_state_dict(model).items():
        if name.endswith("num_batches_tracked"):
            values[name] = np.zeros(t.shape, np.int64)
        elif name.endswith("running_var"):
            values[name] = rng.uniform(0.5, 1.5, t.shape).astype(np.float32)
        else:
            values[name] = (rng.standard_normal(t.shape) * 0.3).astype(np.float32)
    return values


def through_safetensors(model, seed, path):
    """Save the seeded weights with safe_save and load them back with safe_load."""
    safe_save({k: Tensor(v) for k, v in seeded_weights(model, seed).items()}, str(path))
    load_state_dict(model, safe_load(str(path)))
    return model


def inputs(seed=7):
    rng = np.random.default_rng(seed)
    return {"image": rng.standard_normal((2, 3, 8, 8)).astype(np.float32),
            "tokens": rng.standard_normal((2, 6, 16)).astype(np.float32),
            "ids": rng.integers(0, 20, (2, 6)).astype(np.int32),
            "types": (np.arange(6) >= 3).astype(np.int32)[None].repeat(2, 0),
            "attention": np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]], np.int32)}


def run_all(workdir):
    """name -> numpy output of every model (and the Llama block's weights after a LARS step)."""
    data, out = inputs(), {}
    resnet = through_safetensors(ResNet(), 1, f"{workdir}/resnet.safetensors")
    out["resnet"] = resnet(Tensor(data["image"])).numpy()
    vit = through_safetensors(ViT(), 2, f"{workdir}/vit.safetensors")
    out["vit"] = vit(Tensor(data["image"])).numpy()
    llama = through_safetensors(LlamaBlock(), 3, f"{workdir}/llama.safetensors")
    x = Tensor(data["tokens"])
    out["llama"] = llama(x).numpy()
    params = nn.state.get_parameters(llama)
    optimizer = nn.optim.LARS(params, lr=0.1, momentum=0.9, weight_decay=1e-3, tcoef=0.01)
    with Context(TRAINING=1):   # tinygrad 0.14: the optimizer asks for TRAINING
        optimizer.zero_grad()
        loss = (llama(x) ** 2).mean().backward()
        loss.realize()  # before the step: read after it, tinygrad computes it from new weights
        optimizer.step()
    out["llama_loss"] = loss.numpy()
    out["llama_wq_after_lars"] = llama.wq.weight.numpy()
    out["llama_freqs_after_lars"] = llama.freqs_cis.numpy()
    bert = through_safetensors(Bert(), 4, f"{workdir}/bert.safetensors")
    hidden, pooled = bert(Tensor(data["ids"]), Tensor(data["types"]), Tensor(data["attention"]))
    out["bert_hidden"], out["bert_pooled"] = hidden.numpy(), pooled.numpy()
    return out
