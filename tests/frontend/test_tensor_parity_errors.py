"""What PyTorch rejects, tinylab rejects too: each row builds the same call on both with the same
inputs; PyTorch must raise, and tinylab must raise a ValueError / IndexError / TypeError while
building the op (before any kernel runs) with a message naming the op and the offending values.
Deliberate differences (tinylab accepts what PyTorch rejects) are listed at the end, each with
the reason."""
import math

import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from parity_harness import ErrorCase, error_params, run_error_case
from tinylab import Tensor

A = ((2, 3),)


def err(name, op, ours, theirs=None, shapes=A, kinds=("real",), words=(), same_type=True):
    return ErrorCase(name, op, ours, theirs or ours, shapes, kinds, words, same_type)


ELEMENTWISE = [
    err("sub_bool", "sub", lambda a, b: a - b, shapes=((3,), (3,)), kinds=("bool", "bool")),
    err("sub_bool_scalar", "sub", lambda x: x - True, kinds=("int",)),
    err("rsub_bool", "sub", lambda x: 2.5 - x, kinds=("bool",)),
    err("sub_float_bool", "sub", lambda a, b: a - b, shapes=((3,), (3,)), kinds=("real", "bool")),
    err("neg_bool", "neg", lambda x: -x, kinds=("bool",)),
    err("abs_bool", "abs", lambda x: x.abs(), kinds=("bool",)),
    err("add_shapes", "add", lambda a, b: a + b, shapes=((2, 3), (4, 3)), words=("(2, 3)",)),
    err("mul_shapes", "mul", lambda a, b: a * b, shapes=((3,), (0,)), words=("(3,)", "(0,)")),
    err("maximum_shapes", "maximum", lambda a, b: a.maximum(b), shapes=((2,), (3,))),
    err("div_rounding_mode", "div", lambda a, b: a.div(b, rounding_mode="round"),
        shapes=((3,), (3,)), words=("'round'",)),
    err("bitwise_and_float", "bitwise_and", lambda a, b: a & b, shapes=((3,), (3,))),
    err("bitwise_or_float", "bitwise_or", lambda x: x | 1),
    err("bitwise_xor_float", "bitwise_xor", lambda a, b: a ^ b, shapes=((3,), (3,)),
        kinds=("int", "real")),
    err("bitwise_not_float", "bitwise_not", lambda x: ~x),
    err("lshift_float", "lshift", lambda x: x << 1),
    err("rshift_float", "rshift", lambda x: x >> 1),
    err("clamp_nothing", "clip", lambda x: x.clamp()),
    err("lerp_shapes", "lerp", lambda a, b: a.lerp(b, 0.5), shapes=((2, 3), (3, 2))),
    err("where_shapes", "where", lambda c, a, b: c.where(a, b), torch.where,
        shapes=((2, 3), (2, 3), (4, 3)), kinds=("bool", "real", "real")),
    err("masked_fill_float_mask", "masked_fill", lambda x, m: x.masked_fill(m, 0.0),
        shapes=((2, 3), (2, 3))),
    err("cast_unknown", "complex64", lambda x: x.cast("complex64"),
        lambda x: x.to("complex64")),
]

REDUCE = [
    err(f"{name}_dim_range", name, fn, shapes=((2, 3),)) for name, fn in [
        ("sum", lambda x: x.sum(2)), ("mean", lambda x: x.mean(dim=-3)),
        ("prod", lambda x: x.prod(5)), ("max", lambda x: x.max(2)), ("min", lambda x: x.min(-3)),
        ("argmax", lambda x: x.argmax(2)), ("argmin", lambda x: x.argmin(-3)),
        ("var", lambda x: x.var(3)), ("std", lambda x: x.std(-4)),
        ("logsumexp", lambda x: x.logsumexp(2)), ("softmax", lambda x: x.softmax(2)),
        ("log_softmax", lambda x: x.log_softmax(-3)), ("cumsum", lambda x: x.cumsum(2)),
        ("cumprod", lambda x: x.cumprod(-3)), ("amax", lambda x: x.amax(2)),
        ("amin", lambda x: x.amin(-3)),
    ]
] + [
    err("any_dim_range", "any", lambda x: x.any(2), kinds=("bool",)),
    err("all_dim_range", "all", lambda x: x.all(-3), kinds=("bool",)),
    err("cummax_dim_range", "cummax", lambda x: x.cummax(2), lambda x: x.cummax(2).values),
    err("cummin_dim_range", "cummin", lambda x: x.cummin(-3), lambda x: x.cummin(-3).values),
    err("sum_scalar_dim", "sum", lambda x: x.sum(1), shapes=((),)),
    err("sum_dim_repeated", "sum", lambda x: x.sum((0, -2))),
    err("max_empty", "max", lambda x: x.max(1), shapes=((2, 0),)),
    err("max_all_empty", "max", lambda x: x.max(), shapes=((0,),)),
    err("min_empty", "min", lambda x: x.min(0), shapes=((0, 3),)),
    err("argmax_empty", "argmax", lambda x: x.argmax(), shapes=((0, 2),)),
    err("amax_empty", "amax", lambda x: x.amax(0), shapes=((0, 2),)),
    err("argmin_empty", "argmin", lambda x: x.argmin(1), shapes=((2, 0),)),
]

MOVEMENT = [
    err("reshape_count", "reshape", lambda x: x.reshape(4, 2), words=("(2, 3)",)),
    err("reshape_two_unknown", "reshape", lambda x: x.reshape(-1, -1)),
    err("view_count", "reshape", lambda x: x.view(7)),
    err("permute_count", "permute", lambda x: x.permute(0, 1, 2)),
    err("permute_repeated", "permute", lambda x: x.permute(1, 1)),
    err("expand_size", "expand", lambda x: x.expand(4, 3), words=("(2, 3)",)),
    err("expand_fewer", "expand", lambda x: x.expand(3)),
    err("transpose_range", "transpose", lambda x: x.transpose(0, 2)),
    err("flip_range", "flip", lambda x: x.flip(2)),
    err("flip_repeated", "flip", lambda x: x.flip((0, 0))),
    err("flatten_order", "flatten", lambda x: x.flatten(1, 0)),
    err("unflatten_sizes", "unflatten", lambda x: x.unflatten(1, (2, 2))),
    err("squeeze_range", "squeeze", lambda x: x.squeeze(3)),
    err("unsqueeze_range", "unsqueeze", lambda x: x.unsqueeze(4)),
    err("repeat_fewer", "repeat", lambda x: x.repeat(2)),
    err("repeat_interleave_negative", "repeat_interleave", lambda x: x.repeat_interleave(-1)),
    err("cat_shapes", "cat", lambda a, b: a.cat(b, dim=0), lambda a, b: torch.cat([a, b]),
        shapes=((2, 3), (2, 4))),
    err("cat_dim_range", "cat", lambda a, b: a.cat(b, dim=2), lambda a, b: torch.cat([a, b], 2),
        shapes=((2, 3), (2, 3))),
    err("cat_ndim", "cat", lambda a, b: a.cat(b), lambda a, b: torch.cat([a, b]),
        shapes=((2, 3), (3,))),
    err("stack_shapes", "stack", lambda a, b: a.stack(b), lambda a, b: torch.stack([a, b]),
        shapes=((2, 3), (3, 2))),
    err("stack_dim_range", "stack", lambda a, b: a.stack(b, dim=3),
        lambda a, b: torch.stack([a, b], 3), shapes=((2, 3), (2, 3))),
    # a Python signature error (no tensor to call the method on) against torch's empty list
    err("stack_nothing", "stack", lambda: Tensor.stack(), lambda: torch.stack([]), shapes=(),
        same_type=False),
    err("cat_nothing", "cat", lambda: Tensor.cat(), lambda: torch.cat([]), shapes=(),
        same_type=False),
    err("split_sizes", "split", lambda x: x.split([1, 1], dim=1)),
    err("split_zero", "split", lambda x: x.split(0)),
    err("chunk_zero", "chunk", lambda x: x.chunk(0)),
    err("roll_lengths", "roll", lambda x: x.roll((1, 2), 0)),
    err("roll_dim_range", "roll", lambda x: x.roll(1, 2)),
    err("roll_scalar", "roll", lambda x: x.roll(1, 0), shapes=((),)),
    err("pad_too_long", "pad", lambda x: x.pad((1,) * 6), lambda x: F.pad(x, (1,) * 6)),
    err("pad_odd", "pad", lambda x: x.pad((1, 2, 3)), lambda x: F.pad(x, (1, 2, 3))),
    err("pad_reflect_wide", "pad", lambda x: x.pad((3, 0), mode="reflect"),
        lambda x: F.pad(x, (3, 0), mode="reflect")),
    err("pad_mode", "pad", lambda x: x.pad((1, 1), mode="wrap"),
        lambda x: F.pad(x, (1, 1), mode="wrap")),
    err("getitem_range", "dim 0", lambda x: x[2]),
    err("getitem_too_many", "too many", lambda x: x[0, 0, 0]),
    err("getitem_float", "1.5", lambda x: x[1.5]),
    err("getitem_list_range", "dim 1", lambda x: x[:, [0, 3]]),
    err("gather_ndim", "gather", lambda x, i: x.gather(0, i), shapes=((2, 3), (2,)),
        kinds=("real", "index2")),
    err("gather_float_index", "gather", lambda x, i: x.gather(0, i), shapes=((2, 3), (2, 3))),
    err("gather_dim_range", "gather", lambda x, i: x.gather(2, i), shapes=((2, 3), (2, 3)),
        kinds=("real", "index2")),
    err("scatter_src_small", "scatter", lambda x, i, s: x.scatter(0, i, s),
        shapes=((2, 3), (2, 3), (1, 3)), kinds=("real", "index2", "real")),
    err("scatter_reduce_name", "scatter_reduce",
        lambda x, i, s: x.scatter_reduce(0, i, s, "median"),
        shapes=((2, 3), (2, 3), (2, 3)), kinds=("real", "index2", "real")),
    err("triu_1d", "triu", lambda x: x.triu(), shapes=((3,),)),
    err("tril_0d", "tril", lambda x: x.tril(), shapes=((),)),
]

NN = [
    err("matmul_shapes", "matmul", lambda a, b: a @ b, shapes=((2, 3), (4, 5))),
    err("matmul_scalar", "matmul", lambda a, b: a @ b, shapes=((2, 3), ())),
    err("linear_shapes", "matmul", lambda x, w: x.linear(w), lambda x, w: F.linear(x, w.T),
        shapes=((2, 3), (4, 2))),
    err("conv2d_channels", "conv", lambda x, w: x.conv2d(w), F.conv2d,
        shapes=((1, 3, 5, 5), (2, 4, 3, 3))),
    err("conv2d_groups", "conv", lambda x, w: x.conv2d(w, groups=2),
        lambda x, w: F.conv2d(x, w, groups=2), shapes=((1, 3, 5, 5), (2, 1, 3, 3))),
    err("conv2d_kernel_large", "conv", lambda x, w: x.conv2d(w), F.conv2d,
        shapes=((1, 1, 3, 3), (1, 1, 4, 4)), words=("(4, 4)",)),
    err("conv2d_stride_zero", "stride", lambda x, w: x.conv2d(w, stride=0),
        lambda x, w: F.conv2d(x, w, stride=0), shapes=((1, 1, 5, 5), (1, 1, 3, 3))),
    err("conv2d_bias", "bias", lambda x, w, b: x.conv2d(w, b), F.conv2d,
        shapes=((1, 1, 5, 5), (2, 1, 3, 3), (3,))),
    err("conv_transpose2d_channels", "conv_transpose2d", lambda x, w: x.conv_transpose2d(w),
        F.conv_transpose2d, shapes=((1, 3, 4, 4), (2, 3, 3, 3))),
    err("max_pool2d_kernel_zero", "kernel_size", lambda x: x.max_pool2d(0),
        lambda x: F.max_pool2d(x, 0), shapes=((1, 1, 4, 4),)),
    err("max_pool2d_padding", "padding", lambda x: x.max_pool2d(2, padding=2),
        lambda x: F.max_pool2d(x, 2, padding=2), shapes=((1, 1, 4, 4),)),
    err("max_pool2d_large", "(5, 5)", lambda x: x.max_pool2d(5), lambda x: F.max_pool2d(x, 5),
        shapes=((1, 1, 4, 4),)),
    err("avg_pool2d_stride", "stride", lambda x: x.avg_pool2d(2, stride=-1),
        lambda x: F.avg_pool2d(x, 2, stride=-1), shapes=((1, 1, 4, 4),)),
    err("layernorm_axis", "layernorm", lambda x: x.layernorm(axis=3),  # a dim out of range:
        lambda x: F.layer_norm(x, (2, 2, 3, 3)), same_type=False),  # IndexError, as x.sum(3)
    err("dropout_p", "dropout", lambda x: x.dropout(1.5), lambda x: F.dropout(x, 1.5)),
    err("dropout_negative_p", "dropout", lambda x: x.dropout(-0.1), lambda x: F.dropout(x, -0.1)),
    err("one_hot_float", "one_hot", lambda y: y.one_hot(3), lambda y: F.one_hot(y, 3),
        shapes=((3,),)),
    err("one_hot_bool", "one_hot", lambda y: y.one_hot(3), lambda y: F.one_hot(y, 3),
        shapes=((3,),), kinds=("bool",)),
    err("cross_entropy_shapes", "cross_entropy", lambda x, p: x.cross_entropy(p),
        F.cross_entropy, shapes=((2, 3), (3, 2))),
    err("cross_entropy_reduction", "reduction", lambda x, p: x.cross_entropy(p, reduction="avg"),
        lambda x, p: F.cross_entropy(x, p, reduction="avg"), shapes=((2, 3), (2, 3))),
    err("sparse_ce_labels", "sparse_categorical_crossentropy",
        lambda x, y: x.sparse_categorical_crossentropy(y), lambda x, y: F.cross_entropy(x, y),
        shapes=((2, 3), (3,)), kinds=("real", "index2")),
    err("sparse_ce_float_labels", "sparse_categorical_crossentropy",
        lambda x, y: x.sparse_categorical_crossentropy(y), lambda x, y: F.nll_loss(x, y),
        shapes=((2, 3), (2,))),
    err("bce_shapes", "binary_crossentropy", lambda p, y: p.binary_crossentropy(y),
        F.binary_cross_entropy, shapes=((2, 3), (3, 2)), kinds=("prob", "prob")),
    err("bce_logits_shapes", "binary_crossentropy_logits",
        lambda x, y: x.binary_crossentropy_logits(y), F.binary_cross_entropy_with_logits,
        shapes=((2, 3), (3,))),
    err("sdpa_shapes", "scaled_dot_product_attention",
        lambda q, k, v: q.scaled_dot_product_attention(k, v), F.scaled_dot_product_attention,
        shapes=((2, 3), (4, 5), (4, 5))),
    err("einsum_operands", "einsum", lambda a: Tensor.einsum("ij,jk->ik", a),
        lambda a: torch.einsum("ij,jk->ik", a)),
    err("einsum_sizes", "einsum", lambda a, b: Tensor.einsum("ij,jk->ik", a, b),
        lambda a, b: torch.einsum("ij,jk->ik", a, b), shapes=((2, 3), (4, 5))),
    err("einsum_output", "einsum", lambda a: Tensor.einsum("ij->k", a),
        lambda a: torch.einsum("ij->k", a)),
]

CREATION = [
    err("zeros_negative", "zeros", lambda: Tensor.zeros(2, -1), lambda: torch.zeros(2, -1),
        shapes=()),
    err("ones_float_size", "ones", lambda: Tensor.ones(2.0), lambda: torch.ones(2.0), shapes=()),
    err("full_negative", "full", lambda: Tensor.full((2, -1), 1.0),
        lambda: torch.full((2, -1), 1.0), shapes=()),
    err("eye_negative", "eye", lambda: Tensor.eye(-1), lambda: torch.eye(-1), shapes=()),
    err("eye_float", "eye", lambda: Tensor.eye(2.5), lambda: torch.eye(2.5), shapes=()),
    err("arange_zero_step", "arange", lambda: Tensor.arange(0, 5, 0),
        lambda: torch.arange(0, 5, 0), shapes=()),
    err("arange_wrong_sign", "arange", lambda: Tensor.arange(0, 5, -1),
        lambda: torch.arange(0, 5, -1), shapes=()),
    err("arange_infinite", "arange", lambda: Tensor.arange(0, math.inf),
        lambda: torch.arange(0, math.inf), shapes=()),
    err("arange_nan", "arange", lambda: Tensor.arange(0, math.nan),
        lambda: torch.arange(0, math.nan), shapes=()),
    err("linspace_negative", "linspace", lambda: Tensor.linspace(0, 1, -2),
        lambda: torch.linspace(0, 1, -2), shapes=()),
    err("linspace_float_steps", "linspace", lambda: Tensor.linspace(0, 1, 2.5),
        lambda: torch.linspace(0, 1, 2.5), shapes=()),
    err("linspace_bool_steps", "linspace", lambda: Tensor.linspace(0, 1, True),
        lambda: torch.linspace(0, 1, True), shapes=()),
    err("linspace_string", "linspace", lambda: Tensor.linspace("a", 1, 3),
        lambda: torch.linspace("a", 1, 3), shapes=()),
]

CASES = ELEMENTWISE + REDUCE + MOVEMENT + NN + CREATION

# Errors that named an inner op ('mul', 'matmul', 'pool') before the api-surface branch rewrote
# dot / matmul with 1-D and 0-d operands and 1-D / 3-D pooling.
OUTER_OP_NAMED = [
    err("matmul_batch", "matmul", lambda a, b: a @ b, shapes=((2, 2, 3), (3, 3, 4))),
    err("dot_lengths", "dot", lambda a, b: a.dot(b), shapes=((3,), (4,))),
    err("max_pool1d_large", "max_pool", lambda x: x.max_pool1d(5), lambda x: F.max_pool1d(x, 5),
        shapes=((1, 2, 3),)),
]
CASES += OUTER_OP_NAMED

# issue 29: the exception types. Every row above asserts PyTorch's class too; these add the dims,
# indices and shapes the tables above lacked (tinylab's ShapeError is a ValueError and a
# RuntimeError, DTypeError a TypeError and a NotImplementedError: see tinylab/errors.py)
B = ((2, 3), (3, 2))
TYPES = [
    err("index_negative_range", "dim 0", lambda x: x[-3]),
    err("index_column_range", "dim 1", lambda x: x[:, 3]),
    err("transpose_dim", "transpose", lambda x: x.transpose(0, 2)),
    err("unsqueeze_dim", "unsqueeze", lambda x: x.unsqueeze(4)),
    err("squeeze_dim", "squeeze", lambda x: x.squeeze(3)),
    err("flip_dim", "flip", lambda x: x.flip(2)),
    err("cat_dim", "cat", lambda a, b: a.cat(b, dim=2), lambda a, b: torch.cat([a, b], dim=2),
        shapes=((2, 3), (2, 3))),
    err("stack_dim", "stack", lambda a, b: a.stack(b, dim=4),
        lambda a, b: torch.stack([a, b], dim=4), shapes=((2, 3), (2, 3))),
    err("sort_dim", "sort", lambda x: x.sort(dim=3)),
    err("gather_dim", "gather", lambda x, i: x.gather(2, i), shapes=((2, 3), (2, 3)),
        kinds=("real", "index2")),
    err("add_broadcast", "add", lambda a, b: a + b, shapes=B),
    err("where_broadcast", "where", lambda c, a: c.where(a, 0.0),
        lambda c, a: torch.where(c, a, 0.0), shapes=B, kinds=("bool", "real")),
    err("matmul_vectors", "matmul", lambda a, b: a @ b, shapes=((3,), (4,))),
    err("matmul_inner", "matmul", lambda a, b: a @ b, shapes=((2, 3), (2, 3))),
    err("reshape_size", "reshape", lambda x: x.reshape(4, 2)),
    err("expand_rank", "expand", lambda x: x.expand(3, 3)),
    err("repeat_negative", "repeat", lambda x: x.repeat(-1, 1)),
    err("cat_ranks", "cat", lambda a, b: a.cat(b), lambda a, b: torch.cat([a, b]),
        shapes=((2, 3), (3,))),
    err("stack_shapes_3d", "stack", lambda a, b: a.stack(b, dim=1),
        lambda a, b: torch.stack([a, b], dim=1), shapes=((2, 3, 1), (2, 1, 3))),
    err("bitwise_and_float_int", "bitwise_and", lambda a, b: a & b, shapes=((3,), (3,)),
        kinds=("real", "int")),
]
CASES += TYPES


@pytest.mark.parametrize("case", error_params(CASES))
def test_errors_match_torch(case):
    run_error_case(case)
