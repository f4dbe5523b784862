"""Cases for the ATen table (tinylab/torch/aten_table.py): small PyTorch functions, each traced to
an ATen graph with make_fx (its backward ops too, through torch.autograd.grad), run through the
bridge's GraphProgram and compared with PyTorch eager. `CASES` must reach every row of the table
(test_aten_ops.py checks that); inputs are made from a seed, so a failure reproduces.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, math.inf, -math.inf, math.nan, 1e30, -1e-30]


def randn(*shape):
    return ("randn", shape)


def positive(*shape):
    return ("positive", shape)


def unit(*shape):
    return ("unit", shape)


def ints(*shape, high=5):
    return ("ints", shape, high)


def bools(*shape):
    return ("bools", shape)


def special():
    return ("special", ())


def transposed(*shape):
    """A non-contiguous input: the transpose of a (shape[1], shape[0]) tensor."""
    return ("transposed", shape)


def make(spec, generator: torch.Generator) -> torch.Tensor:
    kind, shape = spec[0], spec[1]
    if kind == "randn":
        return torch.randn(*shape, generator=generator)
    if kind == "positive":
        return torch.rand(*shape, generator=generator) + 0.5
    if kind == "unit01":  # probabilities, strictly inside (0, 1)
        return torch.rand(*shape, generator=generator) * 0.9 + 0.05
    if kind == "unit":
        return torch.rand(*shape, generator=generator) * 1.8 - 0.9
    if kind == "ints":
        return torch.randint(0, spec[2], shape, generator=generator)
    if kind == "bools":
        return torch.rand(*shape, generator=generator) > 0.5
    if kind == "bools-keep":  # a mask that keeps at least one key per query
        mask = torch.rand(*shape, generator=generator) > 0.5
        mask[..., 0] = True
        return mask
    if kind == "distinct":  # per row, distinct indices in [0, spec[2]) (writes that never clash)
        return torch.rand(*shape[:-1], spec[2], generator=generator).argsort(-1)[..., :shape[-1]]
    if kind == "special":
        return torch.tensor(SPECIAL)
    if kind == "transposed":
        return torch.randn(shape[1], shape[0], generator=generator).t()
    raise ValueError(kind)


class Case:
    """fn(*inputs) -> tensor or tuple; grad=True also differentiates the float inputs."""

    def __init__(self, name, fn, inputs, grad=False, atol=0.0, frozen=()):
        self.name, self.fn, self.inputs, self.grad, self.atol = name, fn, inputs, grad, atol
        self.frozen = frozen   # positions of float inputs that take no gradient (running stats)

    def __repr__(self):
        return self.name


def _pair(fn):
    return lambda a, b: fn(a, b)


UNARY = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "exp2": torch.exp2,
    "expm1": torch.expm1, "sin": torch.sin, "cos": torch.cos, "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "erf": torch.erf, "erfc": torch.erfc, "atan": torch.atan,
    "sinh": torch.sinh, "cosh": torch.cosh, "asinh": torch.asinh, "floor": torch.floor,
    "ceil": torch.ceil, "trunc": torch.trunc, "round": torch.round, "sign": torch.sign,
    "relu": torch.relu, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu, "mish": F.mish, "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid,
    "hardtanh": lambda x: F.hardtanh(x, -0.5, 0.7), "leaky_relu": lambda x: F.leaky_relu(x, 0.1),
    "elu": lambda x: F.elu(x, 0.7), "selu": F.selu, "celu": lambda x: F.celu(x, 1.3),
    "softplus": lambda x: F.softplus(x, 2.0, 3.0), "threshold": lambda x: F.threshold(x, 0.1, 7),
    "isnan": torch.isnan, "isinf": torch.isinf, "logical_not": torch.logical_not,
    "round_decimals": lambda x: torch.round(x, decimals=1), "tan": torch.tan,
    "square": torch.square,
}
POSITIVE = {"log": torch.log, "log2": torch.log2, "log10": torch.log10, "log1p": torch.log1p,
            "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal,
            "acosh": lambda x: torch.acosh(x + 1)}
UNIT = {"asin": torch.asin, "acos": torch.acos, "atanh": torch.atanh}
SMOOTH = {"neg", "abs", "exp", "exp2", "expm1", "sin", "cos", "tanh", "sigmoid", "erf", "erfc",
          "atan", "sinh", "cosh", "asinh", "relu", "gelu", "gelu_tanh", "silu", "mish",
          "hardswish", "hardsigmoid", "hardtanh", "leaky_relu", "elu", "selu", "celu",
          "softplus", "threshold", "tan", "square", "log", "log2", "log10", "log1p", "sqrt",
          "rsqrt", "reciprocal", "acosh", "asin", "acos", "atanh"}
BINARY = {
    "add": torch.add, "add_alpha": lambda a, b: torch.add(a, b, alpha=2.5),
    "sub": torch.sub, "sub_alpha": lambda a, b: torch.sub(a, b, alpha=0.5),
    "rsub": lambda a, b: torch.rsub(a, b, alpha=2), "mul": torch.mul, "div": torch.div,
    "maximum": torch.maximum, "minimum": torch.minimum, "atan2": torch.atan2,
    "copysign": torch.copysign, "logaddexp": torch.logaddexp, "pow": torch.pow,
    "lerp": lambda a, b: torch.lerp(a, b, 0.3), "lerp_tensor": lambda a, b: torch.lerp(a, b, b),
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt,
    "ge": torch.ge, "fmod": torch.fmod, "remainder": torch.remainder,
    "floor_divide": torch.floor_divide, "div_trunc": lambda a, b: torch.div(a, b,
                                                                           rounding_mode="trunc"),
}
SMOOTH_BINARY = {"add", "add_alpha", "sub", "sub_alpha", "rsub", "mul", "div", "maximum",
                 "minimum", "atan2", "logaddexp", "lerp", "lerp_tensor"}


def _pointwise_cases() -> list:
    out = []
    for name, fn in UNARY.items():
        out.append(Case(name, fn, [randn(3, 5)], grad=name in SMOOTH))
        if name not in ("round_decimals",):
            out.append(Case(f"{name}-special", fn, [special()]))
    for name, fn in {**POSITIVE, **UNIT}.items():
        out.append(Case(name, fn, [positive(3, 5) if name in POSITIVE else unit(3, 5)],
                        grad=True))
    for name, fn in BINARY.items():
        grad = name in SMOOTH_BINARY
        out.append(Case(name, fn, [randn(4, 5), randn(4, 5)], grad=grad))
        out.append(Case(f"{name}-broadcast", fn, [randn(4, 1), randn(1, 5)], grad=grad))
        out.append(Case(f"{name}-strided", fn, [transposed(4, 5), randn(5)], grad=grad))
    out += [
        Case("pow-positive", torch.pow, [positive(4, 5), randn(4, 5)], grad=True),
        Case("pow-scalar", lambda x: x ** 3 + x ** 0.5 * 0 + (x * x) ** -1, [positive(6)],
             grad=True),
        Case("pow-scalar-base", lambda x: torch.pow(2.0, x), [randn(6)], grad=True),
        Case("add-scalar", lambda x: (x + 2) * 3 - 1 / x, [positive(6)], grad=True),
        Case("remainder-scalar", lambda x: torch.remainder(x, 1.5) + torch.remainder(2.0, x),
             [positive(6)]),
        Case("div-scalar-mode", lambda x: torch.div(x, 2, rounding_mode="floor"), [randn(7)]),
        Case("int-arith", lambda a, b: (a * b + a // (b + 1), a % (b + 1), a - b),
             [ints(8, high=9), ints(8, high=9)]),
        Case("int-true-div", lambda a, b: a / (b + 1), [ints(8), ints(8)]),
        Case("logical", lambda a, b: (a & b, a | b, a ^ b, torch.logical_and(a, b),
                                      torch.logical_or(a, b), torch.logical_xor(a, b), ~a),
             [bools(6), bools(6)]),
        Case("bitwise-int", lambda a, b: (a & b, a | b, a ^ b, ~a), [ints(6, high=64),
                                                                   ints(6, high=64)]),
        Case("where", lambda c, a, b: torch.where(c, a, b), [bools(3, 4), randn(3, 4),
                                                             randn(1, 4)], grad=True),
        Case("where-scalar", lambda c, a: (torch.where(c, a, 2.0), torch.where(c, -1.0, a)),
             [bools(3, 4), randn(3, 4)], grad=True),
        Case("masked_fill", lambda x, m: x.masked_fill(m, -3.0) +
             x.masked_fill(m, torch.tensor(2.0)), [randn(3, 4), bools(3, 4)], grad=True),
        Case("clamp", lambda x: (x.clamp(-0.5, 0.5), x.clamp(min=0.1), x.clamp(max=0.2),
                                 torch.clamp_min(x, 0.3), torch.clamp_max(x, -0.3)),
             [randn(10)], grad=True),
        Case("clamp-tensor", lambda x, lo: x.clamp(lo, lo + 1), [randn(3, 4), randn(4)],
             grad=True),
    ]
    return out


def _reduction_cases() -> list:
    return [
        Case("sum", lambda x: (x.sum(), x.sum(1), x.sum((0, 2), keepdim=True),
                               x.sum(dtype=torch.float64)), [randn(3, 4, 5)], grad=True),
        Case("sum-int", lambda x: (x.sum(), x.sum(0)), [ints(4, 5)]),
        Case("mean", lambda x: (x.mean(), x.mean(-1), x.mean((0, 1), keepdim=True)),
             [randn(3, 4, 5)], grad=True),
        Case("prod", lambda x: (x.prod(), x.prod(1), x.prod(0, keepdim=True)),
             [positive(3, 4)], grad=True),
        Case("amax", lambda x: (x.amax(1), x.amin((0, 1)), x.amax(-1, keepdim=True)),
             [randn(3, 4, 5)], grad=True),
        Case("max-full", lambda x: (x.max(), x.min()), [randn(4, 5)], grad=True),
        Case("max-dim", lambda x: (*x.max(1), *x.min(0, keepdim=True)), [randn(4, 5)],
             grad=True),
        Case("max-ties", lambda x: (*x.max(1),), [ints(4, 6, high=2)]),
        Case("argmax", lambda x: (x.argmax(), x.argmax(1), x.argmin(0, keepdim=True)),
             [randn(4, 5)]),
        Case("any-all", lambda m: (m.any(), m.any(1), m.all(), m.all(0), m.any((0, 1))),
             [bools(4, 5)]),
        Case("var", lambda x: (x.var(1), x.var((0, 1), correction=0), x.std(0),
                               *torch.var_mean(x, 1, keepdim=True)), [randn(4, 5, 3)],
             grad=True),
        Case("logsumexp", lambda x: (x.logsumexp(1), x.logsumexp((0, 1), keepdim=True)),
             [randn(3, 4, 2)], grad=True),
        Case("cumsum", lambda x: (x.cumsum(1), x.cumprod(0), x.cumsum(0, dtype=torch.float64)),
             [unit(4, 5)], grad=True),
        Case("softmax", lambda x: (x.softmax(-1), x.log_softmax(1), F.softmax(x, 0)),
             [randn(3, 4, 5)], grad=True),
        Case("softmax-special", lambda x: x.reshape(3, 4).softmax(-1), [special()]),
        Case("sort", lambda x: (*x.sort(1), *torch.sort(x, dim=0, descending=True, stable=True)),
             [randn(4, 6)], grad=True),
        Case("topk", lambda x: (*x.topk(3, 1), *x.topk(2, 0, largest=False)), [randn(5, 6)],
             grad=True),
    ]


def _product_cases() -> list:
    return [
        Case("mm", lambda a, b: a @ b, [randn(3, 4), randn(4, 5)], grad=True),
        Case("mm-strided", lambda a, b: a @ b, [transposed(3, 4), transposed(4, 5)], grad=True),
        Case("bmm", lambda a, b: torch.bmm(a, b), [randn(2, 3, 4), randn(2, 4, 5)], grad=True),
        Case("matmul-broadcast", lambda a, b: a @ b, [randn(2, 1, 3, 4), randn(3, 4, 2)],
             grad=True),
        Case("mv-dot", lambda a, v: (a @ v, v.dot(v), torch.mv(a, v)), [randn(3, 4),
                                                                      randn(4)], grad=True),
        Case("addmm", lambda b, x, w: (torch.addmm(b, x, w), torch.addmm(b, x, w, beta=0.5,
                                                                          alpha=2)),
             [randn(5), randn(3, 4), randn(4, 5)], grad=True),
        Case("baddbmm", lambda b, x, w: torch.baddbmm(b, x, w, alpha=0.5),
             [randn(2, 3, 5), randn(2, 3, 4), randn(2, 4, 5)], grad=True),
        Case("linear", lambda x, w, b: F.linear(x, w, b), [randn(2, 3, 4), randn(5, 4),
                                                           randn(5)], grad=True),
        Case("einsum", lambda a, b: torch.einsum("bij,bjk->bik", a, b),
             [randn(2, 3, 4), randn(2, 4, 5)], grad=True),
    ]


def _view_cases() -> list:
    return [
        Case("view", lambda x: (x.view(4, 6) * 2, x.reshape(-1, 3) + 1, x.flatten() - 1),
             [randn(2, 3, 4)], grad=True),
        Case("view-strided", lambda x: x.reshape(-1) * 2, [transposed(4, 6)], grad=True),
        Case("permute", lambda x: (x.permute(2, 0, 1) * 1, x.transpose(0, 2) + 0, x.mT * 2),
             [randn(2, 3, 4)], grad=True),
        Case("t", lambda x: x.t() * 3, [randn(3, 4)], grad=True),
        Case("expand", lambda x: (x.expand(3, 4, 5) * 1, x.expand(-1, 4, -1) + 1),
             [randn(3, 1, 5)], grad=True),
        Case("squeeze", lambda x: (x.squeeze() * 2, x.squeeze(1) + 1, x.squeeze((1, 3)) - 1,
                                   x.unsqueeze(0) * 3, x.unsqueeze(-1) * 4),
             [randn(3, 1, 4, 1)], grad=True),
        Case("slice", lambda x: (x[1:3] * 2, x[:, ::2] + 1, x[:, 1:-1:3] - 1, x[-2:, 5:] * 3,
                                 x[:, 2:100] * 1), [randn(4, 7)], grad=True),
        Case("select", lambda x: (x[1] * 2, x[:, -1] + 1, x[2, 3] * 3), [randn(4, 5)],
             grad=True),
        Case("narrow", lambda x: x.narrow(1, 1, 3) * 2 + x.narrow(0, -2, 2).sum(), [randn(4, 5)],
             grad=True),
        Case("cat", lambda a, b: (torch.cat([a, b], 1) * 1, torch.cat([a, a], 0) + 1),
             [randn(2, 3), randn(2, 4)], grad=True),
        Case("stack", lambda a, b: (torch.stack([a, b]) * 1, torch.stack([a, b], -1) + 1),
             [randn(2, 3), randn(2, 3)], grad=True),
        Case("split", lambda x: tuple(p * (i + 1) for i, p in enumerate(x.split(2, 1))) +
             tuple(p * 2 for p in x.split([1, 3], 0)), [randn(4, 5)], grad=True),
        Case("chunk-unbind", lambda x: tuple(p * 2 for p in x.chunk(2, 0)) +
             tuple(p + 1 for p in x.unbind(1)), [randn(4, 3)], grad=True),
        Case("flip-roll", lambda x: (x.flip(0, 1) * 1, x.roll(2, 1) + 1, x.roll((1, -1), (0, 1))),
             [randn(3, 4)], grad=True),
        Case("repeat", lambda x: (x.repeat(2, 3) * 1, x.repeat(2, 1, 1) + 1), [randn(2, 3)],
             grad=True),
        Case("pad", lambda x: (F.pad(x, (1, 2)) * 1, F.pad(x, (1, 0, 0, 2), value=3.0) + 1,
                               F.pad(x, (-1, 1, 1, -1)) * 2), [randn(3, 4)], grad=True),
        Case("tril-triu", lambda x: (x.tril() * 1, x.triu(1) + 1, x.tril(-1) * 2), [randn(4, 4)],
             grad=True),
        Case("diagonal", lambda x: (x.diagonal() * 1, x.diagonal(1) + 1, x.diagonal(0, 1, 2) * 2),
             [randn(3, 4, 4)], grad=True),
        Case("unfold", lambda x: x.unfold(1, 3, 2) * 2, [randn(2, 7)], grad=True),
        Case("index", lambda x, i: (x[i] * 1, x[:, i] + 1, x[i, i] * 2), [randn(5, 5),
                                                                          ints(3, high=5)],
             grad=True),
        Case("index_select", lambda x, i: (x.index_select(0, i) * 1, x.index_select(1, i) + 1),
             [randn(5, 5), ints(4, high=5)], grad=True),
        Case("gather", lambda x, i: x.gather(1, i) * 2, [randn(4, 5), ints(4, 3, high=5)],
             grad=True),
        Case("scatter", lambda x, i, s: (x.scatter(1, i, s), x.scatter(1, i, 2.5),
                                         x.scatter_add(1, i, s),
                                         x.scatter_reduce(1, i, s, "amax", include_self=True)),
             [randn(3, 5), ("distinct", (3, 2), 5), randn(3, 2)]),
        Case("embedding", lambda w, i: F.embedding(i, w) * 2, [randn(7, 4), ints(2, 3, high=7)],
             grad=True),
        Case("embedding-padding", lambda w, i: F.embedding(i, w, padding_idx=1) * 2,
             [randn(7, 4), ints(2, 3, high=7)], grad=True),
        Case("view-chain", lambda x: (x.t()[1:, ::2].reshape(-1) * 2).cumsum(0),
             [randn(6, 5)], grad=True),
    ]


def _creation_cases() -> list:
    return [
        Case("full", lambda x: (x + torch.zeros(3, 4), x * torch.ones(4), x + torch.full((3, 1), 2.5),
                                torch.zeros_like(x) + 1, torch.ones_like(x, dtype=torch.int64),
                                torch.full_like(x, 7.0), x.new_zeros(2) + 1, x.new_ones((2, 2)),
                                x.new_full((2,), 3.0), torch.empty_like(x).fill_(2.0)),
             [randn(3, 4)]),
        Case("arange", lambda x: (x + torch.arange(4), torch.arange(1, 7, 2) * 1,
                                  torch.arange(0.0, 1.0, 0.25) + x[0, 0]), [randn(3, 4)]),
        Case("to-dtype", lambda x: (x.to(torch.float64) * 1, x.to(torch.int32) + 1,
                                    x.half().float(), (x > 0).long() * 2), [randn(3, 4)]),
        Case("clone-detach", lambda x: (x.clone() * 2, x.detach() + 1, x.contiguous() * 3),
             [randn(3, 4)], grad=True),
        Case("fill-tensor", lambda x, v: torch.empty_like(x).fill_(v[0]) + x, [randn(3, 4),
                                                                               randn(2)]),
        Case("scalar-tensor", lambda x: x * torch.scalar_tensor(3.0), [randn(3)]),
        Case("empty-copy", lambda x: (torch.empty(3, 4).copy_(x) * 2, torch.empty(3, 4).fill_(1.5),
                                      x.new_empty((2,)).fill_(3.0), torch.zeros(2, 3).copy_(x[0, :3])),
             [randn(3, 4)]),
        Case("unsafe-split", lambda x: tuple(p * 2 for p in x.unsafe_split(2, 1)) +
             tuple(p + 1 for p in x.unsafe_split_with_sizes([1, 3], 0)), [randn(4, 4)],
             grad=True),
    ]


def _bn_train(x, w, b, mean, var):
    running_mean, running_var = mean.clone(), var.clone()
    out = F.batch_norm(x, running_mean, running_var, w, b, training=True, momentum=0.2)
    return out, running_mean, running_var


def _network_cases() -> list:
    sdpa = F.scaled_dot_product_attention
    return [
        Case("conv2d", lambda x, w, b: F.conv2d(x, w, b, padding=1), [randn(2, 3, 6, 6),
                                                                      randn(4, 3, 3, 3),
                                                                      randn(4)], grad=True),
        Case("conv2d-stride-groups", lambda x, w: F.conv2d(x, w, stride=2, dilation=2,
                                                           padding=(1, 2), groups=2),
             [randn(2, 4, 9, 8), randn(6, 2, 3, 2)], grad=True),
        Case("conv1d-3d", lambda x, w, v, u: (F.conv1d(x, w, padding=2), F.conv3d(v, u, stride=2)),
             [randn(2, 3, 9), randn(4, 3, 3), randn(1, 2, 5, 5, 5), randn(3, 2, 2, 2, 2)],
             grad=True),
        Case("conv-transpose", lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1,
                                                               output_padding=1),
             [randn(2, 3, 4, 4), randn(3, 2, 3, 3)], grad=True),
        Case("conv-transpose-groups", lambda x, w, b: F.conv_transpose1d(x, w, b, groups=2),
             [randn(1, 4, 5), randn(4, 3, 3), randn(6)], grad=True),
        Case("batch_norm-train", _bn_train, [randn(4, 3, 5, 5), randn(3), randn(3), randn(3),
                                             positive(3)], grad=True, atol=1e-5, frozen=(3, 4)),
        Case("batch_norm-eval", lambda x, w, b, m, v: F.batch_norm(x, m, v, w, b, eps=1e-3),
             [randn(4, 3, 5), randn(3), randn(3), randn(3), positive(3)], grad=True,
             frozen=(3, 4)),
        Case("batch_norm-no-affine", lambda x: F.batch_norm(x, None, None, training=True),
             [randn(4, 3, 2, 2)], grad=True),
        Case("layer_norm", lambda x, w, b: (F.layer_norm(x, (5,), w, b),
                                            F.layer_norm(x, (4, 5), eps=1e-3)),
             [randn(3, 4, 5), randn(5), randn(5)], grad=True),
        Case("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), [randn(3, 4, 3, 3),
                                                                      randn(4), randn(4)],
             grad=True),
        Case("max_pool2d", lambda x: F.max_pool2d(x, 2) + 0, [randn(2, 3, 6, 6)], grad=True),
        Case("max_pool2d-indices", lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True),
             [randn(2, 3, 7, 7)], grad=True),
        Case("max_pool-ties", lambda x: F.max_pool2d(x.float(), 2, 1), [ints(1, 2, 5, 5, high=2)]),
        Case("max_pool1d-3d", lambda x, v: (F.max_pool1d(x, 3, 2, ceil_mode=True),
                                            F.max_pool3d(v, 2)),
             [randn(2, 3, 8), randn(1, 2, 4, 4, 4)], grad=True),
        Case("avg_pool", lambda x: (F.avg_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 2, ceil_mode=True),
                                    F.avg_pool2d(x, 3, 1, 1, count_include_pad=False),
                                    F.avg_pool2d(x, 2, divisor_override=3)),
             [randn(2, 3, 7, 7)], grad=True),
        Case("avg_pool1d-3d", lambda x, v: (F.avg_pool1d(x, 3), F.avg_pool3d(v, 2)),
             [randn(2, 3, 9), randn(1, 2, 4, 4, 4)], grad=True),
        Case("adaptive_avg_pool", lambda x, v: (F.adaptive_avg_pool2d(x, 2),
                                                F.adaptive_avg_pool2d(x, 1),
                                                F.adaptive_avg_pool3d(v, 2)),
             [randn(2, 3, 6, 4), randn(1, 2, 4, 4, 2)], grad=True),
        Case("sdpa", lambda q, k, v: sdpa(q, k, v), [randn(2, 2, 5, 8), randn(2, 2, 6, 8),
                                                     randn(2, 2, 6, 8)], grad=True),
        Case("sdpa-causal", lambda q, k, v: sdpa(q, k, v, is_causal=True, scale=0.3),
             [randn(2, 2, 5, 8), randn(2, 2, 5, 8), randn(2, 2, 5, 8)], grad=True),
        Case("sdpa-mask", lambda q, k, v, m, b: (sdpa(q, k, v, attn_mask=m),
                                                 sdpa(q, k, v, attn_mask=b)),
             [randn(1, 2, 4, 8), randn(1, 2, 6, 8), randn(1, 2, 6, 8), randn(4, 6),
              ("bools-keep", (1, 1, 4, 6))], grad=True),
        Case("sdpa-gqa", lambda q, k, v: sdpa(q, k, v, is_causal=True, enable_gqa=True),
             [randn(1, 4, 5, 8), randn(1, 2, 5, 8), randn(1, 2, 5, 8)], grad=True),
        Case("dropout-eval", lambda x: F.dropout(x, 0.5, training=False) * 2, [randn(3, 4)],
             grad=True),
        Case("nll_loss", lambda x, t, w: (F.nll_loss(x, t), F.nll_loss(x, t, w, reduction="sum"),
                                          F.nll_loss(x, t, ignore_index=1, reduction="none")),
             [randn(5, 4), ints(5, high=4), positive(4)], grad=True, frozen=(2,)),
        Case("nll_loss-2d", lambda x, t: F.nll_loss(x, t), [randn(2, 4, 3, 3),
                                                            ints(2, 3, 3, high=4)], grad=True),
        Case("cross_entropy", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
             [randn(5, 4), ints(5, high=4)], grad=True),
        Case("mse_loss", lambda x, t: (F.mse_loss(x, t), F.mse_loss(x, t, reduction="sum"),
                                       F.mse_loss(x, t, reduction="none")),
             [randn(3, 4), randn(3, 4)], grad=True),
    ]


def _more_cases() -> list:
    """Ops of the longer tail: losses, norms, distances, resampling, padding modes, scans."""
    return [
        Case("bce-logits", lambda x, t, w: (F.binary_cross_entropy_with_logits(x, t),
                                            F.binary_cross_entropy_with_logits(
                                                x, t, w, pos_weight=w * 2, reduction="sum")),
             [randn(4, 5), ("unit01", (4, 5)), positive(5)], grad=True, frozen=(1, 2)),
        Case("bce", lambda x, t: F.binary_cross_entropy(x.sigmoid(), t), [randn(4, 5),
                                                                         ("unit01", (4, 5))],
             grad=True, frozen=(1,)),
        Case("smooth-l1-huber", lambda x, t: (F.smooth_l1_loss(x, t, beta=0.5),
                                              F.huber_loss(x, t, delta=0.7, reduction="none"),
                                              F.l1_loss(x, t)),
             [randn(4, 5), randn(4, 5)], grad=True, frozen=(1,)),
        Case("kl-xlogy", lambda x, y: (F.kl_div(x.log_softmax(-1), y.softmax(-1),
                                                reduction="batchmean"),
                                       torch.xlogy(y.relu(), x.abs())),
             [randn(4, 5), randn(4, 5)], grad=True, frozen=(1,)),
        Case("norms", lambda x: (F.normalize(x, dim=-1), x.norm(dim=0),
                                 torch.linalg.vector_norm(x, float("inf"), dim=1),
                                 torch.linalg.vector_norm(x, 1), torch.linalg.vector_norm(x, 3)),
             [randn(4, 5)], grad=True),
        Case("logsigmoid-logit", lambda x: (F.logsigmoid(x), torch.logit(x.sigmoid() * 0.98 + 0.01),
                                            torch.logit(x.sigmoid(), 0.1)), [randn(4, 5)],
             grad=True),
        Case("prelu-glu", lambda x, w: (F.prelu(x, w), F.glu(x, 0)), [randn(4, 5),
                                                                      positive(1)], grad=True),
        Case("prelu-channels", lambda x, w: F.prelu(x, w), [randn(2, 3, 4), positive(3)],
             grad=True),
        Case("hypot-addc", lambda a, b: (torch.hypot(a, b), torch.addcmul(a, a, b, value=2),
                                         torch.addcdiv(a, a, b.exp(), value=0.5)),
             [randn(4, 5), randn(4, 5)], grad=True),
        Case("frac-nan_to_num", lambda x: (x.frac(), torch.nan_to_num(x.log()),
                                           torch.nan_to_num(x / 0.0, 1.0, 2.0, -3.0)),
             [special()]),
        Case("diag_embed", lambda x: (torch.diag_embed(x), torch.diag_embed(x, 1),
                                      torch.diag_embed(x, -2, 0, 2)), [randn(2, 3)], grad=True),
        Case("cdist", lambda a, b: (torch.cdist(a, b), torch.cdist(a, b, 1.0)),
             [randn(4, 3), randn(5, 3)], grad=True),
        Case("interpolate", lambda x: (F.interpolate(x, scale_factor=2),
                                       F.interpolate(x, size=(5, 7), mode="bilinear"),
                                       F.interpolate(x, size=(4, 5), mode="bilinear",
                                                     align_corners=True)),
             [randn(1, 2, 3, 3)], grad=True),
        Case("pixel-shuffle", lambda x: (F.pixel_shuffle(x, 2), F.pixel_unshuffle(x, 3)),
             [randn(1, 8, 6, 6)], grad=True),
        Case("linspace-logspace", lambda x: (x * torch.linspace(0, 1, 5),
                                             torch.logspace(0, 1, 5) + x[0]), [randn(4, 5)]),
        Case("adaptive-max", lambda x: F.adaptive_max_pool2d(x, 2, return_indices=True),
             [randn(1, 3, 8, 8)], grad=True),
        Case("adaptive-max-3d", lambda x: F.adaptive_max_pool3d(x, 2), [randn(1, 2, 4, 4, 4)],
             grad=True),
        Case("pad-modes", lambda x, v, u: (F.pad(x, (1, 2, 2, 1), mode="reflect"),
                                           F.pad(x, (1, 1, 1, 1), mode="replicate"),
                                           F.pad(x, (1, 2, 1, 1), mode="circular"),
                                           F.pad(v, (2, 1), mode="reflect"),
                                           F.pad(v, (1, 2), mode="replicate"),
                                           F.pad(u, (1, 1, 1, 1, 1, 1), mode="reflect"),
                                           F.pad(u, (1, 1, 1, 1, 1, 1), mode="replicate")),
             [randn(1, 2, 4, 5), randn(1, 2, 6), randn(1, 1, 3, 3, 3)], grad=True),
        Case("cumulative", lambda x: (*x.cummax(1), *x.cummin(0), x.logcumsumexp(1)),
             [randn(4, 5)], grad=True),
        Case("as_strided", lambda x: (torch.as_strided(x, (4, 3), (8, 2), 1) * 2,
                                      torch.as_strided(x, (2, 2, 4), (16, 0, 2), 3) + 1,
                                      torch.as_strided(x.t(), (8, 4), (1, 8)) * 3),
             [randn(4, 8)], grad=True),
        Case("cummax-ties", lambda x: (*x.cummax(1), *x.cummin(1)), [ints(3, 6, high=3)]),
    ]


def all_cases() -> list:
    return (_pointwise_cases() + _reduction_cases() + _product_cases() + _view_cases() +
            _creation_cases() + _network_cases() + _more_cases())
