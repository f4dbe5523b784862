"""Pointwise math and reductions of ATen in tinylab's Tensor API: the named functions aten_table.py's
rows point at when a row outgrows a line (a reduce over ATen's dim lists, max.dim's indices,
elu's three scales, xlogy's zero, ...), each in its ATen schema's argument order.
"""
from __future__ import annotations

import math

import numpy as np

from ..dtype import dtypes
from ..frontend.tensor import Tensor
from .aten_shape import _dims
from .interop import tinylab_dtype


def cast(value, dtype):
    return value if dtype is None else value.cast(tinylab_dtype(dtype))


def reduce(method):
    """A reduce row: (self, dim=None, keepdim=False, dtype=None) over the dims (all if none)."""
    def row(x, dim=None, keepdim=False, dtype=None):
        x = cast(x, dtype)
        return method(x, _dims(x, dim), keepdim=keepdim) if x.ndim else x
    return row


def with_indices(method, arg):
    """max.dim / min.dim: (values, int64 indices of the first extreme) along one dim."""
    def row(x, dim, keepdim=False):
        ordered = x.cast(dtypes.uint8) if x.dtype is dtypes.bool else x  # False < True
        return (method(x, dim, keepdim=keepdim),
                arg(ordered, dim, keepdim=keepdim).cast(dtypes.int64))
    return row


def variance(x, dim=None, correction=None, keepdim=False):
    return x.var(_dims(x, dim), keepdim=keepdim, correction=1 if correction is None else correction)


def elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    """scale · (x if x > 0 else α·(exp(x·input_scale) - 1))."""
    return (x > 0).where(x, alpha * (x * input_scale).expm1()) * scale


def sort(x, dim=-1, descending=False, stable=None):
    values, indices = x.sort(dim, descending)
    return values, indices.cast(dtypes.int64)


def topk(x, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - ATen's name
    values, indices = x.topk(k, dim, largest, sorted)
    return values, indices.cast(dtypes.int64)


def arg(method):
    def row(x, dim=None, keepdim=False):
        return method(x, dim, keepdim=keepdim).cast(dtypes.int64)
    return row


def scalar_first(op):
    """An overload whose `self` is a Python number (pow.Scalar, remainder.Scalar_Tensor)."""
    return lambda a, b: op(Tensor(a, dtype=b.dtype if b.dtype.is_float else None), b)


def copy(x, src, non_blocking=False):
    return src.cast(x.dtype).expand(x.shape)


def scatter_reduce(x, dim, index, src, reduce, include_self=True):
    return x.scatter_reduce(dim, index, src, {"sum": "sum", "prod": "prod", "mean": "mean",
                                              "amax": "amax", "amin": "amin"}[reduce],
                            include_self)


def xlogy(x, y):
    """x·log(y), 0 where x is 0 (unless y is NaN)."""
    x, y = (v if isinstance(v, Tensor) else Tensor(v) for v in (x, y))
    return ((x == 0) & ~y.isnan()).where(0.0, x * y.log())


def hypot(a, b):
    """√(a² + b²) without overflow: the larger magnitude times √(1 + r²)."""
    a, b = a.abs(), b.abs()
    big, small = a.maximum(b), a.minimum(b)
    ratio = (big == 0).where(0.0, small / (big == 0).where(1.0, big))
    return (big.isinf() | small.isinf()).where(math.inf, big * (1 + ratio * ratio).sqrt())


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced (by 0 and the dtype's largest finite values by default)."""
    if not x.dtype.is_float:
        return x
    largest = float(np.finfo(x.dtype.np).max)
    x = x.isnan().where(0.0 if nan is None else nan, x)
    x = (x == math.inf).where(largest if posinf is None else posinf, x)
    return (x == -math.inf).where(-largest if neginf is None else neginf, x)


def logit(x, eps=None):
    """log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps is given."""
    if eps is not None:
        x = x.clip(eps, 1 - eps)
    return (x / (1 - x)).log()


def logit_backward(grad, x, eps=None):
    """grad / (x (1 - x)); 0 outside [eps, 1 - eps] (the clamp's gradient) when eps is given."""
    slope = grad / (x * (1 - x))
    return slope if eps is None else ((x < eps) | (x > 1 - eps)).where(0.0, slope)


def log_sigmoid_forward(x):
    """(log σ(x) = -softplus(-x), the buffer PyTorch's CPU kernel keeps: unused here)."""
    return -(-x).softplus(), Tensor.zeros(0, dtype=x.dtype)


def prelu(x, weight):
    """x where x > 0, else weight·x (weight per channel, dim 1)."""
    return (x > 0).where(x, weight * x)


def prelu_backward(grad, x, weight):
    """(d/dx = 1 or weight; d/dweight = x where x <= 0), d/dweight summed to weight's shape."""
    positive = x > 0
    grad_weight = positive.where(0.0, grad * x)
    lead = grad_weight.ndim - weight.ndim
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(weight.shape)
                                      if s == 1 and grad_weight.shape[lead + i] != 1)
    summed = grad_weight.sum(axes, keepdim=True).reshape(weight.shape) if axes else grad_weight
    return positive.where(grad, grad * weight), summed


def glu(x, dim=-1):
    """a·σ(b) for the two halves a, b of x along dim."""
    a, b = x.chunk(2, dim)
    return a * b.sigmoid()


def vector_norm(x, ord=2, dim=None, keepdim=False, dtype=None):  # noqa: A002 - ATen's name
    """The ord-norm over dim (every dim when none): ord 2, 1, inf, -inf, 0 or any p."""
    x = cast(x, dtype)
    axes = _dims(x, dim)
    a = x.abs()
    if ord == 2:
        return (a * a).sum(axes, keepdim=keepdim).sqrt()
    if ord == 1:
        return a.sum(axes, keepdim=keepdim)
    if ord == math.inf:
        return a.max(axes, keepdim=keepdim)
    if ord == -math.inf:
        return a.min(axes, keepdim=keepdim)
    if ord == 0:
        return (a != 0).cast(x.dtype).sum(axes, keepdim=keepdim)
    return (a ** ord).sum(axes, keepdim=keepdim) ** (1 / ord)


def linspace(start, end, steps, dtype=None, **_):
    return Tensor.linspace(start, end, steps, dtype=tinylab_dtype(dtype) if dtype else None)


def logspace(start, end, steps, base=10.0, dtype=None, **_):
    exponents = Tensor.linspace(start, end, steps, dtype=dtypes.float32)
    return cast(Tensor.full((), float(base)) ** exponents, dtype)


def running(method):
    """cummax / cummin along dim: (values, int64 index of the value each running extreme came
    from, the latest where it repeats), as Tensor.cummax / cummin give them (int32 there)."""
    def row(x, dim):
        values, index = method(x, dim % x.ndim if x.ndim else 0)
        return values, index.cast(dtypes.int64)
    return row
