"""THE table of the PyTorch bridge: ATen op -> the tinylab function that computes it.

One row per op (an OpOverloadPacket covers all its overloads, an OpOverload only itself), each
taking the op's arguments in ATen's schema order and returning Tensors (a tuple for multi-output
ops). A row that outgrows a line is a named function in aten_math.py (pointwise math and
reductions), aten_shape.py (views, creation), aten_index.py (writes by index), aten_nn.py
(networks), aten_losses.py (losses) or aten_grads.py (backward ops). graph_program.py looks ops up here; an op
missing from it is refused before anything runs (or sent to PyTorch with fallback="eager").
"""
from __future__ import annotations

import math
import operator
import torch

from ..frontend.tensor import Tensor
from ..memo import Role, register
from . import aten_grads as grads
from . import aten_index as index
from . import aten_losses as losses
from . import aten_math as math_
from . import aten_nn as nn
from . import aten_shape as shape
from .aten_shape import _dim, _dims

aten = torch.ops.aten


# ---- the table: ATen op -> tinylab, math beside each row where it is not the op's name ----
# rows a user (or notebook 10's exercise) adds at run time are extension rows: registered
TABLE = register("ATen rows", {
    # pointwise, binary (alpha scales the second operand)
    aten.add: lambda a, b, alpha=1: a + (b if alpha == 1 else b * alpha),
    aten.sub: lambda a, b, alpha=1: a - (b if alpha == 1 else b * alpha),
    aten.rsub: lambda a, b, alpha=1: b - (a if alpha == 1 else a * alpha),
    aten.mul: operator.mul,
    aten.div.Tensor: operator.truediv,
    aten.div.Scalar: operator.truediv,
    aten.div.Tensor_mode: lambda a, b, rounding_mode=None: a.div(b, rounding_mode=rounding_mode),
    aten.floor_divide: lambda a, b: a.div(b, rounding_mode="floor"),
    aten.remainder.Tensor: operator.mod,
    aten.remainder.Scalar: operator.mod,
    aten.remainder.Scalar_Tensor: math_.scalar_first(operator.mod),
    aten.fmod: lambda a, b: a.fmod(b),
    aten.pow.Tensor_Scalar: operator.pow,
    aten.pow.Tensor_Tensor: operator.pow,
    aten.pow.Scalar: math_.scalar_first(operator.pow),
    aten.maximum: lambda a, b: a.maximum(b),
    aten.minimum: lambda a, b: a.minimum(b),
    aten.atan2: lambda a, b: a.atan2(b),
    aten.copysign: lambda a, b: a.copysign(b),
    aten.logaddexp: lambda a, b: a.logaddexp(b),
    aten.lerp: lambda a, end, weight: a.lerp(end, weight),
    aten.xlogy: math_.xlogy,                                   # x·log y, 0 where x = 0
    aten.hypot: math_.hypot,
    aten.addcmul: lambda x, a, b, value=1: x + value * a * b,
    aten.addcdiv: lambda x, a, b, value=1: x + value * a / b,
    aten.eq: operator.eq,
    aten.ne: operator.ne,
    aten.lt: operator.lt,
    aten.le: operator.le,
    aten.gt: operator.gt,
    aten.ge: operator.ge,
    aten.logical_and: lambda a, b: a.logical_and(b),
    aten.logical_or: lambda a, b: a.logical_or(b),
    aten.logical_xor: lambda a, b: a.logical_xor(b),
    aten.bitwise_and: lambda a, b: a.bitwise_and(b),
    aten.bitwise_or: lambda a, b: a.bitwise_or(b),
    aten.bitwise_xor: lambda a, b: a.bitwise_xor(b),
    aten.where.self: lambda cond, a, b: cond.where(a, b),
    aten.masked_fill: lambda x, mask, value: x.masked_fill(mask, value),
    aten.clamp: lambda x, min=None, max=None: x.clip(min, max),  # noqa: A002
    aten.clamp_min: lambda x, low: x.clip(low, None),
    aten.clamp_max: lambda x, high: x.clip(None, high),
    # pointwise, unary
    aten.neg: operator.neg,
    aten.abs: lambda x: x.abs(),
    aten.exp: lambda x: x.exp(),
    aten.exp2: lambda x: x.exp2(),
    aten.expm1: lambda x: x.expm1(),
    aten.log: lambda x: x.log(),
    aten.log2: lambda x: x.log2(),
    aten.log10: lambda x: x.log10(),
    aten.log1p: lambda x: x.log1p(),
    aten.sqrt: lambda x: x.sqrt(),
    aten.rsqrt: lambda x: x.rsqrt(),
    aten.reciprocal: lambda x: x.reciprocal(),
    aten.sin: lambda x: x.sin(),
    aten.cos: lambda x: x.cos(),
    aten.tan: lambda x: x.tan(),
    aten.asin: lambda x: x.asin(),
    aten.acos: lambda x: x.acos(),
    aten.atan: lambda x: x.atan(),
    aten.sinh: lambda x: x.sinh(),
    aten.cosh: lambda x: x.cosh(),
    aten.tanh: lambda x: x.tanh(),
    aten.asinh: lambda x: x.asinh(),
    aten.acosh: lambda x: x.acosh(),
    aten.atanh: lambda x: x.atanh(),
    aten.erf: lambda x: x.erf(),
    aten.erfc: lambda x: x.erfc(),
    aten.sigmoid: lambda x: x.sigmoid(),
    aten.floor: lambda x: x.floor(),
    aten.ceil: lambda x: x.ceil(),
    aten.trunc: lambda x: x.trunc(),
    aten.round.default: lambda x: x.round(),
    aten.round.decimals: lambda x, decimals=0: x.round(decimals),
    aten.sign: lambda x: x.sign(),
    aten.sgn: lambda x: x.sign(),
    aten.logical_not: lambda x: x.logical_not(),
    aten.bitwise_not: lambda x: x.bitwise_not(),
    aten.isnan: lambda x: x.isnan(),
    aten.isinf: lambda x: x.isinf(),
    aten.frac: lambda x: x.frac(),
    aten.nan_to_num: math_.nan_to_num,
    aten.logit: math_.logit,
    aten.log_sigmoid_forward: math_.log_sigmoid_forward,
    aten._prelu_kernel: math_.prelu,
    aten.glu: math_.glu,
    aten.linalg_vector_norm: math_.vector_norm,
    aten.relu: lambda x: x.relu(),
    aten.gelu: lambda x, approximate="none": x.gelu(approximate),
    aten.silu: lambda x: x.silu(),
    aten.mish: lambda x: x.mish(),
    aten.hardswish: lambda x: x.hardswish(),
    aten.hardsigmoid: lambda x: x.hardsigmoid(),
    aten.hardtanh: lambda x, low=-1.0, high=1.0: x.hardtanh(low, high),
    aten.leaky_relu: lambda x, negative_slope=0.01: x.leaky_relu(negative_slope),
    aten.elu: math_.elu,
    aten.celu: lambda x, alpha=1.0: x.celu(alpha),
    aten.softplus: lambda x, beta=1, threshold=20: x.softplus(beta, threshold),
    aten.threshold: lambda x, threshold, value: (x <= threshold).where(value, x),  # NaN stays
    # copies and conversions (values are immutable: a clone is the value itself)
    aten._to_copy: shape.to_copy,
    aten.clone: lambda x, memory_format=None: x,
    aten.alias: lambda x: x,
    aten.detach: lambda x: x.detach(),
    aten.lift_fresh_copy: lambda x: x,
    aten.copy: math_.copy,
    # creation
    aten.full: shape.full,
    aten.full_like: shape.full_like,
    aten.zeros: lambda size, dtype=None, **_: shape.full(size, 0.0, dtype),
    aten.ones: lambda size, dtype=None, **_: shape.full(size, 1.0, dtype),
    aten.empty.memory_format: lambda size, dtype=None, **_: shape.full(size, 0.0, dtype),
    aten.zeros_like: lambda x, dtype=None, **_: shape.full_like(x, 0, dtype),
    aten.ones_like: lambda x, dtype=None, **_: shape.full_like(x, 1, dtype),
    aten.empty_like: lambda x, dtype=None, **_: shape.full_like(x, 0, dtype),
    aten.new_zeros: lambda x, size, dtype=None, **_: shape.full(size, 0, dtype or _torch(x)),
    aten.new_ones: lambda x, size, dtype=None, **_: shape.full(size, 1, dtype or _torch(x)),
    aten.new_empty: lambda x, size, dtype=None, **_: shape.full(size, 0, dtype or _torch(x)),
    aten.new_full: lambda x, size, v, dtype=None, **_: shape.full(size, v, dtype or _torch(x)),
    aten.fill.Scalar: lambda x, value: shape.full_like(x, value),
    aten.fill.Tensor: lambda x, value: value.cast(x.dtype).expand(x.shape),
    aten.scalar_tensor: lambda v, dtype=None, **_: shape.full((), v, dtype or torch.float32),
    aten.arange: shape.arange,
    aten.linspace: math_.linspace,
    aten.logspace: math_.logspace,
    aten.new_empty_strided: lambda x, size, stride, dtype=None, **_:
        shape.full(size, 0, dtype or _torch(x)),
    # reductions
    aten.sum.default: lambda x, dtype=None: math_.cast(x, dtype).sum(),
    aten.sum.dim_IntList: math_.reduce(Tensor.sum),
    aten.mean.default: lambda x, dtype=None: math_.cast(x, dtype).mean(),
    aten.mean.dim: math_.reduce(Tensor.mean),
    aten.prod.default: lambda x, dtype=None: math_.cast(x, dtype).prod(),
    aten.prod.dim_int: lambda x, dim, keepdim=False, dtype=None:
        math_.cast(x, dtype).prod(dim, keepdim=keepdim),
    aten.amax: math_.reduce(Tensor.max),
    aten.amin: math_.reduce(Tensor.min),
    aten.max.default: lambda x: x.max(),
    aten.min.default: lambda x: x.min(),
    aten.max.dim: math_.with_indices(Tensor.max, Tensor.argmax),
    aten.min.dim: math_.with_indices(Tensor.min, Tensor.argmin),
    aten.argmax: math_.arg(Tensor.argmax),
    aten.argmin: math_.arg(Tensor.argmin),
    aten.any.default: lambda x: x.any(),
    aten.any.dim: lambda x, dim, keepdim=False: x.any(dim, keepdim=keepdim),
    aten.any.dims: lambda x, dim=None, keepdim=False: x.any(_dims(x, dim), keepdim=keepdim),
    aten.all.default: lambda x: x.all(),
    aten.all.dim: lambda x, dim, keepdim=False: x.all(dim, keepdim=keepdim),
    aten.var.correction: math_.variance,
    aten.var_mean.correction: lambda x, dim=None, correction=None, keepdim=False:
        (math_.variance(x, dim, correction, keepdim), x.mean(_dims(x, dim), keepdim=keepdim)),
    aten.std.correction: lambda x, dim=None, correction=None, keepdim=False:
        math_.variance(x, dim, correction, keepdim).sqrt(),
    aten.logsumexp: lambda x, dim, keepdim=False: x.logsumexp(_dims(x, dim), keepdim=keepdim),
    aten.cumsum: lambda x, dim, dtype=None: math_.cast(x, dtype).cumsum(dim),
    aten.cumprod: lambda x, dim, dtype=None: math_.cast(x, dtype).cumprod(dim),
    aten.cummax: math_.running(Tensor.cummax),
    aten.cummin: math_.running(Tensor.cummin),
    aten.logcumsumexp: lambda x, dim: x.logcumsumexp(dim),
    aten._softmax: lambda x, dim, half_to_float: (x.float() if half_to_float else x).softmax(dim),
    aten._safe_softmax: nn.safe_softmax,
    aten._log_softmax: lambda x, dim, half_to_float:
        (x.float() if half_to_float else x).log_softmax(dim),
    aten.sort.default: math_.sort,
    aten.sort.stable: lambda x, stable=None, dim=-1, descending=False: math_.sort(x, dim, descending),
    aten.topk: math_.topk,
    # products
    aten.mm: operator.matmul,
    aten.bmm: operator.matmul,
    aten.mv: operator.matmul,
    aten.dot: operator.matmul,
    aten.addmm: nn.addmm,
    aten.baddbmm: nn.addmm,
    # views and movement
    aten.view.default: shape.view,
    aten._unsafe_view: shape.view,
    aten.permute: lambda x, dims: x.permute(tuple(dims)),
    aten.transpose.int: lambda x, a, b: x.transpose(a, b),
    aten.t: lambda x: x.transpose(0, 1) if x.ndim == 2 else x,
    aten.expand: shape.expand,
    aten.unsqueeze: lambda x, dim: x.unsqueeze(dim),
    aten.squeeze: shape.squeeze,
    aten.slice.Tensor: shape.slice_,
    aten.select.int: shape.select,
    aten.cat: shape.cat,
    aten.stack: shape.stack,
    aten.split.Tensor: shape.split,
    aten.split_with_sizes: shape.split,
    aten.unsafe_split.Tensor: shape.split,
    aten.unsafe_split_with_sizes: shape.split,
    aten.unbind.int: shape.unbind,
    aten.flip: shape.flip,
    aten.roll: lambda x, shifts, dims=(): x.roll(tuple(shifts), tuple(dims) or None),
    aten.repeat: lambda x, repeats: x.repeat(tuple(repeats)),
    aten.constant_pad_nd: shape.constant_pad_nd,
    aten.reflection_pad1d: shape.mode_pad("reflect"),
    aten.reflection_pad2d: shape.mode_pad("reflect"),
    aten.reflection_pad3d: shape.mode_pad("reflect"),
    aten.replication_pad1d: shape.mode_pad("replicate"),
    aten.replication_pad2d: shape.mode_pad("replicate"),
    aten.replication_pad3d: shape.mode_pad("replicate"),
    aten.slice_scatter: shape.slice_scatter,
    aten.pixel_shuffle: shape.pixel_shuffle,
    aten.pixel_unshuffle: shape.pixel_unshuffle,
    aten.diag_embed: shape.diag_embed,
    aten.tril: lambda x, diagonal=0: x.tril(diagonal),
    aten.triu: lambda x, diagonal=0: x.triu(diagonal),
    aten.diagonal: lambda x, offset=0, dim1=0, dim2=1: x.diagonal(offset, dim1, dim2),
    aten.unfold: lambda x, dim, size, step: x.unfold(dim, size, step),
    aten.as_strided: shape.as_strided,
    aten.as_strided_scatter: shape.as_strided_scatter,
    # indexing
    aten.index.Tensor: shape.index,
    aten._unsafe_index.Tensor: shape.index,
    aten._unsafe_index_put: index.index_put,
    aten.index_select: shape.index_select,
    aten.gather: lambda x, dim, index, sparse_grad=False: x.gather(dim, index),
    aten.scatter.src: lambda x, dim, index, src: x.scatter(dim, index, src),
    aten.scatter.value: lambda x, dim, index, value: x.scatter(dim, index, value),
    aten.scatter_add: lambda x, dim, index, src: x.scatter_reduce(dim, index, src, "sum"),
    aten.scatter_reduce.two: math_.scatter_reduce,
    aten.embedding: nn.embedding,
    aten.index_put: index.index_put,
    aten.index_add: index.index_add,
    # networks
    aten.convolution: nn.convolution,
    aten._native_batch_norm_legit_functional: nn.batch_norm_functional,
    aten._native_batch_norm_legit_no_training: nn.batch_norm_no_training,
    aten._native_batch_norm_legit.no_stats: lambda x, w, b, training, momentum, eps:
        nn.batch_norm_functional(x, w, b, None, None, training, momentum, eps)[:3],
    aten.native_layer_norm: nn.layer_norm,
    aten.native_group_norm: nn.group_norm,
    aten.max_pool2d_with_indices: nn.max_pool_with_indices,
    aten.max_pool3d_with_indices: nn.max_pool_with_indices,
    aten.avg_pool2d: nn.avg_pool,
    aten.avg_pool3d: nn.avg_pool,
    aten._adaptive_avg_pool2d: nn.adaptive_avg_pool,
    aten._adaptive_avg_pool3d: nn.adaptive_avg_pool,
    aten._scaled_dot_product_flash_attention_for_cpu: nn.sdpa_with_logsumexp,
    aten.native_dropout: nn.native_dropout,
    aten.bernoulli.p: lambda x, p=0.5, generator=None: (Tensor.rand(*x.shape) < p).cast(x.dtype),
    aten.bernoulli.default: lambda x, generator=None: (Tensor.rand(*x.shape) < x).cast(x.dtype),
    aten.nll_loss_forward: losses.nll_loss_forward,
    aten.nll_loss2d_forward: losses.nll_loss_forward,
    aten.mse_loss: losses.mse_loss,
    aten.binary_cross_entropy_with_logits: losses.bce_with_logits,
    aten.binary_cross_entropy: losses.binary_cross_entropy,
    aten.smooth_l1_loss: losses.smooth_l1_loss,
    aten.huber_loss: losses.huber_loss,
    aten._cdist_forward: nn.cdist,
    aten.adaptive_max_pool2d: nn.adaptive_max_pool,
    aten.adaptive_max_pool3d: nn.adaptive_max_pool,
    # backward ops (AOTAutograd's backward graphs)
    aten.threshold_backward: lambda grad, x, threshold: (x <= threshold).where(0, grad),
    aten.tanh_backward: lambda grad, y: grad * (1 - y * y),           # d tanh = 1 - tanh²
    aten.sigmoid_backward: lambda grad, y: grad * y * (1 - y),        # d σ = σ·(1 - σ)
    aten.gelu_backward: grads.activation_backward(lambda x, approximate="none":
                                                  x.gelu(approximate)),
    aten.silu_backward: grads.activation_backward(lambda x: x.silu()),
    aten.mish_backward: grads.activation_backward(lambda x: x.mish()),
    aten.hardswish_backward: grads.activation_backward(lambda x: x.hardswish()),
    aten.hardsigmoid_backward: grads.activation_backward(lambda x: x.hardsigmoid()),
    aten.hardtanh_backward: lambda grad, x, low, high: ((x > low) & (x < high)).where(grad, 0),
    aten.leaky_relu_backward: lambda grad, x, slope, is_result: (x > 0).where(grad, grad * slope),
    aten.softplus_backward: grads.activation_backward(lambda x, beta, threshold:
                                                      x.softplus(beta, threshold)),
    aten.elu_backward: grads.elu_backward,
    aten.native_dropout_backward: lambda grad, mask, scale: grad * mask.cast(grad.dtype) * scale,
    aten._softmax_backward_data: grads.softmax_backward,
    aten._log_softmax_backward_data: grads.log_softmax_backward,
    aten.select_backward: grads.select_backward,
    aten.slice_backward: grads.slice_backward,
    aten.embedding_dense_backward: grads.embedding_backward,
    aten.convolution_backward: grads.convolution_backward,
    aten.native_batch_norm_backward: grads.batch_norm_backward,
    aten.native_layer_norm_backward: grads.layer_norm_backward,
    aten.native_group_norm_backward: grads.group_norm_backward,
    aten.max_pool2d_with_indices_backward: grads.max_pool_backward,
    aten.max_pool3d_with_indices_backward: grads.max_pool_backward,
    aten.avg_pool2d_backward: grads.avg_pool_backward,
    aten.avg_pool3d_backward: grads.avg_pool_backward,
    aten._adaptive_avg_pool2d_backward: grads.adaptive_avg_pool_backward,
    aten._adaptive_avg_pool3d_backward: grads.adaptive_avg_pool_backward,
    aten._scaled_dot_product_flash_attention_for_cpu_backward: grads.sdpa_backward,
    aten.nll_loss_backward: losses.nll_loss_backward,
    aten.nll_loss2d_backward: losses.nll_loss_backward,
    aten.diagonal_backward: lambda grad, sizes, offset, dim1, dim2: grads.view_backward(
        grad, sizes, lambda x: x.diagonal(offset, dim1, dim2)),
    aten.unfold_backward: lambda grad, sizes, dim, size, step: grads.view_backward(
        grad, sizes, lambda x: x.unfold(dim, size, step)),
    aten.mse_loss_backward: losses.mse_loss_backward,
    aten.binary_cross_entropy_backward: losses.binary_cross_entropy_backward,
    aten.smooth_l1_loss_backward: losses.smooth_l1_loss_backward,
    aten.huber_loss_backward: losses.huber_loss_backward,
    aten.log_sigmoid_backward: lambda grad, x, buffer: grad * (-x).sigmoid(),  # d log σ = σ(-x)
    aten.logit_backward: math_.logit_backward,
    aten._prelu_kernel_backward: math_.prelu_backward,
    aten.glu_backward: grads.glu_backward,
    aten._cdist_backward: grads.cdist_backward,
    aten.adaptive_max_pool2d_backward: grads.adaptive_max_pool_backward,
    aten.adaptive_max_pool3d_backward: grads.adaptive_max_pool_backward,
    aten.reflection_pad1d_backward: grads.pad_backward("reflect"),
    aten.reflection_pad2d_backward: grads.pad_backward("reflect"),
    aten.reflection_pad3d_backward: grads.pad_backward("reflect"),
    aten.replication_pad1d_backward: grads.pad_backward("replicate"),
    aten.replication_pad2d_backward: grads.pad_backward("replicate"),
    aten.replication_pad3d_backward: grads.pad_backward("replicate"),
    # Python-level ops in the graph: a tuple's item, arithmetic of symbolic sizes
    operator.getitem: operator.getitem,
    aten.sym_size.int: lambda x, dim: x.shape[_dim(x, dim)],
    aten.sym_numel: lambda x: math.prod(x.shape),
    operator.add: operator.add,
    operator.sub: operator.sub,
    operator.mul: operator.mul,
    operator.floordiv: operator.floordiv,
    operator.mod: operator.mod,
    operator.neg: operator.neg,
}, Role.ROWS)


def _torch(x: Tensor) -> torch.dtype:
    from .interop import torch_dtype
    return torch_dtype(x.dtype)


def lookup(target):
    """The row for an FX node's target (its overload, else its packet), or None."""
    found = TABLE.get(target)
    if found is None and isinstance(target, torch._ops.OpOverload):
        found = TABLE.get(target.overloadpacket)
    return found
