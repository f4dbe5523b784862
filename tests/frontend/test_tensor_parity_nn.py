"""Parity with PyTorch for the neural-net functional methods: matmul/dot/linear, convolutions,
transposed convolutions, pooling, batchnorm/layernorm, one_hot, the losses, einsum and
scaled_dot_product_attention (forward and backward)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from parity_harness import DOMAINS, Case, run_case, variants
from tinylab import Tensor

DOMAINS["label5"] = lambda rng, shape: rng.integers(0, 5, shape).astype(np.int32)
DOMAINS["label5_ignored"] = lambda rng, shape: rng.integers(-1, 5, shape).astype(np.int32)
DOMAINS["binary"] = lambda rng, shape: (rng.random(shape) < 0.5).astype(np.float32)


def case(name, ours, theirs, shapes, kinds=("real",), **kw):
    return Case(name, ours, theirs, shapes, kinds, atol=kw.pop("atol", 1e-4), **kw)


LINEAR_ALGEBRA = [
    case("matmul", lambda a, b: a @ b, lambda a, b: a @ b,
         [((3, 4), (4, 5)), ((1, 1), (1, 3)), ((0, 4), (4, 2)), ((2, 0), (0, 3))]),
    case("matmul_batched", lambda a, b: a.matmul(b), lambda a, b: a.matmul(b),
         [((2, 3, 4), (2, 4, 5)), ((1, 2, 3), (1, 3, 1))]),
    case("matmul_broadcast", lambda a, b: a @ b, lambda a, b: a @ b,
         [((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (2, 4, 1))]),
    case("matmul_vector_matrix", lambda a, b: a @ b, lambda a, b: a @ b,
         [((4,), (4, 3)), ((4,), (2, 4, 3))]),
    case("matmul_matrix_vector", lambda a, b: a @ b, lambda a, b: a @ b,
         [((3, 4), (4,)), ((2, 3, 4), (4,))]),
    case("dot", lambda a, b: a.dot(b), lambda a, b: a.dot(b), [((5,), (5,)), ((1,), (1,))]),
    case("matmul_int", lambda a, b: a @ b, lambda a, b: a @ b, [((3, 4), (4, 2))],
         ("int", "int")),
    case("matmul_promote", lambda a, b: a @ b, lambda a, b: a @ b.float(), [((3, 4), (4, 2))],
         ("real", "int")),
    case("linear", lambda x, w, b: x.linear(w, b), lambda x, w, b: F.linear(x, w.T, b),
         [((3, 4), (4, 5), (5,)), ((2, 1, 4), (4, 1), (1,)), ((0, 4), (4, 2), (2,))]),
    case("linear_no_bias", lambda x, w: x.linear(w), lambda x, w: F.linear(x, w.T),
         [((3, 4), (4, 5))]),
    case("sequential", lambda x: x.sequential([lambda t: t * 2, Tensor.relu, Tensor.exp]),
         lambda x: torch.exp(torch.relu(x * 2)), [((3, 4),)]),
    case("einsum_matmul", lambda a, b: Tensor.einsum("ij,jk->ik", a, b),
         lambda a, b: torch.einsum("ij,jk->ik", a, b), [((3, 4), (4, 5)), ((1, 0), (0, 2))]),
    case("einsum_batched", lambda a, b: Tensor.einsum("bij,bkj->bik", [a, b]),
         lambda a, b: torch.einsum("bij,bkj->bik", a, b), [((2, 3, 4), (2, 5, 4))]),
    case("einsum_trace", lambda a: Tensor.einsum("ii", a), lambda a: torch.einsum("ii", a),
         [((4, 4),), ((1, 1),)]),
    case("einsum_diagonal", lambda a: Tensor.einsum("ii->i", a),
         lambda a: torch.einsum("ii->i", a), [((4, 4),)]),
    case("einsum_ellipsis", lambda a, b: Tensor.einsum("...ij,...j->...i", a, b),
         lambda a, b: torch.einsum("...ij,...j->...i", a, b), [((2, 3, 4), (2, 4)),
                                                                ((3, 4), (4,))]),
    case("einsum_outer_implicit", lambda a, b: Tensor.einsum("i,j", a, b),
         lambda a, b: torch.einsum("i,j", a, b), [((3,), (4,))]),
    case("einsum_three", lambda a, b, c: Tensor.einsum("ab,bc,cd->ad", a, b, c),
         lambda a, b, c: torch.einsum("ab,bc,cd->ad", a, b, c), [((2, 3), (3, 4), (4, 2))]),
]

X = (2, 4, 7, 6)
CONVOLUTIONS = [
    case("conv2d", lambda x, w, b: x.conv2d(w, b), lambda x, w, b: F.conv2d(x, w, b),
         [(X, (5, 4, 3, 3), (5,)), ((1, 1, 3, 3), (1, 1, 1, 1), (1,)),
          ((0, 4, 5, 5), (2, 4, 3, 3), (2,))]),
    case("conv2d_stride_padding", lambda x, w: x.conv2d(w, stride=2, padding=1),
         lambda x, w: F.conv2d(x, w, stride=2, padding=1), [(X, (3, 4, 3, 2))]),
    case("conv2d_padding_tuple", lambda x, w: x.conv2d(w, padding=(2, 0), stride=(1, 2)),
         lambda x, w: F.conv2d(x, w, padding=(2, 0), stride=(1, 2)), [(X, (3, 4, 3, 3))]),
    case("conv2d_same", lambda x, w: x.conv2d(w, padding="same"),
         lambda x, w: F.conv2d(x, w, padding="same"), [(X, (3, 4, 4, 3))]),
    case("conv2d_dilation", lambda x, w: x.conv2d(w, dilation=2, padding=1),
         lambda x, w: F.conv2d(x, w, dilation=2, padding=1), [(X, (3, 4, 3, 2))]),
    case("conv2d_groups", lambda x, w, b: x.conv2d(w, b, groups=2),
         lambda x, w, b: F.conv2d(x, w, b, groups=2), [(X, (6, 2, 3, 3), (6,))]),
    case("conv2d_depthwise", lambda x, w: x.conv2d(w, groups=4, padding=1),
         lambda x, w: F.conv2d(x, w, groups=4, padding=1), [(X, (4, 1, 3, 3))]),
    case("conv1d", lambda x, w, b: x.conv1d(w, b, stride=2, padding=1),
         lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1),
         [((2, 3, 9), (4, 3, 3), (4,)), ((1, 1, 2), (1, 1, 2), (1,))]),
    case("conv3d", lambda x, w: x.conv2d(w, padding=1), lambda x, w: F.conv3d(x, w, padding=1),
         [((1, 2, 4, 3, 3), (2, 2, 2, 2, 2))]),
    case("conv_transpose2d", lambda x, w, b: x.conv_transpose2d(w, b),
         lambda x, w, b: F.conv_transpose2d(x, w, b),
         [((2, 4, 3, 4), (4, 3, 3, 2), (3,)), ((1, 1, 1, 1), (1, 1, 2, 2), (1,))]),
    case("conv_transpose2d_stride", lambda x, w: x.conv_transpose2d(w, stride=2, padding=1,
                                                                      output_padding=1),
         lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
         [((2, 4, 3, 4), (4, 2, 3, 3))]),
    case("conv_transpose2d_groups", lambda x, w: x.conv_transpose2d(w, groups=2, dilation=2),
         lambda x, w: F.conv_transpose2d(x, w, groups=2, dilation=2),
         [((1, 4, 3, 3), (4, 3, 2, 2))]),
    case("conv_transpose1d", lambda x, w: x.conv_transpose2d(w, stride=3),
         lambda x, w: F.conv_transpose1d(x, w, stride=3), [((2, 3, 4), (3, 2, 2))]),
]

POOLING = [
    case("max_pool2d", lambda x: x.max_pool2d(), lambda x: F.max_pool2d(x, 2),
         [(X,), ((1, 1, 2, 2),), ((0, 2, 4, 4),)]),
    case("max_pool2d_stride_padding", lambda x: x.max_pool2d(3, stride=2, padding=1),
         lambda x: F.max_pool2d(x, 3, stride=2, padding=1), [(X,)], noncontiguous=False),
    case("max_pool2d_dilation", lambda x: x.max_pool2d((2, 3), dilation=2, stride=1),
         lambda x: F.max_pool2d(x, (2, 3), dilation=2, stride=1), [(X,)]),
    case("max_pool2d_ceil", lambda x: x.max_pool2d(3, stride=2, ceil_mode=True),
         lambda x: F.max_pool2d(x, 3, stride=2, ceil_mode=True), [((1, 1, 4, 5),)],
         noncontiguous=False),
    case("max_pool2d_3d_input", lambda x: x.max_pool2d(2), lambda x: F.max_pool2d(x, 2),
         [((3, 6, 4),)]),
    case("avg_pool2d", lambda x: x.avg_pool2d(), lambda x: F.avg_pool2d(x, 2),
         [(X,), ((1, 1, 2, 2),), ((0, 2, 4, 4),)]),
    case("avg_pool2d_padding", lambda x: x.avg_pool2d(3, stride=2, padding=1),
         lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), [(X,)]),
    case("avg_pool2d_exclude_pad", lambda x: x.avg_pool2d(3, 1, padding=1,
                                                            count_include_pad=False),
         lambda x: F.avg_pool2d(x, 3, 1, padding=1, count_include_pad=False), [(X,)]),
    case("avg_pool2d_ceil", lambda x: x.avg_pool2d(3, stride=2, ceil_mode=True),
         lambda x: F.avg_pool2d(x, 3, stride=2, ceil_mode=True), [(X,)]),
    case("avg_pool2d_ceil_padding", lambda x: x.avg_pool2d(3, 2, padding=1, ceil_mode=True),
         lambda x: F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True), [(X,)]),
    case("max_pool1d", lambda x: x.max_pool1d(3, stride=2, padding=1),
         lambda x: F.max_pool1d(x, 3, stride=2, padding=1), [((2, 3, 9),)]),
    case("avg_pool1d", lambda x: x.avg_pool1d(2), lambda x: F.avg_pool1d(x, 2), [((2, 3, 9),)]),
]

EPS = 1e-5


def _batchnorm(x, mean, var, weight=None, bias=None):
    """F.batch_norm in eval mode, written out so PyTorch differentiates mean and var too."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    out = (x - mean.reshape(shape)) / (var.reshape(shape) + EPS).sqrt()
    if weight is not None:
        out = out * weight.reshape(shape) + bias.reshape(shape)
    reference = F.batch_norm(*(t.detach() if t is not None else None
                               for t in (x, mean, var, weight, bias)), eps=EPS)
    assert torch.allclose(out.detach(), reference, atol=1e-5)
    return out
NORMALIZATION = [
    case("batchnorm", lambda x, w, b, m, v: x.batchnorm(w, b, m, (v + EPS).rsqrt()),
         lambda x, w, b, m, v: _batchnorm(x, m, v, w, b),
         [((2, 3, 4, 5), (3,), (3,), (3,), (3,)), ((1, 1, 1, 1), (1,), (1,), (1,), (1,))],
         ("real", "real", "real", "real", "positive")),
    case("batchnorm_2d", lambda x, m, v: x.batchnorm(None, None, m, (v + EPS).rsqrt()),
         lambda x, m, v: _batchnorm(x, m, v), [((4, 3), (3,), (3,))],
         ("real", "real", "positive")),
    case("layernorm", lambda x: x.layernorm(), lambda x: F.layer_norm(x, x.shape[-1:]),
         [((3, 4, 5),), ((2, 1, 6),), ((0, 3, 4),)]),
    case("layernorm_axes", lambda x: x.layernorm(axis=(-2, -1), eps=1e-3),
         lambda x: F.layer_norm(x, x.shape[-2:], eps=1e-3), [((3, 4, 5),)]),
    case("dropout_eval", lambda x: x.dropout(0.5), lambda x: F.dropout(x, 0.5, False),
         [((3, 4),)]),
]


def _ce(reduction="mean", smoothing=0.0, ignore=-100):
    return lambda x, y: F.cross_entropy(x, y.long(), reduction=reduction,
                                        label_smoothing=smoothing, ignore_index=ignore)


LOSSES = [
    case("one_hot", lambda y: y.one_hot(5), lambda y: F.one_hot(y.long(), 5),
         [((3, 4),), ((1,),), ((0, 2),)], ("label5",)),
    case("sparse_categorical_crossentropy",
         lambda x, y: x.sparse_categorical_crossentropy(y), _ce(),
         [((6, 5), (6,)), ((1, 5), (1,))], ("real", "label5")),
    case("sparse_ce_sum_smoothing",
         lambda x, y: x.sparse_categorical_crossentropy(y, label_smoothing=0.2, reduction="sum"),
         _ce("sum", 0.2), [((6, 5), (6,))], ("real", "label5")),
    case("sparse_ce_ignore_none",
         lambda x, y: x.sparse_categorical_crossentropy(y, ignore_index=-1, reduction="none"),
         lambda x, y: _ce("none", ignore=-1)(x, y), [((8, 5), (8,))],
         ("real", "label5_ignored")),
    case("sparse_ce_ignore_mean",
         lambda x, y: x.sparse_categorical_crossentropy(y, ignore_index=-1, label_smoothing=0.1),
         _ce("mean", 0.1, -1), [((8, 5), (8,))], ("real", "label5_ignored")),
    case("cross_entropy_indices", lambda x, y: x.cross_entropy(y), _ce(),
         [((6, 5), (6,))], ("real", "label5")),
    case("cross_entropy_probs", lambda x, p: x.cross_entropy(p.softmax(-1), label_smoothing=0.1),
         lambda x, p: F.cross_entropy(x, p.softmax(-1), label_smoothing=0.1), [((6, 5), (6, 5))]),
    case("binary_crossentropy", lambda p, y: p.binary_crossentropy(y),
         lambda p, y: F.binary_cross_entropy(p, y), [((3, 4), (3, 4))], ("prob", "binary")),
    case("binary_crossentropy_sum", lambda p, y: p.binary_crossentropy(y, reduction="sum"),
         lambda p, y: F.binary_cross_entropy(p, y, reduction="sum"), [((5,), (5,))],
         ("prob", "prob")),
    case("binary_crossentropy_logits", lambda x, y: x.binary_crossentropy_logits(y),
         lambda x, y: F.binary_cross_entropy_with_logits(x, y), [((3, 4), (3, 4))],
         ("wide", "prob")),
    case("binary_crossentropy_logits_none",
         lambda x, y: x.binary_crossentropy_logits(y, reduction="none"),
         lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="none"), [((6,), (6,))],
         ("real", "binary")),
]

QKV = ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6))
ATTENTION = [
    case("sdpa", lambda q, k, v: q.scaled_dot_product_attention(k, v),
         F.scaled_dot_product_attention, [QKV, ((1, 1, 8), (1, 1, 8), (1, 1, 3))]),
    case("sdpa_causal", lambda q, k, v: q.scaled_dot_product_attention(k, v, is_causal=True),
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
         [((2, 5, 8), (2, 5, 8), (2, 5, 4)), ((1, 4, 6, 8), (1, 4, 6, 8), (1, 4, 6, 2))]),
    case("sdpa_bool_mask",
         lambda q, k, v, m: q.scaled_dot_product_attention(k, v, m | Tensor.eye(4, 5).bool()),
         lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m | torch.eye(4, 5).bool()),
         [QKV + ((4, 5),)], ("real", "real", "real", "bool")),
    case("sdpa_float_mask", lambda q, k, v, m: q.scaled_dot_product_attention(k, v, m),
         lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m), [QKV + ((4, 5),)]),
    case("sdpa_scale", lambda q, k, v: q.scaled_dot_product_attention(k, v, scale=0.3),
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3), [QKV]),
]

CASES = LINEAR_ALGEBRA + CONVOLUTIONS + POOLING + NORMALIZATION + LOSSES + ATTENTION


@pytest.mark.parametrize("case,shapes,strided", variants(CASES))
def test_nn_parity(case, shapes, strided):
    run_case(case, shapes, strided)


@pytest.mark.parametrize("name", ["matmul", "conv2d_groups", "max_pool2d", "layernorm",
                                  "sparse_categorical_crossentropy"])
def test_nn_parity_on_every_backend(device, name):
    case = next(c for c in CASES if c.name == name)
    run_case(case, case.shapes[0], False)
