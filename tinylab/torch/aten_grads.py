"""ATen's backward ops, the ones AOTAutograd's backward graphs call (convolution_backward,
native_batch_norm_backward, ...). Where the gradient has a short closed form it is written out
(batch and layer norm from their saved statistics, softmax from its output); elsewhere it is the
vjp of the forward op through tinylab's own reverse rules (tinylab.func.vjp), so the forward and
backward of a compiled model use one definition of each op.
"""
from __future__ import annotations

import math

from ..frontend.tensor import Tensor
from ..func import vjp
from . import aten_math, aten_nn, aten_shape
from .aten_nn import _channel, _in_float


def pullback(forward, primals: list, cotangent: Tensor) -> tuple:
    """d(forward(*primals)) / d primal, contracted with `cotangent`, for every primal."""
    _, back = vjp(forward, *primals)
    return back(cotangent)


def _masked(grads: tuple, output_mask) -> tuple:
    return tuple(g if keep else None for g, keep in zip(grads, output_mask))


def convolution_backward(grad, x, weight, bias_sizes, stride, padding, dilation, transposed,
                         output_padding, groups, output_mask):
    """(d input, d weight, d bias); d bias sums the gradient over every dim but channels."""
    def forward(x, weight):
        return aten_nn.convolution(x, weight, None, stride, padding, dilation, transposed,
                                   output_padding, groups)
    need_x, need_w, need_b = output_mask
    gx, gw = pullback(forward, [x, weight], grad) if need_x or need_w else (None, None)
    gb = grad.sum((0,) + tuple(range(2, grad.ndim))) if need_b else None
    return _masked((gx, gw, gb), output_mask)


def batch_norm_backward(grad, x, weight, running_mean, running_var, save_mean, save_invstd,
                        train, eps, output_mask):
    """From the saved statistics: with x̂ = (x - mean)·invstd and N values per channel,
    dx = w·invstd/N · (N·g - Σg - x̂·Σ(g·x̂)) when the batch's statistics were used (train),
    dx = w·invstd·g with the running ones; dw = Σ(g·x̂), db = Σg."""
    axes = (0,) + tuple(range(2, x.ndim))
    if not train:
        save_mean = _in_float(running_mean)
        save_invstd = (_in_float(running_var) + eps).rsqrt()
    g = _in_float(grad)
    xhat = (_in_float(x) - _channel(save_mean, x)) * _channel(save_invstd, x)
    sum_g, sum_gx = g.sum(axes), (g * xhat).sum(axes)
    scale = _channel(save_invstd if weight is None else save_invstd * weight, x)
    if train:
        count = x.numel() // x.shape[1] if not x.shape or isinstance(x.shape[0], int) else \
            math.prod(x.shape[:1] + x.shape[2:])   # a Variable where the batch is symbolic
        gx = scale * (g - _channel(sum_g, x) / count - xhat * _channel(sum_gx, x) / count)
    else:
        gx = scale * g
    return _masked((gx.cast(x.dtype), sum_gx.cast(x.dtype), sum_g.cast(x.dtype)), output_mask)


def layer_norm_backward(grad, x, normalized_shape, mean, rstd, weight, bias, output_mask):
    """With x̂ = (x - mean)·rstd over the N normalized values and ĝ = g·w:
    dx = rstd · (ĝ - mean(ĝ) - x̂·mean(ĝ·x̂)); dw = Σ_batch g·x̂; db = Σ_batch g."""
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    batch = tuple(range(x.ndim - len(normalized_shape)))
    g = _in_float(grad)
    xhat = (_in_float(x) - mean) * rstd
    ghat = g if weight is None else g * weight
    gx = rstd * (ghat - ghat.mean(axes, keepdim=True) -
                 xhat * (ghat * xhat).mean(axes, keepdim=True))
    gw = (g * xhat).sum(batch) if weight is not None else None
    gb = g.sum(batch) if bias is not None else None
    return _masked((gx.cast(x.dtype), gw, gb), output_mask)


def group_norm_backward(grad, x, mean, rstd, weight, n, c, hxw, group, output_mask):
    """As layer norm's, per (sample, group): dx = rstd·(ĝ - mean(ĝ) - x̂·mean(ĝ·x̂)) with
    ĝ = g·w; dw = Σ g·x̂ and db = Σ g over the batch and spatial dims."""
    g = _in_float(grad)
    gx_hat = g if weight is None else g * _channel(weight, x)
    xs = _in_float(x).reshape(n, group, -1)
    xhat = ((xs - mean.reshape(n, group, 1)) * rstd.reshape(n, group, 1)).reshape(x.shape)
    gh = gx_hat.reshape(n, group, -1)
    xh = xhat.reshape(n, group, -1)
    gx = rstd.reshape(n, group, 1) * (gh - gh.mean(-1, keepdim=True) -
                                      xh * (gh * xh).mean(-1, keepdim=True))
    spatial = (0,) + tuple(range(2, x.ndim))
    gw = (g * xhat).sum(spatial) if weight is not None else None
    gb = g.sum(spatial)
    return _masked((gx.reshape(x.shape).cast(x.dtype), gw, gb), output_mask)


def max_pool_backward(grad, x, kernel_size, stride, padding, dilation, ceil_mode, indices):
    """The gradient goes to each window's chosen element (its first maximum), as PyTorch's."""
    def forward(x):
        return aten_nn.max_pool_with_indices(x, kernel_size, stride, padding, dilation,
                                             ceil_mode)[0]
    return pullback(forward, [x], grad)[0]


def avg_pool_backward(grad, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                      divisor_override):
    def forward(x):
        return aten_nn.avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                divisor_override)
    return pullback(forward, [x], grad)[0]


def adaptive_avg_pool_backward(grad, x):
    return pullback(lambda x: aten_nn.adaptive_avg_pool(x, grad.shape[2:]), [x], grad)[0]


def sdpa_backward(grad, q, k, v, out, logsumexp, dropout_p, is_causal, attn_mask=None,
                  scale=None):
    """(dq, dk, dv) of scaled dot-product attention, through tinylab's attention rules."""
    def forward(q, k, v):
        return q.scaled_dot_product_attention(k, v, attn_mask, 0.0, is_causal, scale,
                                              k.shape[-3] != q.shape[-3])
    return pullback(forward, [q, k, v], grad)


def activation_backward(forward):
    """The backward op of an activation `forward(x, *args)`: grad · d forward / dx."""
    def backward(grad, x, *args, **kwargs):
        return pullback(lambda x: forward(x, *args, **kwargs), [x], grad)[0]
    return backward


def elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result):
    """ELU's gradient: grad·scale where the input was positive, else grad·input_scale·(y + α·s)
    from the result y (is_result) or grad·input_scale·α·s·exp(x·input_scale) from the input."""
    positive = self_or_result > 0
    if is_result:
        negative = grad * input_scale * (self_or_result + alpha * scale)
    else:
        negative = grad * input_scale * alpha * scale * (self_or_result * input_scale).exp()
    return positive.where(grad * scale, negative)


def embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    """Each row of the weight's gradient sums the output gradients of the positions that read it
    (a one-hot of the indices contracted with the gradient); padding_idx's row stays zero."""
    if scale_grad_by_freq:
        from ..errors import UnsupportedError
        raise UnsupportedError("embedding backward with scale_grad_by_freq=True")
    width = grad.shape[-1]
    flat = indices.reshape(-1)
    hot = flat.one_hot(num_weights).cast(grad.dtype)  # (positions, num_weights)
    if padding_idx is not None and padding_idx >= 0:
        hot = hot * (Tensor.arange(num_weights) != padding_idx).cast(grad.dtype)
    return hot.transpose(0, 1) @ grad.reshape(-1, width)


def view_backward(grad, input_sizes, view) -> Tensor:
    """The gradient of a view (diagonal, unfold) of an input of `input_sizes`: its vjp."""
    zeros = Tensor.zeros(*input_sizes, dtype=grad.dtype)
    return pullback(view, [zeros], grad)[0]


def select_backward(grad, input_sizes, dim, index):
    dim = dim % len(input_sizes)
    index = index % input_sizes[dim]
    pads = [(0, 0)] * len(input_sizes)
    pads[dim] = (index, input_sizes[dim] - index - 1)
    return grad.unsqueeze(dim).pad(tuple(pads))


def slice_backward(grad, input_sizes, dim, start, end, step):
    """The gradient of x[start:end:step] along dim: grad placed every `step` elements from
    `start` (interleaved with zeros by a reshape), zeros elsewhere."""
    dim = dim % len(input_sizes)
    size = input_sizes[dim]
    start, end, _ = slice(start, end, step).indices(size)
    count = grad.shape[dim]
    if step > 1:
        spread = grad.unsqueeze(dim + 1).pad(tuple((0, 0) if i != dim + 1 else (0, step - 1)
                                                   for i in range(grad.ndim + 1)))
        shape = list(grad.shape)
        shape[dim] = count * step
        grad = spread.reshape(tuple(shape))
        end = start + count * step
    pads = [(0, 0)] * len(input_sizes)
    pads[dim] = (start, size - end)
    crop = max(end - size, 0)
    if crop:
        grad = grad.shrink(tuple((0, s) if i != dim else (0, s - crop)
                                 for i, s in enumerate(grad.shape)))
        pads[dim] = (start, 0)
    return grad.pad(tuple(pads))


def softmax_backward(grad, output, dim, input_dtype):
    """d softmax: y·(g - Σ g·y)."""
    return output * (grad - (grad * output).sum(dim, keepdim=True))


def log_softmax_backward(grad, output, dim, input_dtype):
    """d log_softmax: g - exp(y)·Σ g."""
    return grad - output.exp() * grad.sum(dim, keepdim=True)


def pad_backward(mode: str):
    """The backward op of reflection/replication padding: the vjp of tinylab's pad."""
    def backward(grad, x, padding):
        return pullback(lambda x: aten_shape.mode_pad(mode)(x, padding), [x], grad)[0]
    return backward


def glu_backward(grad, x, dim):
    return pullback(lambda x: aten_math.glu(x, dim), [x], grad)[0]


def cdist_backward(grad, x1, x2, p, distances):
    """d cdist / d x1 (the backward op's one output), through the direct form's rules."""
    return pullback(lambda a: aten_nn.cdist(a, x2, p), [x1], grad)[0]


def adaptive_max_pool_backward(grad, x, indices):
    """The gradient to each window's chosen element (equal windows, as the forward)."""
    return pullback(lambda x: aten_nn.adaptive_max_pool(x, grad.shape[2:])[0], [x], grad)[0]
