"""Pooling: the 1-D/2-D max and average pools, max pooling that returns PyTorch's indices, 3-D
pooling and max_unpool1d/2d/3d (interpolate is resampling.py). Mixed into Tensor
(frontend/tensor.py).

Every output is a composite of primitive ops: windows are views (`_pool`), the max's position is
a compare and a reduce, unpooling is a one-hot compare and a sum.
"""
from __future__ import annotations

import math


from ..errors import DTypeError, ShapeError
from . import autograd
from .convolution import _pair
from .sorting import _pick


class PoolingMixin:
    __slots__ = ()

    # ---- max pooling with indices ----
    def _max_pool_with_indices(self, kernel: tuple, stride: tuple, dilation: tuple, pads: tuple):
        """(values, indices) of max pooling; indices are flat positions in each input plane
        (h * W + w), as PyTorch's. The chosen element of a window is its first maximum in scan
        order, or its last NaN if it has one (PyTorch's CPU rule); the gradient flows to it
        alone."""
        spatial = len(kernel)
        plane = self.shape[-spatial:]
        lead = ((0, 0),) * (self.ndim - spatial)
        lowest = -math.inf if self.dtype.is_float else self.dtype.min_value()
        windows = self.pad(lead + pads, value=lowest)._pool(kernel, stride, dilation)
        taps = math.prod(kernel)
        windows = windows.reshape(windows.shape[:-spatial] + (taps,))
        position = type(self).arange(math.prod(plane), device=self.device).reshape(plane)
        position = position.pad(pads, value=-1)._pool(kernel, stride, dilation)
        position = position.reshape(position.shape[:spatial] + (taps,))
        tap = type(self).arange(taps, device=self.device)
        valid = position >= 0  # padding is never chosen, even when the window is all -inf
        if self.dtype.is_float:
            nan = windows.isnan()
            best = nan.where(-math.inf, windows).max(-1, keepdim=True)
        else:
            best = windows.max(-1, keepdim=True)
        is_max = (windows == best) & valid
        chosen = taps - is_max.where(taps - tap, 0).max(-1)  # first maximum
        if self.dtype.is_float:
            last_nan = (nan & valid).where(tap, -1).max(-1)
            chosen = (last_nan >= 0).where(last_nan, chosen)
        hit = tap == chosen.unsqueeze(-1)
        return _pick(hit, windows), _pick(hit, position)

    def max_pool3d(self, kernel_size=(2, 2, 2), stride=None, padding=0, dilation=1,
                   ceil_mode: bool = False, return_indices: bool = False):
        """3-D max pooling over the last three dims of (N, C, D, H, W) or (C, D, H, W), with
        PyTorch's argument order (padding before dilation; max_pool1d/2d keep tinygrad's)."""
        _check_rank(self, (4, 5), "max_pool3d")
        return self._max_pool(3, kernel_size, stride, dilation, padding, ceil_mode,
                              return_indices)

    def avg_pool3d(self, kernel_size=(2, 2, 2), stride=None, padding=0, ceil_mode: bool = False,
                   count_include_pad: bool = True):
        """3-D average pooling over the last three dims (torch.nn.functional.avg_pool3d)."""
        _check_rank(self, (4, 5), "avg_pool3d")
        return self._avg_pool(3, kernel_size, stride, 1, padding, ceil_mode, count_include_pad)

    # ---- unpooling ----
    def _max_unpool(self, spatial: int, indices, kernel_size, stride, padding, output_size,
                    dilation, op: str):
        """Scatter each value to its flat index in a zero output plane: a one-hot compare of
        the indices against every output position, O(input x output) per plane. As in PyTorch,
        of two values sent to one position the later one stays (overlapping max_pool windows
        send the same element twice), and every value's gradient is the output gradient at its
        index (a gather, registered as the backward). Index values are not range-checked (they
        are lazy): an index outside the plane writes nothing, where PyTorch raises."""
        _check_rank(self, (spatial + 1, spatial + 2), op)
        if not hasattr(indices, "node") or not indices.dtype.is_int:
            raise DTypeError(f"{op}: indices must be an integer tensor, got "
                             f"{getattr(indices, 'dtype', type(indices).__name__)}")
        if indices.shape != self.shape:
            raise ShapeError(f"{op}: indices {indices.shape} must have the input's shape "
                             f"{self.shape}")
        kernel = _pair(kernel_size, spatial, "kernel_size", minimum=1)
        stride = kernel if stride is None else _pair(stride, spatial, "stride", minimum=1)
        padding = _pair(padding, spatial, "padding", minimum=0)
        dilation = _pair(dilation, spatial, "dilation", minimum=1)
        inside = self.shape[-spatial:]
        default = tuple((i - 1) * s - 2 * p + d * (k - 1) + 1
                        for i, s, p, d, k in zip(inside, stride, padding, dilation, kernel))
        out = default if output_size is None else _unpool_size(output_size, default, stride, op)
        lead = self.shape[:-spatial]
        count, total = math.prod(inside), math.prod(out)
        where = indices.reshape(lead + (1, count))
        target = type(self).arange(total, dtype=indices.dtype, device=self.device)
        hit = where == target.reshape(total, 1)  # (..., output position, input position)
        source = type(self).arange(count, device=self.device)
        last = hit.where(source, -1).max(-1, keepdim=True)  # the last value sent to each
        placed = _pick(hit & (source == last), self.reshape(lead + (1, count)))
        placed = placed.reshape(lead + out)

        cls, shape, hit_node = type(self), self.shape, hit.node  # nodes held, no Tensor

        def gather_gradient(grad, _):  # d value_q = grad[index_q]
            grad = cls(grad).reshape(lead + (total, 1))
            return _pick(cls(hit_node).transpose(-1, -2), grad.transpose(-1, -2)).reshape(shape).node
        autograd.composite(placed.node, self.node, gather_gradient)
        return placed

    def max_unpool1d(self, indices, kernel_size, stride=None, padding=0, output_size=None):
        """Inverse of max_pool1d(return_indices=True): see max_unpool2d."""
        return self._max_unpool(1, indices, kernel_size, stride, padding, output_size, 1,
                                "max_unpool1d")

    def max_unpool2d(self, indices, kernel_size=(2, 2), stride=None, padding=0,
                     output_size=None, dilation=1):
        """Put each value of (N, C, H, W) at its flat index (from max_pool2d's return_indices)
        in a zero (N, C, H_out, W_out), as torch.nn.functional.max_unpool2d: H_out is
        (H - 1) * stride - 2 * padding + dilation * (kernel - 1) + 1 unless output_size is
        given. PyTorch's argument order (padding before output_size); tinygrad's dilation is a
        keyword at the end."""
        return self._max_unpool(2, indices, kernel_size, stride, padding, output_size, dilation,
                                "max_unpool2d")

    def max_unpool3d(self, indices, kernel_size, stride=None, padding=0, output_size=None):
        """Inverse of max_pool3d(return_indices=True): see max_unpool2d."""
        return self._max_unpool(3, indices, kernel_size, stride, padding, output_size, 1,
                                "max_unpool3d")

    # ---- pooling ----
    def _pool_args(self, kernel_size, stride, dilation, padding, spatial: int, op: str):
        """(kernel, stride, dilation, pads) per spatial dim, checked as PyTorch does: padding at
        most half the kernel, and each (dilated) window fits the padded input."""
        kernel = _pair(kernel_size, spatial, "kernel_size", minimum=1)
        stride = kernel if stride is None else _pair(stride, spatial, "stride", minimum=1)
        dilation = _pair(dilation, spatial, "dilation", minimum=1)
        pads = self._conv_padding(padding, kernel, dilation)
        for (b, a), k in zip(pads, kernel):
            if b < 0 or a < 0:
                raise ShapeError(f"{op}: padding must be at least 0, got {padding}")
            if b > k // 2:
                raise ShapeError(f"{op}: padding {padding} must be at most half the kernel "
                                 f"{kernel}")
        sizes = self.shape[-spatial:] if spatial else ()
        for size, (b, a), k, d in zip(sizes, pads, kernel, dilation):
            if d * (k - 1) + 1 > size + b + a:
                raise ShapeError(f"{op}: window {kernel} (dilation {dilation}) does not fit "
                                 f"input {tuple(sizes)} padded by {padding}")
        return kernel, stride, dilation, pads

    def _ceil_pads(self, pads, kernel, stride, dilation):
        """Extra right padding so ceil_mode keeps the last partial window."""
        spatial = self.shape[-len(kernel):]
        out = []
        for i, (b, a), k, s, d in zip(spatial, pads, kernel, stride, dilation):
            size = i + b + a
            window = d * (k - 1) + 1
            count = math.ceil((size - window) / s) + 1
            if (count - 1) * s >= i + b:  # the last window must start inside the input
                count -= 1
            out.append((b, a + max(0, (count - 1) * s + window - size)))
        return tuple(out)

    def max_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, padding=0,
                   ceil_mode: bool = False, return_indices: bool = False):
        """2-D max pooling; return_indices=True also gives PyTorch's flat per-plane indices of
        the maxima (pooling.py). Tied maxima in a window share its gradient, as tinygrad's and
        as amax's in both libraries (PyTorch's max_pool2d gives it all to the first)."""
        return self._max_pool(2, kernel_size, stride, dilation, padding, ceil_mode,
                              return_indices)

    def _max_pool(self, dims: int, kernel_size, stride, dilation, padding, ceil_mode: bool,
                  return_indices: bool = False):
        spatial = dims if self.ndim > dims else self.ndim
        kernel, stride, dilation, pads = self._pool_args(kernel_size, stride, dilation, padding,
                                                         spatial, "max_pool")
        if ceil_mode:
            pads = self._ceil_pads(pads, kernel, stride, dilation)
        if return_indices:
            return self._max_pool_with_indices(kernel, stride, dilation, pads)
        lowest = -math.inf if self.dtype.is_float else self.dtype.min_value()
        x = self.pad(((0, 0),) * (self.ndim - spatial) + pads, value=lowest)
        return x._pool(kernel, stride, dilation).max(tuple(range(-spatial, 0)))

    def avg_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, padding=0,
                   ceil_mode: bool = False, count_include_pad: bool = True):
        return self._avg_pool(2, kernel_size, stride, dilation, padding, ceil_mode,
                              count_include_pad)

    def _avg_pool(self, dims: int, kernel_size, stride, dilation, padding, ceil_mode: bool,
                  count_include_pad: bool):
        spatial = dims if self.ndim > dims else self.ndim
        kernel, stride, dilation, pads = self._pool_args(kernel_size, stride, dilation, padding,
                                                         spatial, "avg_pool")
        full = self._ceil_pads(pads, kernel, stride, dilation) if ceil_mode else pads
        lead = ((0, 0),) * (self.ndim - spatial)
        axes = tuple(range(-spatial, 0))
        total = self.pad(lead + full)._pool(kernel, stride, dilation).sum(axes)
        ones = type(self).ones(*self.shape[-spatial:], device=self.device)
        # padding counts as part of the window when count_include_pad; the ceil_mode overhang
        # never does
        extra = tuple((0, a2 - a1) for (_, a1), (_, a2) in zip(pads, full))
        counts = ones.pad(pads, value=1.0 if count_include_pad else 0.0).pad(extra)
        counts = counts._pool(kernel, stride, dilation).sum(axes)
        return total / (counts.cast(total.dtype) if total.dtype.is_float else counts)

    def max_pool1d(self, kernel_size=2, stride=None, dilation=1, padding=0, ceil_mode=False,
                   return_indices: bool = False):
        out = self.unsqueeze(-2).max_pool2d((1, kernel_size), None if stride is None else
                                            (1, stride), (1, dilation), (0, padding),
                                            ceil_mode, return_indices)
        if return_indices:  # a (1, W) plane's flat index is the 1-D index
            return out[0].squeeze(-2), out[1].squeeze(-2)
        return out.squeeze(-2)

    def avg_pool1d(self, kernel_size=2, stride=None, padding=0, ceil_mode=False,
                   count_include_pad=True):
        return self.unsqueeze(-2).avg_pool2d((1, kernel_size), None if stride is None else
                                             (1, stride), 1, (0, padding), ceil_mode,
                                             count_include_pad).squeeze(-2)


def _check_rank(x, ranks: tuple, op: str) -> None:
    if x.ndim not in ranks:
        raise ShapeError(f"{op}: expected a {ranks[0]}-D or {ranks[1]}-D input (batch mode), "
                         f"got shape {x.shape}")


def _unpool_size(output_size, default: tuple, stride: tuple, op: str) -> tuple:
    """The output plane of max_unpool from output_size (spatial sizes, or the full shape),
    each strictly within stride of the default size, as PyTorch checks."""
    sizes = tuple(output_size)[-len(default):]
    if len(tuple(output_size)) < len(default) or any(
            isinstance(s, bool) or not isinstance(s, int) for s in sizes):
        raise ShapeError(f"{op}: output_size {output_size!r} must give {len(default)} spatial "
                         f"sizes as ints")
    for d, (size, base, s) in enumerate(zip(sizes, default, stride)):
        if not base - s < size < base + s:
            raise ShapeError(f"{op}: invalid output_size {tuple(output_size)} (dim {d} must be "
                             f"between {base - s} and {base + s}, exclusive)")
    return sizes
