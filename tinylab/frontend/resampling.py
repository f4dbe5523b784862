"""Resampling: interpolate (nearest, nearest-exact, linear, bilinear, trilinear) as
torch.nn.functional.interpolate, and tinygrad's reading of the same method where PyTorch refuses
it: "linear" over every spatial dim of 4-D and 5-D input, `size` naming the last len(size) dims
of a tensor of any rank, integer input (computed in float32 and truncated back, with tinygrad's
exact source weights), `interpolate(size, mode)` positionally. Mixed into Tensor
(frontend/tensor.py).

Source indices and weights depend only on shapes: they are computed on the host in the float
precision PyTorch uses (float32, or float64 for float64 input), so the same pixels are picked.
"""
from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np

from .. import config
from ..dtype import dtypes
from ..errors import DTypeError, ShapeError

INTERPOLATE_MODES = MappingProxyType({
    "nearest": None, "nearest-exact": None, "linear": 3, "bilinear": 4,
    "trilinear": 5
})  # mode -> the input rank PyTorch requires (None: 3 to 5)
LINEAR_MODES = ("linear", "bilinear", "trilinear")


class ResamplingMixin:
    __slots__ = ()

    def interpolate(self, size=None, scale_factor=None, mode: str | None = None,
                    align_corners: bool | None = None, recompute_scale_factor: bool | None = None):
        """Resample the spatial dims of (N, C, *spatial) to `size` (or spatial * scale_factor),
        as torch.nn.functional.interpolate. Modes: nearest, nearest-exact, and linear /
        bilinear / trilinear for 1 / 2 / 3 spatial dims (align_corners=True maps the corner
        pixels onto each other). The default mode is PyTorch's "nearest" (tinygrad's "linear"
        with TINYGRAD_VALUES=1). Where PyTorch refuses, tinygrad's meaning: "linear" resizes
        every spatial dim, a `size` of other length than the spatial dims resizes the last
        len(size) dims of any tensor, an integer tensor resizes linearly and is truncated back,
        and `interpolate(size, "linear")` names the mode second. With scale_factor, source
        positions use 1 / scale_factor, as PyTorch does, unless recompute_scale_factor=True.

        Each axis in turn gathers the source rows it needs (nearest: one; linear: two, mixed as
        x0 * (1 - t) + x1 * t), so values and gradients come from kernels."""
        if isinstance(scale_factor, str):  # tinygrad's interpolate(size, mode, align_corners)
            scale_factor, mode, align_corners = None, scale_factor, \
                mode if isinstance(mode, bool) else align_corners
        if mode is None:
            mode = "linear" if config.TINYGRAD_VALUES.value else "nearest"
        count = len(size) if isinstance(size, (tuple, list)) else None
        if count is not None and 0 < count <= 3 and (count != self.ndim - 2 or self.ndim < 3):
            return self._interpolate_last(tuple(size), mode, align_corners)
        if mode in LINEAR_MODES and not self.dtype.is_float and count is not None:
            return self._interpolate_int(tuple(size), align_corners)
        dims = _check_interpolate(self, mode, align_corners)
        out_sizes, scales = _output_sizes(self, size, scale_factor, recompute_scale_factor, dims)
        x = self
        opmath = np.float64 if self.dtype == dtypes.float64 else np.float32
        for axis, (inside, out, scale) in enumerate(zip(self.shape[2:], out_sizes, scales), 2):
            if axis > 2 and x.node is not self.node:
                x = x.contiguous()  # else the next axis's gather recomputes this one per tap
            if mode in ("nearest", "nearest-exact"):
                x = _take(x, axis, _nearest_sources(inside, out, scale, mode == "nearest-exact"))
                continue
            first, second, weight = _linear_sources(inside, out, scale, bool(align_corners),
                                                    opmath)
            shape = (out,) + (1,) * (x.ndim - axis - 1)
            lam1 = type(self)(weight.reshape(shape), device=self.device, dtype=x.dtype)
            lam0 = type(self)((1 - weight).reshape(shape), device=self.device, dtype=x.dtype)
            x = _take(x, axis, first) * lam0 + _take(x, axis, second) * lam1
        return x

    def _interpolate_last(self, size: tuple, mode: str, align_corners):
        """tinygrad's reading: resize the last len(size) dims, the others are batch dims."""
        if len(size) > self.ndim:
            raise ShapeError(f"interpolate: size {size} names more dims than the input "
                             f"{self.shape} has")
        lead, last = self.shape[:self.ndim - len(size)], self.shape[self.ndim - len(size):]
        flat = self.reshape((1, math.prod(lead)) + last)
        return flat.interpolate(size, mode=mode, align_corners=align_corners).reshape(lead + size)

    def _interpolate_int(self, size: tuple, align_corners):
        """Linear resampling of an integer tensor (PyTorch refuses it) as tinygrad does it:
        source positions as exact fractions, x0 + (x1 - x0) * t in float32, truncated back."""
        x = self.float()
        for axis, (inside, out) in enumerate(zip(self.shape[2:], size), 2):
            if axis > 2:
                x = x.contiguous()
            low, high, weight = _exact_linear_sources(inside, out, bool(align_corners))
            shape = (out,) + (1,) * (x.ndim - axis - 1)
            t = type(self)(weight.reshape(shape), device=self.device)
            first = _take(x, axis, low)
            x = first + (_take(x, axis, high) - first) * t
        return x.cast(self.dtype)


def _exact_linear_sources(inside: int, out: int, align_corners: bool):
    """(low, high, weight) per output index from the source position as a fraction num / den:
    (2i + 1) * in - out over 2 * out (half-pixel centres), or i * (in - 1) over out - 1."""
    i = np.arange(out, dtype=np.int64)
    num, den = (i * (inside - 1), max(out - 1, 1)) if align_corners else \
        ((2 * i + 1) * inside - out, 2 * out)
    num = np.clip(num, 0, (inside - 1) * den)
    weight = ((num % den).astype(np.float32) / np.float32(den)).astype(np.float32)
    return (num // den).tolist(), ((num + den - 1) // den).tolist(), weight


def _check_interpolate(x, mode: str, align_corners) -> int:
    """The number of spatial dims, after PyTorch's checks of mode, rank and align_corners
    ("linear" takes every rank, as tinygrad's; align_corners=False is no setting)."""
    if mode not in INTERPOLATE_MODES:
        raise ValueError(f"interpolate: mode {mode!r} is not supported; use one of "
                         f"{', '.join(INTERPOLATE_MODES)}")
    if not 3 <= x.ndim <= 5:
        raise ShapeError(f"interpolate: expected a 3-D, 4-D or 5-D input (N, C, *spatial), got "
                         f"shape {x.shape}")
    rank = INTERPOLATE_MODES[mode]
    if rank is not None and x.ndim != rank and mode != "linear":
        raise ShapeError(f"interpolate: got {x.ndim}-D input (shape {x.shape}), but {mode} mode "
                         f"needs {rank}-D input")
    if rank is None and align_corners:
        raise ValueError(f"interpolate: align_corners can only be set with the linear modes "
                         f"(linear, bilinear, trilinear), not {mode!r}")
    if rank is not None and not x.dtype.is_float:
        raise DTypeError(f"interpolate: {mode} mode needs a float tensor, got {x.dtype.name}")
    return x.ndim - 2


def _output_sizes(x, size, scale_factor, recompute, dims: int):
    """(output size per spatial dim, the scale PyTorch's index math uses per dim or None)."""
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor, got "
                         f"size={size!r} and scale_factor={scale_factor!r}")
    inside = x.shape[2:]
    if size is not None:
        sizes = (size,) * dims if isinstance(size, int) else tuple(size)
        if len(sizes) != dims or any(isinstance(s, bool) or not isinstance(s, int)
                                     for s in sizes):
            raise ShapeError(f"interpolate: size {size!r} must be an int or {dims} ints for "
                             f"spatial dims {inside} of input {x.shape}")
        scales = (None,) * dims
    else:
        factors = (scale_factor,) * dims if isinstance(scale_factor, (int, float)) \
            else tuple(scale_factor)
        if len(factors) != dims or any(not isinstance(f, (int, float)) for f in factors):
            raise ShapeError(f"interpolate: scale_factor {scale_factor!r} must be a number or "
                             f"{dims} numbers for spatial dims {inside} of input {x.shape}")
        sizes = tuple(math.floor(float(i * f)) for i, f in zip(inside, factors))
        scales = (None,) * dims if recompute else tuple(float(f) for f in factors)
    if any(s <= 0 for s in sizes + tuple(inside)):
        raise ShapeError(f"interpolate: input and output sizes must be greater than 0, got "
                         f"input {inside} and output {sizes}")
    return sizes, scales


def _scale(inside: int, out: int, scale, dtype=np.float32):
    """PyTorch's compute_scales_value: 1 / scale_factor when one was given, else in / out."""
    if scale is not None and scale > 0:
        return dtype(1.0 / scale)
    return dtype(inside) / dtype(out)


def _nearest_sources(inside: int, out: int, scale, exact: bool) -> list[int]:
    """Source index of each output index: floor(dst * scale) (nearest) or
    floor((dst + 0.5) * scale) (nearest-exact), clamped to the input, in float32."""
    if not exact and out == inside:
        return list(range(out))
    if not exact and out == 2 * inside:
        return [o >> 1 for o in range(out)]
    step = _scale(inside, out, scale)
    dst = np.arange(out, dtype=np.float32) + (np.float32(0.5) if exact else np.float32(0))
    return np.minimum(np.floor(dst * step).astype(np.int64), inside - 1).tolist()


def _linear_sources(inside: int, out: int, scale, align_corners: bool, opmath):
    """(first source index, second source index, weight of the second) per output index, as
    PyTorch's area_pixel_compute_source_index and guard_index_and_lambda compute them."""
    if align_corners:
        step = opmath(inside - 1) / opmath(out - 1) if out > 1 else opmath(0)
        source = step * np.arange(out, dtype=opmath)
    else:
        step = _scale(inside, out, scale, opmath)
        source = step * (np.arange(out, dtype=opmath) + opmath(0.5)) - opmath(0.5)
        source = np.maximum(source, opmath(0))
    first = np.minimum(np.floor(source).astype(np.int64), inside - 1)
    weight = np.clip(source - first.astype(opmath), 0, 1).astype(opmath)
    second = first + (first < inside - 1)
    return first.tolist(), second.tolist(), weight


def _take(x, axis: int, sources: list[int]):
    """x's rows `sources` along `axis`: a view when they are the identity or each row repeated
    r times, else advanced indexing (a one-hot compare and a sum)."""
    inside, out = x.shape[axis], len(sources)
    if sources == list(range(inside)):
        return x
    if out % inside == 0 and sources == [o // (out // inside) for o in range(out)]:
        repeats = out // inside
        shape = x.shape[:axis + 1] + (repeats,) + x.shape[axis + 1:]
        return x.unsqueeze(axis + 1).expand(shape).reshape(
            x.shape[:axis] + (out,) + x.shape[axis + 1:])
    return x[(slice(None),) * axis + (sources,)]
