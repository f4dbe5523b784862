"""Convolutions from sliding-window views: conv1d/conv2d (pad + windows + MUL + SUM, groups,
stride, dilation, PyTorch's padding forms) and conv_transpose2d (a dilated conv of the flipped
kernel). `_pair` checks int-or-tuple arguments for them and for pooling.
Mixed into Tensor through NNMixin (frontend/nn_ops.py).
"""
from __future__ import annotations

from ..errors import ShapeError


def _pair(value, n: int, name: str, minimum: int | None = None) -> tuple:
    """An int or n ints as an n-tuple, each at least `minimum`; errors name the argument."""
    values = (value,) * n if isinstance(value, int) else tuple(value)
    if len(values) != n or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise ShapeError(f"{name}: expected an int or {n} ints, got {value!r}")
    if minimum is not None and any(v < minimum for v in values):
        raise ShapeError(f"{name}: must be at least {minimum}, got {value!r}")
    return values



class ConvolutionMixin:
    __slots__ = ()

    # ---- convolution ----
    def _conv_padding(self, padding, kernel: tuple, dilation: tuple) -> tuple:
        """Padding as ((before, after), ...) for the spatial dims."""
        n = len(kernel)
        if isinstance(padding, str):
            if padding == "valid":
                return ((0, 0),) * n
            if padding != "same":
                raise ValueError(f"conv: padding must be an int, a tuple, 'same' or 'valid', "
                                 f"got {padding!r}")
            pads = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
            return tuple(pads)
        flat = _pair(padding, n if isinstance(padding, int) or len(padding) == n else 2 * n,
                     "padding")  # negative: crops, as tinygrad's (PyTorch raises)
        if isinstance(padding, int) or len(padding) == n:
            return tuple((p, p) for p in flat[:n])
        pairs = [(flat[2 * i], flat[2 * i + 1]) for i in range(n)]  # PyTorch's flat order:
        return tuple(reversed(pairs))                               # last dim first

    def conv2d(self, weight, bias=None, groups: int = 1, stride=1, dilation=1, padding=0,
               dtype=None):
        """N-d convolution over the dims after (batch, channels); weight (out, in/groups, *k).
        As tinygrad's, a negative padding crops and `dtype=` accumulates in that dtype."""
        spatial = weight.ndim - 2
        if spatial < 1 or self.ndim != spatial + 2:
            raise ShapeError(f"conv: input {self.shape} must have {spatial + 2} dims for weight "
                             f"{weight.shape} (batch, channels, *spatial)")
        batch, cin = self.shape[:2]
        cout, cin_group = weight.shape[:2]
        kernel = weight.shape[2:]
        if groups < 1 or cin % groups or cout % groups or cin // groups != cin_group:
            raise ShapeError(f"conv: input channels {cin} / groups {groups} must equal weight's "
                             f"{cin_group} (weight {weight.shape}), and out channels {cout} "
                             f"must divide by groups")
        if bias is not None and bias.shape != (cout,):
            raise ShapeError(f"conv: bias {bias.shape} must have one value per output channel "
                             f"({cout},)")
        stride = _pair(stride, spatial, "stride", minimum=1)
        dilation = _pair(dilation, spatial, "dilation", minimum=1)
        pads = self._conv_padding(padding, kernel, dilation)
        padded = tuple(s + b + a for s, (b, a) in zip(self.shape[2:], pads))
        if any(d * (k - 1) + 1 > s for k, d, s in zip(kernel, dilation, padded)):
            raise ShapeError(f"conv: kernel {kernel} (dilation {dilation}) is larger than the "
                             f"padded input {padded} (input {self.shape[2:]})")
        x = self.pad(((0, 0), (0, 0)) + pads)._pool(kernel, stride, dilation)
        out_spatial = x.shape[2:2 + spatial]
        group_out = cout // groups
        # (b, g, cin_g, 1, *out, *k) -> (b, g, group_out, *out, cin_g, *k)
        x = x.reshape((batch, groups, cin_group, 1) + out_spatial + kernel)
        x = x.expand((batch, groups, cin_group, group_out) + out_spatial + kernel)
        o = tuple(range(4, 4 + spatial))
        k = tuple(range(4 + spatial, 4 + 2 * spatial))
        x = x.permute((0, 1, 3) + o + (2,) + k)
        # weights stored output-channel-last (a small copy): the kernel's vector lanes can run
        # over output channels with contiguous weight loads while each input value is broadcast
        grouped = weight.reshape((groups, group_out, cin_group) + kernel)
        last = tuple(range(2, 3 + spatial)) + (1,)
        channel_last = grouped.permute((0,) + last).contiguous()
        back = (0, 1 + spatial + 1) + tuple(range(1, 2 + spatial))
        w = channel_last.permute(back)
        w = w.reshape((1, groups, group_out) + (1,) * spatial + (cin_group,) + kernel)
        reduce_axes = tuple(range(-1 - spatial, 0))
        out = (x * w).sum(reduce_axes, dtype=dtype).reshape((batch, cout) + out_spatial)
        return out if bias is None else out + bias.reshape((1, cout) + (1,) * spatial)

    def conv1d(self, weight, bias=None, groups: int = 1, stride=1, dilation=1, padding=0,
               dtype=None):
        return self.conv2d(weight, bias, groups, stride, dilation, padding, dtype)

    def conv_transpose2d(self, weight, bias=None, groups: int = 1, stride=1, dilation=1,
                         padding=0, output_padding=0):
        """Transposed convolution: dilate the input by the stride, pad, and convolve with the
        flipped, transposed weight (in, out/groups, *k)."""
        spatial = weight.ndim - 2
        kernel = weight.shape[2:]
        stride = _pair(stride, spatial, "stride", minimum=1)
        dilation = _pair(dilation, spatial, "dilation", minimum=1)
        padding = _pair(padding, spatial, "padding", minimum=0)
        output_padding = _pair(output_padding, spatial, "output_padding", minimum=0)
        cin, group_out = weight.shape[:2]
        if spatial < 1 or self.ndim != spatial + 2 or self.shape[1] != cin or groups < 1 \
                or cin % groups:
            raise ShapeError(f"conv_transpose2d: input {self.shape} must be (batch, {cin}, "
                             f"*spatial) for weight {weight.shape} (in, out/groups, *kernel), "
                             f"with in divisible by groups {groups}")
        w = weight.reshape((groups, cin // groups, group_out) + kernel)
        w = w.transpose(1, 2).reshape((groups * group_out, cin // groups) + kernel)
        w = w.flip(tuple(range(2, 2 + spatial)))
        x = self
        if any(s > 1 for s in stride):  # insert (s-1) zeros between inputs
            batch, channels = x.shape[:2]
            for i, s in enumerate(stride):
                if s == 1:
                    continue
                axis = 2 + i
                size = x.shape[axis]
                x = x.unsqueeze(axis + 1)
                pads = [(0, 0)] * x.ndim
                pads[axis + 1] = (0, s - 1)
                x = x.pad(tuple(pads))
                shape = x.shape[:axis] + (size * s,) + x.shape[axis + 2:]
                x = x.reshape(shape)
                bounds = [(0, n) for n in x.shape]
                bounds[axis] = (0, (size - 1) * s + 1)
                x = x.shrink(tuple(bounds))
        pads = []
        for k, d, p, op in zip(kernel, dilation, padding, output_padding):
            edge = d * (k - 1) - p
            pads.append((edge, edge + op))
        flat = tuple(v for pair in reversed(pads) for v in pair)
        return x.conv2d(w, bias, groups, 1, dilation, flat)
