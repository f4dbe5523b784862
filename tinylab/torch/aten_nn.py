"""ATen's neural-network ops (convolution, normalization, pooling, attention, embedding, dropout,
distances) in tinylab's Tensor API, argument for argument as their ATen schemas. aten_table.py's
rows point here; their backward ops are in aten_grads.py, the losses in aten_losses.py.
"""
from __future__ import annotations

import math

from ..dtype import dtypes
from ..errors import UnsupportedError
from ..frontend.tensor import Tensor
from .interop import tinylab_dtype

def convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    if transposed:
        return x.conv_transpose2d(weight, bias, groups, tuple(stride), tuple(dilation),
                                  tuple(padding), tuple(output_padding))
    return x.conv2d(weight, bias, groups, tuple(stride), tuple(dilation), tuple(padding))


def addmm(bias, a, b, beta=1, alpha=1):
    product = a @ b
    product = product if alpha == 1 else product * alpha
    return product + (bias if beta == 1 else bias * beta)


def _in_float(x: Tensor) -> Tensor:
    """Statistics of half inputs are computed in float32, as PyTorch's CPU kernels do."""
    return x.float() if x.dtype is dtypes.float16 else x


def _channel(value: Tensor, x: Tensor) -> Tensor:
    """A per-channel (C,) value shaped to broadcast over (N, C, *spatial)."""
    return value.reshape((1, -1) + (1,) * (x.ndim - 2))


def _batch_norm_apply(x, weight, bias, mean, invstd):
    y = (_in_float(x) - _channel(mean, x)) * _channel(invstd, x)
    if weight is not None:
        y = y * _channel(weight, x)
    if bias is not None:
        y = y + _channel(bias, x)
    return y.cast(x.dtype)


def batch_norm_functional(x, weight, bias, running_mean, running_var, training, momentum, eps):
    """(out, saved mean, saved 1/std, new running mean, new running var); the running variance
    takes the unbiased batch variance, the normalization the biased one (PyTorch)."""
    if not training:
        out, mean, invstd = batch_norm_eval(x, weight, bias, running_mean, running_var, eps)
        return out, mean, invstd, running_mean, running_var
    axes = (0,) + tuple(range(2, x.ndim))
    xf = _in_float(x)
    mean = xf.mean(axes)
    var = ((xf - _channel(mean, x)) ** 2).mean(axes)
    invstd = (var + eps).rsqrt()
    out = _batch_norm_apply(x, weight, bias, mean, invstd)
    if running_mean is None:
        return out, mean, invstd, None, None
    new_mean = running_mean * (1 - momentum) + mean.cast(running_mean.dtype) * momentum
    count = math.prod(x.shape[:1] + x.shape[2:])   # a Variable where the batch is symbolic
    unbiased = var * count / (count - 1) if not isinstance(count, int) else \
        var * (count / max(count - 1, 1))
    new_var = running_var * (1 - momentum) + unbiased.cast(running_var.dtype) * momentum
    return out, mean, invstd, new_mean, new_var


def batch_norm_eval(x, weight, bias, running_mean, running_var, eps, momentum=None):
    """Normalization by the running statistics: (out, mean, 1/std) (ATen's no-training op returns
    empty statistics; these are the ones used)."""
    mean, invstd = _in_float(running_mean), (_in_float(running_var) + eps).rsqrt()
    return _batch_norm_apply(x, weight, bias, mean, invstd), mean, invstd


def batch_norm_no_training(x, weight, bias, running_mean, running_var, momentum, eps):
    out, _, _ = batch_norm_eval(x, weight, bias, running_mean, running_var, eps)
    empty = Tensor.empty(0, dtype=dtypes.float32)
    return out, empty, empty


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(out, mean, 1/std); the statistics keep the normalized dims as 1s (ATen's shapes)."""
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    xf = _in_float(x)
    mean = xf.mean(axes, keepdim=True)
    centered = xf - mean
    rstd = ((centered * centered).mean(axes, keepdim=True) + eps).rsqrt()
    y = centered * rstd
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y.cast(x.dtype), mean, rstd


def group_norm(x, weight, bias, n, c, hxw, group, eps):
    """(out, mean, 1/std) with the statistics per (sample, group), shaped (N, group)."""
    grouped = _in_float(x).reshape(n, group, -1)
    mean = grouped.mean(-1, keepdim=True)
    centered = grouped - mean
    rstd = ((centered * centered).mean(-1, keepdim=True) + eps).rsqrt()
    y = (centered * rstd).reshape(x.shape)
    if weight is not None:
        y = y * _channel(weight, x)
    if bias is not None:
        y = y + _channel(bias, x)
    return y.cast(x.dtype), mean.reshape(n, group), rstd.reshape(n, group)


def max_pool_with_indices(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    spatial = len(kernel_size)
    pool = (x.max_pool1d, x.max_pool2d, x.max_pool3d)[spatial - 1]
    stride = tuple(stride) if stride else None
    if spatial == 3:  # max_pool3d takes PyTorch's order (padding before dilation)
        values, indices = pool(tuple(kernel_size), stride, padding, dilation, ceil_mode, True)
    else:
        values, indices = pool(tuple(kernel_size), stride, dilation, padding, ceil_mode, True)
    return values, indices.cast(dtypes.int64)


def avg_pool(x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
             divisor_override=None):
    spatial = len(kernel_size)
    stride = tuple(stride) if stride else None
    if spatial == 2:
        out = x.avg_pool2d(tuple(kernel_size), stride, 1, padding, ceil_mode, count_include_pad)
    elif spatial == 1:
        out = x.avg_pool1d(tuple(kernel_size), stride, 1, padding, ceil_mode, count_include_pad)
    else:
        out = x.avg_pool3d(tuple(kernel_size), stride, padding, ceil_mode, count_include_pad)
    if divisor_override is None:
        return out
    if ceil_mode or any(p for p in (padding if isinstance(padding, (list, tuple)) else
                                    (padding,))):
        raise UnsupportedError("avg_pool with divisor_override and padding or ceil_mode")
    return out * (math.prod(kernel_size) / divisor_override)


def adaptive_avg_pool(x, output_size):
    """Adaptive average pooling where each output cell averages an equal block (the input size
    divides by the output size, the usual case: a global pool, or 14 -> 7)."""
    spatial = len(output_size)
    blocks = _equal_blocks(x, output_size, "_adaptive_avg_pool")
    lead = x.shape[:-spatial]
    split = lead + tuple(v for o, b in zip(output_size, blocks) for v in (o, b))
    axes = tuple(len(lead) + 2 * k + 1 for k in range(spatial))
    return x.reshape(split).mean(axes)


def sdpa_with_logsumexp(q, k, v, dropout_p=0.0, is_causal=False, attn_mask=None, scale=None,
                        enable_gqa=False):
    """(attention output, logsumexp of the scaled scores over the keys): the values ATen's CPU
    flash attention returns (the second feeds its backward)."""
    if dropout_p:
        raise UnsupportedError("scaled_dot_product_attention with dropout_p > 0 in a compiled "
                               "graph (PyTorch's and tinylab's random streams differ)")
    gqa = enable_gqa or k.shape[-3] != q.shape[-3]  # the CPU flash op takes fewer key heads as is
    out = q.scaled_dot_product_attention(k, v, attn_mask, 0.0, is_causal, scale, gqa)
    return out, attention_scores(q, k, attn_mask, is_causal, scale).logsumexp(-1)


def attention_scores(q, k, attn_mask, is_causal, scale):
    """q @ k^T scaled, with the causal and additive (or boolean) masks applied."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    if k.shape[-3] != q.shape[-3]:  # grouped-query attention: key heads repeat
        k = k.repeat_interleave(q.shape[-3] // k.shape[-3], dim=-3)
    scores = (q @ k.transpose(-2, -1)) * scale
    if is_causal:
        ones = Tensor.ones(q.shape[-2], k.shape[-2], dtype=dtypes.bool)
        scores = ones.tril(0).where(scores, -math.inf)  # top-left aligned, as PyTorch
    if attn_mask is not None:
        scores = attn_mask.where(scores, -math.inf) if attn_mask.dtype is dtypes.bool \
            else scores + attn_mask
    return scores


def safe_softmax(x, dim, dtype=None):
    """softmax, with 0 (not NaN) for a row whose every value is -inf (fully masked attention)."""
    x = x if dtype is None else x.cast(tinylab_dtype(dtype))
    dead = (x == -math.inf).all(dim, keepdim=True)
    return dead.where(0.0, x.softmax(dim))


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return weight[indices]


def native_dropout(x, p, train):
    if not train or p == 0:
        return x, Tensor.ones(*x.shape, dtype=dtypes.bool)
    keep = Tensor.rand(*x.shape) >= p
    return keep.where(x * (1 / (1 - p)), 0).cast(x.dtype), keep


def reduce_sum_to(grad: Tensor, shape) -> Tensor:
    """grad summed over the dims a broadcast to grad.shape added or stretched."""
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and grad.shape[lead + i] != 1)
    return grad.sum(axes, keepdim=True).reshape(tuple(shape)) if axes else grad



def adaptive_max_pool(x, output_size):
    """(values, int64 indices) of adaptive max pooling where the input size divides by the
    output size (equal windows: a max pool of kernel = stride = input / output)."""
    kernel = _equal_blocks(x, output_size, "adaptive_max_pool")
    return max_pool_with_indices(x, kernel, kernel)


def _equal_blocks(x, output_size, op: str) -> tuple:
    """The block each output cell of an adaptive pool covers, where the input's spatial sizes
    divide by the output's (the mapped case); an error naming `op` elsewhere."""
    inside = x.shape[-len(output_size):]
    if any(i % o for i, o in zip(inside, output_size)):
        raise UnsupportedError(f"{op} of spatial size {inside} to {tuple(output_size)}: only "
                               f"sizes that divide evenly are mapped")
    return tuple(i // o for i, o in zip(inside, output_size))


def cdist(x1, x2, p=2.0, compute_mode=None):
    """Pairwise p-norm distances of the rows of x1 (.., P, M) and x2 (.., R, M), computed
    directly (the accurate form PyTorch uses for small inputs)."""
    diff = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == 0:
        return (diff != 0).cast(x1.dtype).sum(-1)
    if p == math.inf:
        return diff.max(-1)
    if p == 1:
        return diff.sum(-1)
    if p == 2:
        return (diff * diff).sum(-1).sqrt()
    return (diff ** p).sum(-1) ** (1 / p)
