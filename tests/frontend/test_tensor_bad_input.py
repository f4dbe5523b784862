"""Bad input: every Tensor method checks its arguments when the op is built (nothing runs) and
raises ValueError / IndexError / TypeError (or a tinylab.errors subclass of them) whose message
names the op and the offending argument or shapes. One row per mistake."""
import numpy as np
import pytest

from tinylab import GlobalCounters, Tensor
from tinylab.errors import DeviceError, TinylabError


def t(*shape, dtype="float32"):
    """A realized tensor of a shape (no kernel runs while the bad op is built)."""
    return Tensor(np.zeros(shape, dtype=dtype))


A, B, M = t(2, 3), t(4, 5), t(2, 3, 4, 4)
I = t(2, 3, dtype="int32")  # noqa: E741

CREATION = [
    ("zeros_negative", lambda: Tensor.zeros(2, -1), ValueError, ["zeros", "-1"]),
    ("zeros_float_size", lambda: Tensor.zeros(2.5), TypeError, ["zeros", "2.5"]),
    ("full_bad_dtype", lambda: Tensor.full((2,), 1, dtype="float128"), TypeError, ["float128"]),
    ("arange_zero_step", lambda: Tensor.arange(0, 5, 0), ValueError, ["arange", "step"]),
    ("linspace_negative", lambda: Tensor.linspace(0, 1, -2), ValueError, ["linspace", "-2"]),
    ("eye_negative", lambda: Tensor.eye(-1), ValueError, ["eye", "-1"]),
    ("randint_empty_range", lambda: Tensor.randint(3, low=5, high=2), ValueError,
     ["randint", "5"]),
    ("rand_bad_size", lambda: Tensor.rand(2, "3"), TypeError, ["rand", "'3'"]),
    ("ragged_list", lambda: Tensor([[1, 2], [3]]), ValueError, ["ragged", "element 1"]),
    ("string_data", lambda: Tensor("abc"), TypeError, ["str"]),
    ("string_in_list", lambda: Tensor([1, "a"]), TypeError, ["data[1]"]),
    ("unknown_device", lambda: Tensor([1.0], device="NOPE"), DeviceError, ["NOPE"]),
    ("normal_negative_std", lambda: Tensor.normal(3, std=-1.0), ValueError, ["normal", "std"]),
    ("uniform_reversed", lambda: Tensor.uniform(3, low=2.0, high=1.0), ValueError,
     ["uniform", "low"]),
]

MOVEMENT = [
    ("reshape_count", lambda: A.reshape(5), ValueError, ["reshape", "(2, 3)", "(5,)"]),
    ("reshape_two_unknown", lambda: A.reshape(-1, -1), ValueError, ["reshape", "-1"]),
    ("reshape_negative", lambda: A.reshape(-2, -3), ValueError, ["reshape", "-2"]),
    ("reshape_float", lambda: A.reshape(2.0, 3), TypeError, ["reshape", "2.0"]),
    ("permute_repeated", lambda: A.permute(0, 0), ValueError, ["permute", "(0, 0)"]),
    ("permute_count", lambda: A.permute(0, 1, 2), ValueError, ["permute", "(2, 3)"]),
    ("permute_range", lambda: A.permute(0, 5), IndexError, ["permute", "5", "(2, 3)"]),
    ("expand_size", lambda: A.expand(3, 4), ValueError, ["expand", "(2, 3)", "(3, 4)"]),
    ("expand_fewer_dims", lambda: A.expand(3), ValueError, ["expand", "(2, 3)"]),
    ("pad_pairs", lambda: A.pad(((1, 1),)), ValueError, ["pad", "(2, 3)"]),
    ("pad_odd_flat", lambda: A.pad((1, 2, 3)), ValueError, ["pad", "(1, 2, 3)"]),
    ("pad_too_long", lambda: A.pad((1,) * 6), ValueError, ["pad", "(2, 3)"]),
    ("pad_mode", lambda: A.pad((1, 1), mode="wrap"), ValueError, ["pad", "'wrap'"]),
    ("pad_reflect_wide", lambda: A.pad((3, 0), mode="reflect"), ValueError,
     ["pad", "reflect", "3"]),
    ("pad_circular_wide", lambda: A.pad((0, 4), mode="circular"), ValueError,
     ["pad", "circular", "4"]),
    ("pad_crop_too_much", lambda: A.pad((-2, -2)), ValueError, ["pad", "(2, 3)"]),
    ("pad_float", lambda: A.pad((1.5, 1)), TypeError, ["pad", "1.5"]),
    ("shrink_range", lambda: A.shrink(((0, 3), None)), ValueError, ["shrink", "(2, 3)"]),
    ("shrink_reversed", lambda: A.shrink((None, (2, 1))), ValueError, ["shrink", "(2, 1)"]),
    ("shrink_count", lambda: A.shrink(((0, 1),)), ValueError, ["shrink", "(2, 3)"]),
    ("flip_range", lambda: A.flip(2), IndexError, ["flip", "2"]),
    ("flip_repeated", lambda: A.flip((0, -2)), ValueError, ["flip"]),
    ("transpose_range", lambda: A.transpose(0, 3), IndexError, ["transpose", "3"]),
    ("flatten_order", lambda: M.flatten(2, 1), ValueError, ["flatten", "2", "1"]),
    ("unflatten_sizes", lambda: A.unflatten(1, (2, 2)), ValueError, ["unflatten", "(2, 2)"]),
    ("squeeze_range", lambda: A.squeeze(5), IndexError, ["squeeze", "5"]),
    ("unsqueeze_range", lambda: A.unsqueeze(4), IndexError, ["unsqueeze", "4"]),
    ("repeat_count", lambda: A.repeat(2), ValueError, ["repeat", "(2, 3)"]),
    ("repeat_negative", lambda: A.repeat(2, -1), ValueError, ["repeat", "-1"]),
    ("repeat_interleave_negative", lambda: A.repeat_interleave(-1), ValueError,
     ["repeat_interleave", "-1"]),
    ("cat_shapes", lambda: A.cat(B), ValueError, ["cat", "(2, 3)", "(4, 5)"]),
    ("cat_ndim", lambda: A.cat(t(3)), ValueError, ["cat", "(3,)"]),
    ("cat_dim", lambda: A.cat(A, dim=2), IndexError, ["cat", "2"]),
    ("cat_not_tensor", lambda: A.cat([A]), TypeError, ["cat", "list"]),
    ("stack_shapes", lambda: A.stack(t(3, 2)), ValueError, ["stack", "(3, 2)"]),
    ("stack_dim", lambda: A.stack(A, dim=4), IndexError, ["stack", "4"]),
    ("split_sizes", lambda: A.split([1, 1], dim=1), ValueError, ["split", "[1, 1]", "3"]),
    ("split_zero", lambda: A.split(0), ValueError, ["split", "0"]),
    ("chunk_zero", lambda: A.chunk(0), ValueError, ["chunk", "0"]),
    ("roll_lengths", lambda: A.roll((1, 2), 0), ValueError, ["roll", "(1, 2)"]),
    ("roll_dim", lambda: A.roll(1, 3), IndexError, ["roll", "3"]),
]

INDEXING = [
    ("too_many_indices", lambda: A[0, 0, 0], IndexError, ["too many", "(2, 3)"]),
    ("int_out_of_range", lambda: A[2], IndexError, ["2", "dim 0", "size 2"]),
    ("negative_out_of_range", lambda: A[:, -4], IndexError, ["-4", "dim 1", "size 3"]),
    ("list_out_of_range", lambda: A[:, [0, 3]], IndexError, ["3", "dim 1", "size 3"]),
    ("float_index", lambda: A[1.5], IndexError, ["1.5"]),
    ("float_tensor_index", lambda: A[t(2)], IndexError, ["float32"]),
    ("string_index", lambda: A["a"], IndexError, ["'a'"]),
    ("zero_step", lambda: A[::0], ValueError, ["step"]),
    ("two_ellipses", lambda: A[..., ...], IndexError, ["ellipsis"]),
    ("mask_shape", lambda: A[t(3, dtype="bool")], IndexError, ["(3,)", "(2, 3)"]),
    ("setitem_shape", lambda: A.__setitem__(0, t(2)), ValueError, ["setitem", "(2,)", "(3,)"]),
    ("gather_float_index", lambda: A.gather(0, A), TypeError, ["gather", "float32"]),
    ("gather_ndim", lambda: A.gather(0, t(2, dtype="int32")), ValueError,
     ["gather", "(2,)", "(2, 3)"]),
    ("gather_dim", lambda: A.gather(2, I), IndexError, ["gather", "2"]),
    ("gather_larger", lambda: A.gather(0, t(2, 4, dtype="int32")), ValueError,
     ["gather", "(2, 4)"]),
    ("scatter_reduce_mode", lambda: A.scatter(0, I, A, reduce="max"), ValueError,
     ["scatter", "'max'"]),
    ("scatter_reduce_name", lambda: A.scatter_reduce(0, I, A, "median"), ValueError,
     ["scatter_reduce", "'median'"]),
    ("scatter_src_small", lambda: A.scatter(0, I, t(1, 3)), ValueError, ["scatter", "(1, 3)"]),
    ("masked_fill_mask", lambda: A.masked_fill(A, 1.0), TypeError, ["masked_fill", "float32"]),
    ("where_shapes", lambda: t(2, dtype="bool").where(A, B), ValueError, ["where"]),
    ("triu_1d", lambda: t(3).triu(), ValueError, ["triu", "(3,)"]),
]

ELEMENTWISE = [
    ("add_shapes", lambda: A + B, ValueError, ["add", "(2, 3)", "(4, 5)"]),
    ("mul_string", lambda: A * "x", TypeError, ["mul", "str"]),
    ("add_list", lambda: A + [1, 2, 3], TypeError, ["add", "list"]),
    ("bitwise_float", lambda: A & A, TypeError, ["bitwise_and", "float32"]),
    ("bitwise_float_scalar", lambda: I | 1.5, TypeError, ["bitwise_or", "1.5"]),
    ("shift_float", lambda: A << 1, TypeError, ["lshift", "float32"]),
    ("sub_bool", lambda: t(2, dtype="bool") - t(2, dtype="bool"), TypeError, ["sub", "bool"]),
    ("neg_bool", lambda: -t(2, dtype="bool"), TypeError, ["neg", "bool"]),
    ("cast_unknown", lambda: A.cast("complex64"), TypeError, ["complex64"]),
    ("bitcast_size", lambda: A.bitcast("int16"), TypeError, ["bitcast", "float32", "int16"]),
    ("clip_nothing", lambda: A.clip(), ValueError, ["clip"]),
    ("lerp_shapes", lambda: A.lerp(B, 0.5), ValueError, ["(2, 3)", "(4, 5)"]),
    ("where_string", lambda: (A > 0).where("a", 1.0), TypeError, ["where", "str"]),
]

REDUCE = [
    ("sum_axis_range", lambda: A.sum(2), IndexError, ["sum", "2", "(2, 3)"]),
    ("sum_axis_repeated", lambda: A.sum((0, -2)), ValueError, ["sum", "repeated"]),
    ("sum_axis_float", lambda: A.sum(1.0), TypeError, ["sum", "1.0"]),
    ("max_empty", lambda: t(2, 0).max(1), ValueError, ["max", "size 0"]),
    ("min_empty", lambda: t(0).min(), ValueError, ["min", "size 0"]),
    ("argmax_empty", lambda: t(0, 2).argmax(0), ValueError, ["argmax", "size 0"]),
    ("softmax_axis", lambda: A.softmax(3), IndexError, ["softmax", "3"]),
    ("cumsum_axis", lambda: A.cumsum(-3), IndexError, ["cumsum", "-3"]),
    ("mean_axis", lambda: A.mean(dim=5), IndexError, ["mean", "5"]),
    ("var_axis", lambda: A.var(axis=(0, 3)), IndexError, ["var", "3"]),
]

NN = [
    ("matmul_shapes", lambda: A @ B, ValueError, ["matmul", "(2, 3)", "(4, 5)"]),
    ("matmul_scalar", lambda: A @ t(), ValueError, ["matmul", "()"]),
    ("matmul_not_tensor", lambda: A.matmul(3), TypeError, ["matmul"]),
    ("linear_shapes", lambda: A.linear(t(4, 2)), ValueError, ["matmul", "(2, 3)", "(4, 2)"]),
    ("conv_ndim", lambda: A.conv2d(t(2, 3, 3, 3)), ValueError, ["conv", "(2, 3)", "(2, 3, 3, 3)"]),
    ("conv_channels", lambda: M.conv2d(t(2, 4, 3, 3)), ValueError, ["conv", "3", "4"]),
    ("conv_groups", lambda: M.conv2d(t(2, 1, 3, 3), groups=2), ValueError, ["conv", "groups"]),
    ("conv_padding_name", lambda: M.conv2d(t(2, 3, 3, 3), padding="full"), ValueError,
     ["conv", "'full'"]),
    ("conv_stride_zero", lambda: M.conv2d(t(2, 3, 3, 3), stride=0), ValueError,
     ["stride", "0"]),
    ("conv_kernel_large", lambda: M.conv2d(t(2, 3, 5, 5)), ValueError, ["(5, 5)", "(4, 4)"]),
    ("conv_bias", lambda: M.conv2d(t(2, 3, 3, 3), t(3)), ValueError, ["conv", "bias", "(3,)"]),
    ("conv_transpose_channels", lambda: M.conv_transpose2d(t(2, 3, 3, 3)), ValueError,
     ["conv_transpose2d", "(2, 3, 3, 3)"]),
    ("max_pool_kernel_zero", lambda: M.max_pool2d(0), ValueError, ["kernel_size", "0"]),
    ("max_pool_padding", lambda: M.max_pool2d(2, padding=2), ValueError, ["padding", "2"]),
    ("avg_pool_stride", lambda: M.avg_pool2d(2, stride=-1), ValueError, ["stride", "-1"]),
    ("max_pool_large", lambda: M.max_pool2d(5), ValueError, ["(5, 5)", "(4, 4)"]),
    ("batchnorm_shape", lambda: M.batchnorm(None, None, t(4), t(4)), ValueError,
     ["batchnorm", "(4,)", "(2, 3, 4, 4)"]),
    ("layernorm_axis", lambda: A.layernorm(axis=4), IndexError, ["layernorm", "4"]),
    ("dropout_p", lambda: A.dropout(1.5), ValueError, ["dropout", "1.5"]),
    ("one_hot_float", lambda: A.one_hot(3), TypeError, ["one_hot", "float32"]),
    ("one_hot_classes", lambda: I.one_hot(0), ValueError, ["one_hot", "0"]),
    ("sparse_ce_labels", lambda: A.sparse_categorical_crossentropy(t(3, dtype="int32")),
     ValueError, ["sparse_categorical_crossentropy", "(3,)", "(2, 3)"]),
    ("sparse_ce_reduction", lambda: A.sparse_categorical_crossentropy(
        t(2, dtype="int32"), reduction="avg"), ValueError, ["reduction", "'avg'"]),
    ("sparse_ce_float_labels", lambda: A.sparse_categorical_crossentropy(t(2)), TypeError,
     ["sparse_categorical_crossentropy", "float32"]),
    ("cross_entropy_reduction", lambda: A.cross_entropy(A, reduction="avg"), ValueError,
     ["reduction", "'avg'"]),
    ("cross_entropy_shapes", lambda: A.cross_entropy(t(3, 2)), ValueError,
     ["cross_entropy", "(3, 2)"]),
    ("bce_reduction", lambda: A.binary_crossentropy(A, reduction="mean!"), ValueError,
     ["reduction", "'mean!'"]),
    ("bce_shapes", lambda: A.binary_crossentropy_logits(B), ValueError,
     ["binary_crossentropy_logits", "(2, 3)", "(4, 5)"]),
    ("sdpa_shapes", lambda: A.scaled_dot_product_attention(B, B), ValueError,
     ["scaled_dot_product_attention", "(2, 3)", "(4, 5)"]),
    ("sdpa_mask_and_causal", lambda: A.scaled_dot_product_attention(
        A, A, t(2, 2, dtype="bool"), is_causal=True), ValueError, ["is_causal"]),
    ("einsum_operands", lambda: Tensor.einsum("ij,jk->ik", A), ValueError,
     ["einsum", "2 operand", "1 tensor"]),
    ("einsum_letters", lambda: Tensor.einsum("i1->i", A), ValueError, ["einsum", "'i1'"]),
    ("einsum_dims", lambda: Tensor.einsum("ijk->i", A), ValueError, ["einsum", "'ijk'", "2"]),
    ("einsum_sizes", lambda: Tensor.einsum("ij,jk->ik", A, B), ValueError,
     ["einsum", "'j'", "3", "4"]),
    ("einsum_output", lambda: Tensor.einsum("ij->k", A), ValueError, ["einsum", "'k'"]),
]

CORE = [
    ("backward_not_scalar", lambda: A.backward(), ValueError, ["backward", "(2, 3)"]),
    ("backward_int", lambda: I.sum().backward(), TypeError, ["backward", "int32"]),
    ("backward_gradient_shape", lambda: A.backward(t(3)), ValueError, ["(3,)", "(2, 3)"]),
    ("replace_shape", lambda: A.replace(B), ValueError, ["replace", "(4, 5)", "(2, 3)"]),
    ("assign_shape", lambda: t(2, 3).assign(B), ValueError, ["assign", "(4, 5)", "(2, 3)"]),
    ("to_unknown_device", lambda: A.to("TPU"), DeviceError, ["TPU"]),
    ("item_many", lambda: A.item(), ValueError, ["item", "(2, 3)"]),
    ("size_dim", lambda: A.size(2), IndexError, ["size", "2"]),
    ("len_scalar", lambda: len(t()), TypeError, ["len"]),
]

TABLE = CREATION + MOVEMENT + INDEXING + ELEMENTWISE + REDUCE + NN + CORE


@pytest.mark.parametrize("build,error,words", [row[1:] for row in TABLE],
                         ids=[row[0] for row in TABLE])
def test_bad_input_is_rejected_when_built(build, error, words):
    assert issubclass(error, (ValueError, IndexError, TypeError, TinylabError))
    kernels = GlobalCounters.kernel_count
    with pytest.raises(error) as raised:
        build()
    assert GlobalCounters.kernel_count == kernels, "the bad op ran kernels before failing"
    message = str(raised.value)
    missing = [w for w in words if w not in message]
    assert not missing, f"message {message!r} does not mention {missing}"

