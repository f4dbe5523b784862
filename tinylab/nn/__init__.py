"""Layers with tinygrad's names and PyTorch's initialization: plain classes whose tensor attributes
are the parameters (no Module base class; nn.state.get_parameters walks the attributes), and
`layer(x)` runs the layer. Used by models and examples; uses only the public Tensor API.
"""
from __future__ import annotations

import math

from ..frontend.tensor import Tensor
from . import datasets, optim, state  # noqa: F401  (nn.datasets, nn.optim, nn.state)

__all__ = ["Linear", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "BatchNorm",
           "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "LayerNorm2d", "GroupNorm",
           "InstanceNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm",
           "Embedding",
           "LSTMCell", "datasets", "optim", "state"]


# ---- argument checks shared by the layers ----
def _positive_int(value, name: str, layer: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{layer}: {name} must be a positive int, got {value!r}")
    return value


def _kernel_tuple(kernel_size, spatial: int | None, layer: str) -> tuple[int, ...]:
    kernel = (kernel_size,) * (spatial or 1) if isinstance(kernel_size, int) \
        else tuple(kernel_size)
    if not kernel or (spatial is not None and len(kernel) != spatial):
        raise ValueError(f"{layer}: kernel_size must be an int or {spatial} ints, "
                         f"got {kernel_size!r}")
    for size in kernel:
        _positive_int(size, "kernel_size", layer)
    return kernel


def _uniform(*shape: int, bound: float) -> Tensor:
    """U(-bound, bound): PyTorch's kaiming_uniform(a=sqrt(5)) for weights and its bias init."""
    return Tensor.uniform(*shape, low=-bound, high=bound)


def _channel_shape(x: Tensor) -> tuple[int, ...]:
    """(1, C, 1, ...): broadcasts a per-channel vector over x (N, C, *spatial)."""
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _normalized_shape(value, layer: str) -> tuple[int, ...]:
    shape = (value,) if isinstance(value, int) else tuple(value)
    if not shape:
        raise ValueError(f"{layer}: normalized_shape must not be empty")
    for size in shape:
        _positive_int(size, "normalized_shape", layer)
    return shape


def _check_last_dims(x: Tensor, shape: tuple[int, ...], layer: str) -> None:
    if x.shape[x.ndim - len(shape):] != shape or x.ndim < len(shape):
        raise ValueError(f"{layer}: the last dims of input {x.shape} must be {shape}")


def _check_channels(x: Tensor, channels: int, layer: str, min_ndim: int = 2) -> None:
    if x.ndim < min_ndim or x.shape[1] != channels:
        raise ValueError(f"{layer}: input {x.shape} must have at least {min_ndim} dims and "
                         f"{channels} channels in dim 1")


# ---- linear and convolution ----
class Linear:
    """y = x @ weight.T + bias; weight (out, in) and bias ~ U(±1/sqrt(in)) as in PyTorch."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        _positive_int(in_features, "in_features", "Linear")
        _positive_int(out_features, "out_features", "Linear")
        bound = 1 / math.sqrt(in_features)
        self.weight = _uniform(out_features, in_features, bound=bound)
        self.bias = _uniform(out_features, bound=bound) if bias else None

    def __call__(self, x: Tensor) -> Tensor:
        if x.ndim == 0 or x.shape[-1] != self.weight.shape[1]:
            raise ValueError(f"Linear: input {x.shape} must end in in_features="
                             f"{self.weight.shape[1]}")
        return x.linear(self.weight.transpose(), self.bias)


class Conv2d:
    """N-d convolution (N = len(kernel_size)); weight (out, in/groups, *kernel) and bias
    ~ U(±1/sqrt(fan_in)), fan_in = in/groups * prod(kernel), as in PyTorch."""

    spatial: int | None = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True):
        layer = type(self).__name__
        for name, value in (("in_channels", in_channels), ("out_channels", out_channels),
                            ("groups", groups)):
            _positive_int(value, name, layer)
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{layer}: in_channels {in_channels} and out_channels "
                             f"{out_channels} must both divide by groups {groups}")
        spatial = self.spatial if isinstance(kernel_size, int) else None
        self.kernel_size = _kernel_tuple(kernel_size, spatial, layer)
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        fan_in = in_channels // groups * math.prod(self.kernel_size)
        bound = 1 / math.sqrt(fan_in)
        self.weight = _uniform(out_channels, in_channels // groups, *self.kernel_size,
                               bound=bound)
        self.bias = _uniform(out_channels, bound=bound) if bias else None

    def __call__(self, x: Tensor) -> Tensor:
        _check_channels(x, self.weight.shape[1] * self.groups, type(self).__name__,
                        2 + len(self.kernel_size))
        return x.conv2d(self.weight, self.bias, self.groups, self.stride, self.dilation,
                        self.padding)


class Conv1d(Conv2d):
    """Conv2d over one spatial dim: input (N, C, L), weight (out, in/groups, k)."""

    spatial = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True):
        _kernel_tuple(kernel_size, 1, "Conv1d")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias)


class ConvTranspose2d:
    """Transposed N-d convolution; weight (in, out/groups, *kernel) and bias ~ U(±1/sqrt(fan_in)),
    fan_in = out/groups * prod(kernel) (PyTorch computes it from the weight's dim 1)."""

    spatial: int | None = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, dilation=1, groups: int = 1, bias: bool = True):
        layer = type(self).__name__
        for name, value in (("in_channels", in_channels), ("out_channels", out_channels),
                            ("groups", groups)):
            _positive_int(value, name, layer)
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{layer}: in_channels {in_channels} and out_channels "
                             f"{out_channels} must both divide by groups {groups}")
        spatial = self.spatial if isinstance(kernel_size, int) else None
        self.kernel_size = _kernel_tuple(kernel_size, spatial, layer)
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.output_padding, self.groups = output_padding, groups
        fan_in = out_channels // groups * math.prod(self.kernel_size)
        bound = 1 / math.sqrt(fan_in)
        self.weight = _uniform(in_channels, out_channels // groups, *self.kernel_size,
                               bound=bound)
        self.bias = _uniform(out_channels, bound=bound) if bias else None

    def __call__(self, x: Tensor) -> Tensor:
        _check_channels(x, self.weight.shape[0], "ConvTranspose2d", 2 + len(self.kernel_size))
        return x.conv_transpose2d(self.weight, self.bias, self.groups, self.stride,
                                  self.dilation, self.padding, self.output_padding)


class ConvTranspose1d(ConvTranspose2d):
    """ConvTranspose2d over one spatial dim: input (N, C, L), weight (in, out/groups, k)."""

    spatial = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, dilation=1, groups: int = 1, bias: bool = True):
        _kernel_tuple(kernel_size, 1, "ConvTranspose1d")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding,
                         dilation, groups, bias)


# ---- normalization ----
class BatchNorm:
    """Batch normalization over dim 1 of (N, C, *spatial); BatchNorm1d/2d/3d are this class.
    Training (Tensor.training) normalizes with the batch's biased variance and moves the running
    stats with the unbiased one, as PyTorch does; otherwise it uses the running stats."""

    def __init__(self, num_features: int | None = None, eps: float = 1e-5, affine: bool = True,
                 track_running_stats: bool = True, momentum: float = 0.1, *,
                 sz: int | None = None):
        if (num_features is None) == (sz is None):
            raise TypeError("BatchNorm: give the channel count once, as num_features (PyTorch) "
                            "or sz (tinygrad)")
        num_features = sz if num_features is None else num_features
        self.num_features = _positive_int(num_features, "num_features", "BatchNorm")
        if not isinstance(momentum, (int, float)) or not 0 <= momentum <= 1:
            raise ValueError(f"BatchNorm: momentum must be a number in [0, 1], got {momentum!r}")
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < math.inf:
            raise ValueError(f"BatchNorm: eps must be a finite number >= 0, got {eps!r}")
        self.eps, self.momentum, self.track_running_stats = eps, momentum, track_running_stats
        self.weight = Tensor.ones(num_features) if affine else None
        self.bias = Tensor.zeros(num_features) if affine else None
        if track_running_stats:
            self.running_mean = Tensor.zeros(num_features, requires_grad=False).is_param_(False)
            self.running_var = Tensor.ones(num_features, requires_grad=False).is_param_(False)
            # shape () int64 like PyTorch's, so its state dicts load unchanged
            self.num_batches_tracked = Tensor.zeros(dtype="int64",
                                                    requires_grad=False).is_param_(False)

    def calc_stats(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """The batch mean and biased variance per channel."""
        axes = tuple(i for i in range(x.ndim) if i != 1)
        mean = x.mean(axes)
        centered = x - mean.reshape(_channel_shape(x))
        return mean, (centered * centered).mean(axes)

    def __call__(self, x: Tensor) -> Tensor:
        _check_channels(x, self.num_features, "BatchNorm")
        if Tensor.training or not self.track_running_stats:
            mean, var = self.calc_stats(x)
            if Tensor.training and self.track_running_stats:
                self._update_running_stats(mean, var, x.numel() // x.shape[1])
        else:
            mean, var = self.running_mean, self.running_var
        return x.batchnorm(self.weight, self.bias, mean, (var + self.eps).rsqrt())

    def _update_running_stats(self, mean: Tensor, var: Tensor, count: int) -> None:
        m, unbiased = self.momentum, count / max(count - 1, 1)
        self.running_mean.assign((1 - m) * self.running_mean + m * mean.detach())
        self.running_var.assign((1 - m) * self.running_var + (m * unbiased) * var.detach())
        self.num_batches_tracked.assign(self.num_batches_tracked + 1)


BatchNorm1d = BatchNorm2d = BatchNorm3d = BatchNorm


class LayerNorm:
    """Normalize over the last len(normalized_shape) dims; weight ones, bias zeros."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True):
        self.normalized_shape = _normalized_shape(normalized_shape, "LayerNorm")
        self.axis, self.eps = tuple(range(-len(self.normalized_shape), 0)), eps
        self.weight = Tensor.ones(*self.normalized_shape) if elementwise_affine else None
        self.bias = Tensor.zeros(*self.normalized_shape) if elementwise_affine else None

    def __call__(self, x: Tensor) -> Tensor:
        _check_last_dims(x, self.normalized_shape, "LayerNorm")
        x = x.layernorm(self.axis, self.eps)
        return x if self.weight is None else x * self.weight + self.bias


class LayerNorm2d(LayerNorm):
    """tinygrad's LayerNorm2d: LayerNorm over the channels (dim 1) of (N, C, H, W)."""

    def __call__(self, x: Tensor) -> Tensor:
        if x.ndim != 4:
            raise ValueError(f"LayerNorm2d: input must be (N, C, H, W), got shape {x.shape}")
        return super().__call__(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class GroupNorm:
    """Split the C channels of (N, C, *spatial) into num_groups groups and normalize each."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True):
        _positive_int(num_groups, "num_groups", "GroupNorm")
        _positive_int(num_channels, "num_channels", "GroupNorm")
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels {num_channels} must divide by "
                             f"num_groups {num_groups}")
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
        self.weight = Tensor.ones(num_channels) if affine else None
        self.bias = Tensor.zeros(num_channels) if affine else None

    def __call__(self, x: Tensor) -> Tensor:
        _check_channels(x, self.num_channels, "GroupNorm")
        per_group = math.prod(x.shape[1:]) // self.num_groups  # (not -1: the batch may be empty)
        grouped = x.reshape(x.shape[0], self.num_groups, per_group).layernorm(eps=self.eps)
        x = grouped.reshape(x.shape)
        if self.weight is None:
            return x
        return x * self.weight.reshape(_channel_shape(x)) + self.bias.reshape(_channel_shape(x))


class InstanceNorm:
    """Normalize each channel of each sample over its spatial dims (tinygrad: affine=True)."""

    def __init__(self, num_features: int, eps: float = 1e-5, affine: bool = True):
        self.num_features = _positive_int(num_features, "num_features", "InstanceNorm")
        self.eps = eps
        self.weight = Tensor.ones(num_features) if affine else None
        self.bias = Tensor.zeros(num_features) if affine else None

    def __call__(self, x: Tensor) -> Tensor:
        _check_channels(x, self.num_features, "InstanceNorm", 3)
        flat = x.reshape(x.shape[0], self.num_features, math.prod(x.shape[2:])).layernorm(
            eps=self.eps)
        x = flat.reshape(x.shape)
        if self.weight is None:
            return x
        return x * self.weight.reshape(_channel_shape(x)) + self.bias.reshape(_channel_shape(x))


class InstanceNorm1d(InstanceNorm):
    """PyTorch's spelling and default (affine=False); InstanceNorm2d/3d are the same."""

    def __init__(self, num_features: int, eps: float = 1e-5, affine: bool = False):
        super().__init__(num_features, eps, affine)


InstanceNorm2d = InstanceNorm3d = InstanceNorm1d


class RMSNorm:
    """x / sqrt(mean(x^2) + eps) over the last len(dim) dims, times weight (ones)."""

    def __init__(self, dim, eps: float = 1e-6, elementwise_affine: bool = True):
        self.normalized_shape = _normalized_shape(dim, "RMSNorm")
        self.axis, self.eps = tuple(range(-len(self.normalized_shape), 0)), eps
        self.weight = Tensor.ones(*self.normalized_shape) if elementwise_affine else None

    def __call__(self, x: Tensor) -> Tensor:
        _check_last_dims(x, self.normalized_shape, "RMSNorm")
        value = x.float()
        value = value * ((value * value).mean(self.axis, keepdim=True) + self.eps).rsqrt()
        value = value.cast(x.dtype)
        return value if self.weight is None else value * self.weight


# ---- lookup and recurrence ----
class Embedding:
    """Rows of weight (vocab_size, embed_size) picked by integer indices of any shape;
    weight ~ N(0, 1) as in PyTorch (tinygrad uses glorot_uniform)."""

    def __init__(self, vocab_size: int, embed_size: int):
        self.vocab_size = _positive_int(vocab_size, "vocab_size", "Embedding")
        self.embed_size = _positive_int(embed_size, "embed_size", "Embedding")
        self.weight = Tensor.randn(vocab_size, embed_size)

    def __call__(self, idx: Tensor) -> Tensor:
        if not isinstance(idx, Tensor) or idx.dtype.is_float or idx.dtype.is_bool:
            kind = idx.dtype.name if isinstance(idx, Tensor) else type(idx).__name__
            raise TypeError(f"Embedding: indices must be an integer tensor, got {kind}")
        vocab = Tensor.arange(self.vocab_size, device=idx.device)
        one_hot = (idx.unsqueeze(-1) == vocab).cast(self.weight.dtype)  # (..., vocab)
        return one_hot.matmul(self.weight)


class LSTMCell:
    """One LSTM step: `h, c = cell(x, (h, c))` (state defaults to zeros); gate order i, f, g, o
    and every weight and bias ~ U(±1/sqrt(hidden_size)), as in PyTorch."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        _positive_int(input_size, "input_size", "LSTMCell")
        self.hidden_size = _positive_int(hidden_size, "hidden_size", "LSTMCell")
        bound = 1 / math.sqrt(hidden_size)
        self.weight_ih = _uniform(4 * hidden_size, input_size, bound=bound)
        self.weight_hh = _uniform(4 * hidden_size, hidden_size, bound=bound)
        self.bias_ih = _uniform(4 * hidden_size, bound=bound) if bias else None
        self.bias_hh = _uniform(4 * hidden_size, bound=bound) if bias else None

    def __call__(self, x: Tensor, hc: tuple[Tensor, Tensor] | None = None
                 ) -> tuple[Tensor, Tensor]:
        if x.ndim not in (1, 2) or x.shape[-1] != self.weight_ih.shape[1]:
            raise ValueError(f"LSTMCell: input {x.shape} must be (batch, {self.weight_ih.shape[1]})"
                             f" or ({self.weight_ih.shape[1]},)")
        unbatched = x.ndim == 1
        x = x.unsqueeze(0) if unbatched else x
        h, c = self._initial_state(x, hc, unbatched)
        gates = x.linear(self.weight_ih.transpose(), self.bias_ih) + \
            h.linear(self.weight_hh.transpose(), self.bias_hh)
        i, f, g, o = gates.chunk(4, dim=1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)

    def _initial_state(self, x: Tensor, hc, unbatched: bool) -> tuple[Tensor, Tensor]:
        shape = (x.shape[0], self.hidden_size)
        if hc is None:
            zeros = Tensor.zeros(*shape, device=x.device, dtype=x.dtype)
            return zeros, zeros
        h, c = (t.unsqueeze(0) if unbatched else t for t in hc)
        if h.shape != shape or c.shape != shape:
            raise ValueError(f"LSTMCell: hc must be two tensors of shape {shape}, got "
                             f"{h.shape} and {c.shape}")
        return h, c
