"""Sliding windows (mixed into Tensor): `_pool` views the last dims as (..., *out, *kernel) with
expand + reshape + shrink only, for pooling, convolution and unfold; its stride-1 backward is the
transposed window (`_window_grad`), registered as an autograd composite rule.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..errors import ShapeError
from . import autograd


class WindowMixin:
    __slots__ = ()

    def _pool(self, kernel: Sequence[int], stride=1, dilation=1):
        """Windows over the last len(kernel) dims: (..., *spatial) -> (..., *out, *kernel),
        built from expand + reshape + shrink only (no copies; the scheduler sees views)."""
        n = len(kernel)
        strides = (stride,) * n if isinstance(stride, int) else tuple(stride)
        dilations = (dilation,) * n if isinstance(dilation, int) else tuple(dilation)
        spatial = self.shape[-n:]
        for i, k, s, d in zip(spatial, kernel, strides, dilations):
            if d * (k - 1) + 1 > i:
                raise ShapeError(f"pool: window {tuple(kernel)} (dilation {dilations}) does not "
                                 f"fit input {spatial}")
            if s < 1 or d < 1:
                raise ShapeError(f"pool: stride and dilation must be >= 1, got {strides}, "
                                 f"{dilations}")
        x = self
        batch = self.ndim - n
        for j in range(n):  # window one spatial axis at a time (always the last one)
            i, k, s, d = spatial[-1 - j], kernel[-1 - j], strides[-1 - j], dilations[-1 - j]
            x = _window_last(x, i, k, s, d)
            x = x.permute(_rotate_axes(x.ndim, batch, n, j))
        # now (..., O_1, k_1, O_2, k_2, ...) -> (..., O_1..O_n, k_1..k_n)
        outs = [batch + 2 * a for a in range(n)]
        ks = [batch + 2 * a + 1 for a in range(n)]
        x = x.permute(tuple(range(batch)) + tuple(outs) + tuple(ks))
        if all(s == 1 for s in strides) and x.node is not self.node:
            autograd.composite(x.node, self.node, lambda grad, _: _window_grad(
                grad, spatial, tuple(kernel), dilations))
        return x


def _window_last(x, i: int, k: int, s: int, d: int):
    """Windows over the last axis: (..., i) -> (..., O, k) with x[..., o*s + kk*d]."""
    lead = x.shape[:-1]
    out = (i - d * (k - 1) - 1) // s + 1
    keep = tuple((0, n) for n in lead)
    if d == 1 and s >= k:  # windows do not overlap: a reshape, whose backward is a reshape too
        if out * s > i:
            y = x.pad(tuple((0, 0) for _ in lead) + ((0, out * s - i),))
        else:
            y = x.shrink(keep + ((0, out * s),))
        return y.reshape(lead + (out, s)).shrink(keep + ((0, out), (0, k)))
    repeats = math.ceil(k * (i + d) / i)
    y = x.reshape(lead + (1, i)).expand(lead + (repeats, i)).reshape(lead + (repeats * i,))
    y = y.shrink(tuple((0, n) for n in lead) + ((0, k * (i + d)),)).reshape(lead + (k, i + d))
    if out * s > i + d:
        y = y.pad(tuple((0, 0) for _ in lead) + ((0, 0), (0, out * s - (i + d))))
    y = y.shrink(tuple((0, n) for n in lead) + ((0, k), (0, out * s)))
    y = y.reshape(lead + (k, out, s)).shrink(tuple((0, n) for n in lead) +
                                              ((0, k), (0, out), (0, 1)))
    return y.reshape(lead + (k, out)).permute(tuple(range(len(lead))) +
                                              (len(lead) + 1, len(lead)))


def _window_grad(grad, spatial: tuple, kernel: tuple, dilations: tuple):
    """Backward of stride-1 windows, as views of the gradient and one sum: the transposed window.

    grad is (..., O_1..O_n, k_1..k_n); input position j took part in window o = j - kk*d at tap
    kk, so dx[j] = sum over kk of grad[j - kk*d, kk] (zero where j - kk*d is not a window). Per
    axis, that is a skew: lay grad out as (k, L) with the window axis padded by (k-1)*d in front
    and (k-1)*d + d behind (L = i + k*d), flatten, drop the first (k-1)*d values and read the rest
    as rows of L - d: row kk, column j is then grad[j - kk*d, kk]. Every index is affine within a
    row, so the kernel is a convolution of the padded gradient with the flipped taps.
    """
    n = len(kernel)
    batch = len(grad.shape) - 2 * n
    # (..., O_1..O_n, k_1..k_n) -> (..., k_1, O_1, ..., k_n, O_n)
    order = list(range(batch))
    for a in range(n):
        order += [batch + n + a, batch + a]
    g = grad.permute(tuple(order))
    for a in range(n):
        i, k, d = spatial[a], kernel[a], dilations[a]
        at = batch + 2 * a  # this axis's (k, O) pair starts here
        lead, tail = g.shape[:at], g.shape[at + 2:]
        keep_lead = tuple((0, m) for m in lead)
        keep_tail = tuple((0, m) for m in tail)
        # move the pair last, skew it, move it back
        rest = tuple(range(at)) + tuple(range(at + 2, len(g.shape)))
        g = g.permute(rest + (at, at + 1))
        front = (k - 1) * d
        g = g.pad(tuple((0, 0) for _ in lead + tail) + ((0, 0), (front, front + d)))
        length = g.shape[-1]  # i + k*d
        g = g.reshape(lead + tail + (k * length,))
        g = g.shrink(keep_lead + keep_tail + ((front, front + k * (length - d)),))
        g = g.reshape(lead + tail + (k, length - d))
        g = g.shrink(keep_lead + keep_tail + ((0, k), (0, i)))
        back = list(range(at)) + [len(g.shape) - 2, len(g.shape) - 1] + \
            list(range(at, len(g.shape) - 2))
        g = g.permute(tuple(back))
    ks = tuple(batch + 2 * a for a in range(n))
    return g.sum(ks).reshape(grad.shape[:batch] + tuple(spatial))


def _rotate_axes(ndim: int, batch: int, n: int, j: int) -> tuple:
    """Layout before windowing step j: (batch, j done (O, k) pairs, unwindowed spatial axes);
    after it the new (O, k) pair is last. Move it in front of the done pairs (keeping spatial
    order) so the next unwindowed axis is last again."""
    remaining = n - 1 - j
    axes = list(range(ndim))
    head = axes[:batch]
    done = axes[batch:batch + 2 * j]
    rest = axes[batch + 2 * j:batch + 2 * j + remaining]
    new_pair = axes[batch + 2 * j + remaining:]
    return tuple(head + new_pair + done + rest)
