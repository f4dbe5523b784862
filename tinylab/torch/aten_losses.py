"""ATen's losses in tinylab's Tensor API, argument for argument as their ATen schemas (reduction
is ATen's enum: 0 none, 1 mean, 2 sum), with their backward ops in closed form (the derivative
beside each). aten_table.py's rows point here.
"""
from __future__ import annotations

from types import MappingProxyType
from ..frontend.tensor import Tensor

REDUCTIONS = MappingProxyType({0: "none", 1: "mean", 2: "sum"})  # ATen's reduction enum


def reduced(loss: Tensor, reduction: int) -> Tensor:
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[REDUCTIONS[reduction]]


def scaled(grad: Tensor, reduction: int, like: Tensor) -> Tensor:
    """A loss's output gradient per element: divided by the count for a mean."""
    return grad / like.numel() if REDUCTIONS[reduction] == "mean" else grad


def _class_weights(target, weight, ignore_index):
    """Each target's class weight (0 where the target is ignore_index)."""
    safe = (target == ignore_index).where(0, target)
    w = weight[safe] if weight is not None else Tensor.ones(*target.shape)
    return (target != ignore_index).where(w, 0.0)


def nll_loss_forward(x, target, weight, reduction, ignore_index):
    """(loss, total weight) of NLL over class dim 1 (or 0 for an (N? ,C) of one sample)."""
    name = REDUCTIONS[reduction]
    loss = x.nll_loss(target, weight, ignore_index, name)
    total = _class_weights(target, weight, ignore_index).sum().cast(x.dtype)
    return loss, total


def nll_loss_backward(grad, x, target, weight, reduction, ignore_index, total_weight):
    """d loss / d x = -w[target] at each sample's target class (scaled by 1/total for mean)."""
    cls = 1 if x.ndim > 1 else 0
    w = _class_weights(target, weight, ignore_index)
    safe = (target == ignore_index).where(0, target)
    hot = safe.one_hot(x.shape[cls])
    if cls == 1 and x.ndim > 2:  # (N, d..., C) -> (N, C, d...)
        hot = hot.permute((0, hot.ndim - 1) + tuple(range(1, hot.ndim - 1)))
    scale = grad / total_weight if REDUCTIONS[reduction] == "mean" else grad
    w = w.unsqueeze(cls) if x.ndim > 1 else w
    if REDUCTIONS[reduction] == "none" and x.ndim > 1:
        scale = scale.unsqueeze(cls)
    return (hot.cast(x.dtype) * (-w * scale)).cast(x.dtype)


def mse_loss(x, target, reduction=1):
    squared = (x - target) ** 2
    return {"none": squared, "mean": squared.mean(), "sum": squared.sum()}[REDUCTIONS[reduction]]


def mse_loss_backward(grad, x, target, reduction):
    """d (x - t)² = 2 (x - t)."""
    return scaled(grad, reduction, x) * 2 * (x - target)


def bce_with_logits(x, target, weight=None, pos_weight=None, reduction=1):
    """-(pw·t·log σ(x) + (1 - t)·log(1 - σ(x))), with log σ(x) = -softplus(-x) kept finite."""
    log_sig, log_one_minus = -(-x).softplus(), -x.softplus()
    positive = target if pos_weight is None else target * pos_weight
    loss = -(positive * log_sig + (1 - target) * log_one_minus)
    return reduced(loss if weight is None else loss * weight, reduction)


def binary_cross_entropy(p, target, weight=None, reduction=1):
    """-(t·log p + (1 - t)·log(1 - p)), each log clamped at -100 as PyTorch's."""
    loss = -(target * p.log().maximum(-100.0) + (1 - target) * (1 - p).log().maximum(-100.0))
    return reduced(loss if weight is None else loss * weight, reduction)


def binary_cross_entropy_backward(grad, p, target, weight=None, reduction=1):
    """d/dp = (p - t) / max(p (1 - p), 1e-12) (PyTorch's epsilon)."""
    slope = (p - target) / (p * (1 - p)).maximum(1e-12)
    out = scaled(grad, reduction, p) * slope
    return out if weight is None else out * weight


def smooth_l1_loss(x, target, reduction=1, beta=1.0):
    """0.5·d²/β where |d| < β, else |d| - 0.5·β (d = x - t; β = 0: the L1 loss)."""
    d = (x - target).abs()
    loss = d if beta == 0 else (d < beta).where(0.5 * d * d / beta, d - 0.5 * beta)
    return reduced(loss, reduction)


def smooth_l1_loss_backward(grad, x, target, reduction, beta):
    """d/dx = d/β inside, sign(d) outside."""
    d = x - target
    slope = d.sign() if beta == 0 else (d.abs() < beta).where(d / beta, d.sign())
    return scaled(grad, reduction, x) * slope


def huber_loss(x, target, reduction=1, delta=1.0):
    """0.5·d² where |d| < δ, else δ·(|d| - 0.5·δ)."""
    d = (x - target).abs()
    return reduced((d < delta).where(0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def huber_loss_backward(grad, x, target, reduction, delta):
    """d/dx = d inside, δ·sign(d) outside."""
    d = x - target
    return scaled(grad, reduction, x) * (d.abs() < delta).where(d, delta * d.sign())

