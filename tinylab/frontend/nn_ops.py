"""Neural-network functional methods, gathered into NNMixin: products and attention (linalg.py),
convolutions (convolution.py), losses (losses.py), and here normalization and dropout. The 1-D/2-D
pools live in pooling.py. All composites of the primitive ops. Mixed into Tensor
(frontend/tensor.py).
"""
from __future__ import annotations

import math

from ..errors import ShapeError
from .convolution import ConvolutionMixin, _pair
from .linalg import LinearAlgebraMixin
from .losses import LossMixin

__all__ = ["NNMixin", "_pair"]  # _pair: its older home, still imported


class NNMixin(LinearAlgebraMixin, ConvolutionMixin, LossMixin):
    __slots__ = ()

    # ---- normalization ----
    def batchnorm(self, weight, bias, mean, invstd, axis=1):
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(self._axis(a, "batchnorm") for a in axes)
        shape = tuple(s if i in axes else 1 for i, s in enumerate(self.shape))
        for name, t in (("weight", weight), ("bias", bias), ("mean", mean), ("invstd", invstd)):
            if t is not None and t.numel() != math.prod(shape) and t.numel() != 1:
                raise ShapeError(f"batchnorm: {name} {t.shape} must hold one value per "
                                 f"channel {tuple(self.shape[a] for a in axes)} of input "
                                 f"{self.shape}")
        x = self - mean.reshape(shape)
        if weight is not None:
            x = x * weight.reshape(shape)
        x = x * (invstd.reshape(shape) if invstd.ndim == len(axes) else invstd)
        return x + bias.reshape(shape) if bias is not None else x

    def layernorm(self, axis=-1, eps: float = 1e-5):
        axis = self._reduce_axes(axis, "layernorm")
        y = self - self.mean(axis, keepdim=True)
        return y * (y * y).mean(axis, keepdim=True).add(eps).rsqrt()

    def dropout(self, p: float = 0.5):
        if not 0 <= p <= 1:
            raise ValueError(f"dropout: p must be in [0, 1], got {p}")
        if not type(self).training or p == 0:
            return self
        if p == 1:
            return self * 0
        keep = type(self).rand(*self.shape, device=self.device) >= p
        return keep.where(self, 0) * (1 / (1 - p))
