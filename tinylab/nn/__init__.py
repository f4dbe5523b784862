"""Layers with tinygrad's names: plain classes whose tensor attributes are the parameters (no
Module base class; nn.state.get_parameters walks the attributes). `__call__` runs the layer.
Uses only the public Tensor API.
"""
from __future__ import annotations

import math

from ..frontend.tensor import Tensor
from . import optim, state  # noqa: F401  (nn.optim, nn.state)


class Linear:
    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        bound = 1 / math.sqrt(in_features)
        self.weight = Tensor.uniform(out_features, in_features, low=-bound, high=bound)
        self.bias = Tensor.uniform(out_features, low=-bound, high=bound) if bias else None

    def __call__(self, x: Tensor) -> Tensor:
        return x.linear(self.weight.transpose(), self.bias)


class Conv2d:
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True):
        self.kernel_size = (kernel_size, kernel_size) if isinstance(kernel_size, int) \
            else tuple(kernel_size)
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        fan_in = in_channels // groups * math.prod(self.kernel_size)
        bound = 1 / math.sqrt(fan_in)
        self.weight = Tensor.uniform(out_channels, in_channels // groups, *self.kernel_size,
                                     low=-bound, high=bound)
        self.bias = Tensor.uniform(out_channels, low=-bound, high=bound) if bias else None

    def __call__(self, x: Tensor) -> Tensor:
        return x.conv2d(self.weight, self.bias, self.groups, self.stride, self.dilation,
                        self.padding)


class Conv1d(Conv2d):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride=1,
                 padding=0, dilation=1, groups: int = 1, bias: bool = True):
        super().__init__(in_channels, out_channels, (kernel_size,), stride, padding, dilation,
                         groups, bias)


class BatchNorm:
    """Batch normalization over dim 1 (BatchNorm1d/2d/3d share it)."""

    def __init__(self, num_features: int, eps: float = 1e-5, affine: bool = True,
                 track_running_stats: bool = True, momentum: float = 0.1):
        self.eps, self.momentum, self.track_running_stats = eps, momentum, track_running_stats
        self.weight = Tensor.ones(num_features) if affine else None
        self.bias = Tensor.zeros(num_features) if affine else None
        if track_running_stats:
            self.running_mean = Tensor.zeros(num_features, requires_grad=False)
            self.running_var = Tensor.ones(num_features, requires_grad=False)
            self.num_batches_tracked = Tensor.zeros(1, dtype="int32", requires_grad=False)

    def calc_stats(self, x: Tensor) -> tuple[Tensor, Tensor]:
        axes = tuple(i for i in range(x.ndim) if i != 1)
        mean = x.mean(axes)
        centered = x - mean.reshape((1, -1) + (1,) * (x.ndim - 2))
        var = (centered * centered).mean(axes)
        return mean, var

    def __call__(self, x: Tensor) -> Tensor:
        use_batch = Tensor.training or not self.track_running_stats
        if use_batch:
            mean, var = self.calc_stats(x)
            if Tensor.training and self.track_running_stats:
                n = x.numel() / x.shape[1]
                m = self.momentum
                self.running_mean.assign((1 - m) * self.running_mean + m * mean.detach())
                self.running_var.assign((1 - m) * self.running_var +
                                        m * (n / max(n - 1, 1)) * var.detach())
                self.num_batches_tracked.assign(self.num_batches_tracked + 1)
        else:
            mean, var = self.running_mean, self.running_var
        return x.batchnorm(self.weight, self.bias, mean, (var + self.eps).rsqrt())


BatchNorm1d = BatchNorm2d = BatchNorm3d = BatchNorm


class LayerNorm:
    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True):
        self.shape = (normalized_shape,) if isinstance(normalized_shape, int) \
            else tuple(normalized_shape)
        self.axes, self.eps = tuple(-1 - i for i in range(len(self.shape))), eps
        self.weight = Tensor.ones(*self.shape) if elementwise_affine else None
        self.bias = Tensor.zeros(*self.shape) if elementwise_affine else None

    def __call__(self, x: Tensor) -> Tensor:
        if x.shape[-len(self.shape):] != self.shape:
            raise ValueError(f"LayerNorm: last dims of input {x.shape} must be {self.shape}")
        x = x.layernorm(self.axes, self.eps)
        return x if self.weight is None else x * self.weight + self.bias
