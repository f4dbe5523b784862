"""Optimizers with torch.optim's update rules, step for step: SGD (momentum, dampening, nesterov,
weight decay), Adam, AdamW, and LAMB (You et al. 2019); tinygrad's Muon and LARS. `opt.step()`
realizes every parameter and every piece of state in one schedule. All state (step count, lr,
moments) lives in tensors updated with `assign`, so a TinyJit-captured step replays correctly.
Public Tensor API only.
"""
from __future__ import annotations

import math

import numpy as np

from ..dtype import dtypes
from ..frontend.tensor import Tensor


def _check_number(value, name: str, optimizer: str, low: float = 0.0,
                  below: float | None = None) -> float:
    """A float in [low, below) (or [low, inf)); else a TypeError / ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{optimizer}: {name} must be a number, got {value!r}")
    if not math.isfinite(value) or value < low or (below is not None and value >= below):
        bounds = f"[{low}, {below})" if below is not None else f">= {low}"
        raise ValueError(f"{optimizer}: {name} must be {bounds}, got {value}")
    return float(value)


def _unique_tensors(params, optimizer: str) -> list[Tensor]:
    if isinstance(params, Tensor):
        params = [params]
    unique, seen = [], set()
    for index, p in enumerate(params):
        if isinstance(p, dict):
            raise TypeError(f"{optimizer}: parameter groups (dicts) are not supported; pass a "
                            f"list of tensors, e.g. nn.state.get_parameters(model)")
        if not isinstance(p, Tensor):
            raise TypeError(f"{optimizer}: params[{index}] is {type(p).__name__}, not a Tensor")
        if id(p) not in seen:
            seen.add(id(p))
            unique.append(p)
    return unique


class Optimizer:
    """Holds the trainable `params` (float tensors that require grad) and the `buffers` (other
    tensors, such as BatchNorm running stats, realized with each step), `lr` as a tensor and a
    `step_count` tensor. Subclasses build each step's update in `_update`."""

    def __init__(self, params, lr: float):
        name = type(self).__name__
        lr = _check_number(lr, "lr", name)
        tensors = _unique_tensors(params, name)
        for p in tensors:
            if p.requires_grad is None and p.dtype.is_float and p.is_param:
                p.requires_grad = True
        trained = [p.is_param and p.requires_grad and p.dtype.is_float for p in tensors]
        self.params = [p for p, t in zip(tensors, trained) if t]
        if not self.params:
            raise ValueError(f"{name}: got no float parameters that require gradients")
        self.buffers = [p for p, t in zip(tensors, trained) if not t]  # is_param_(False) too
        Tensor.realize(*tensors)  # lazy initial values (random init) in one schedule
        self.device = self.params[0].device
        self.lr = Tensor([lr], device=self.device, dtype=dtypes.float32, requires_grad=False)
        self.step_count = Tensor([0], dtype=dtypes.int32, device=self.device, requires_grad=False)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        Tensor.realize(*self.schedule_step())

    def schedule_step(self) -> list[Tensor]:
        """Build this step's updates (lazily) and return every tensor that must be realized."""
        for index, p in enumerate(self.params):
            if p.grad is None:
                raise RuntimeError(f"{type(self).__name__}: parameter {index} {p.shape} has no "
                                   f"gradient; call loss.backward() first (or leave it out of "
                                   f"the optimizer)")
            if p.grad.shape != p.shape:
                raise ValueError(f"{type(self).__name__}: parameter {index} has shape {p.shape} "
                                 f"but its gradient has shape {p.grad.shape}")
        # the losses backward() ran on are computed in the same schedule, from the weights as they
        # were before this update (and sharing the forward pass with the gradients)
        losses = Tensor.pending_backward_roots()
        self.step_count.assign(self.step_count + 1)
        state = self._update(self.lr.reshape(()), self.step_count.reshape(()))
        return [*losses, self.step_count, *state, *self.params, *self.buffers]

    def _update(self, lr: Tensor, step: Tensor) -> list[Tensor]:
        """Assign each parameter its new value; return the state tensors that changed."""
        raise NotImplementedError


def _filled(shape: tuple, dtype, device: str, value: float) -> Tensor:
    """A realized buffer of optimizer state, every element `value` (copied in, no kernel: a
    first step does not wait for a fill kernel's compile before its own batch)."""
    return Tensor(np.full(shape, value, dtype=dtype.np), device=device, requires_grad=False)


def _zeros_like(p: Tensor) -> Tensor:
    return _filled(p.shape, p.dtype, p.device, 0)


class SGD(Optimizer):
    """torch.optim.SGD: g += wd·p; b = momentum·b + (1 - dampening)·g (b = g on step 1);
    g = g + momentum·b (nesterov) or b; p -= lr·g. classic=True applies lr before momentum."""

    def __init__(self, params, lr: float = 0.001, momentum: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, classic: bool = False,
                 dampening: float = 0.0):
        super().__init__(params, lr)
        self.momentum = _check_number(momentum, "momentum", "SGD")
        self.weight_decay = _check_number(weight_decay, "weight_decay", "SGD")
        self.dampening = _check_number(dampening, "dampening", "SGD")
        if nesterov and (self.momentum == 0 or self.dampening != 0):
            raise ValueError("SGD: nesterov needs momentum > 0 and dampening 0")
        self.nesterov, self.classic = nesterov, classic
        self.velocity = [_zeros_like(p) for p in self.params] if self.momentum else []

    def _update(self, lr: Tensor, step: Tensor) -> list[Tensor]:
        for index, p in enumerate(self.params):
            g = p.grad
            if self.weight_decay:
                g = g + self.weight_decay * p.detach()
            if self.classic:
                g = g * lr
            if self.momentum:
                g = self._momentum(self.velocity[index], g, step)
            if not self.classic:
                g = g * lr
            p.assign(p.detach() - g)
        return self.velocity

    def _momentum(self, velocity: Tensor, g: Tensor, step: Tensor) -> Tensor:
        # the buffer starts at zero, so without dampening step 1 gives b = g as torch does
        scale = (step == 1).where(1.0, 1.0 - self.dampening) if self.dampening else 1.0
        velocity.assign(self.momentum * velocity + scale * g)
        return g + self.momentum * velocity if self.nesterov else velocity


def _one_minus_power(base: float, t: Tensor) -> Tensor:
    """1 - base^t for 0 <= base < 1, accurate in float32 even while base^t is close to 1 (torch
    computes it in float64): -expm1(z), z = t·ln(base), from its Taylor series while |z| < 0.1
    (terms to z^6: relative error < 1e-9) and as 1 - exp(z) beyond (error < 1e-6)."""
    if base == 0:
        return t * 0 + 1
    z = t * math.log(base)
    series = -z * (1 + z / 2 * (1 + z / 3 * (1 + z / 4 * (1 + z / 5 * (1 + z / 6)))))
    return (z > -0.1).where(series, 1 - z.exp())


class LAMB(Optimizer):
    """LAMB (You et al. 2019, Algorithm 2): Adam's bias-corrected direction
    r = m̂ / (sqrt(v̂) + eps), plus weight decay wd·p, scaled per tensor by the trust ratio
    ||p|| / ||r + wd·p|| (1 when either norm is 0). adam=True drops the trust ratio, which is
    AdamW with torch's denominator sqrt(v) / sqrt(1 - b2^t) + eps."""

    def __init__(self, params, lr: float = 0.001, b1: float = 0.9, b2: float = 0.999,
                 eps: float = 1e-6, weight_decay: float = 0.0, adam: bool = False,
                 betas: tuple[float, float] | None = None):
        super().__init__(params, lr)
        name = type(self).__name__
        b1, b2 = betas if betas is not None else (b1, b2)
        self.b1 = _check_number(b1, "b1 (betas[0])", name, below=1.0)
        self.b2 = _check_number(b2, "b2 (betas[1])", name, below=1.0)
        self.eps = _check_number(eps, "eps", name)
        self.weight_decay = _check_number(weight_decay, "weight_decay", name)
        self.adam = adam
        self.m = [_zeros_like(p) for p in self.params]
        self.v = [_zeros_like(p) for p in self.params]
        # b1^t and b2^t under tinygrad's names (its state dicts carry them); the corrections
        # below are computed from the step count, accurate while b^t is close to 1
        self.b1_t = _filled((1,), dtypes.float32, self.device, 1)
        self.b2_t = _filled((1,), dtypes.float32, self.device, 1)

    def _gradient(self, p: Tensor) -> Tensor:
        return p.grad

    def _update(self, lr: Tensor, step: Tensor) -> list[Tensor]:
        self.b1_t.assign(self.b1_t * self.b1)
        self.b2_t.assign(self.b2_t * self.b2)
        t = step.cast(dtypes.float32)
        correction1, correction2 = _one_minus_power(self.b1, t), _one_minus_power(self.b2, t)
        for index, p in enumerate(self.params):
            g = self._gradient(p)
            m, v = self.m[index], self.v[index]
            m.assign(self.b1 * m + (1 - self.b1) * g)
            v.assign(self.b2 * v + (1 - self.b2) * (g * g))
            if self.adam:
                update = (m / correction1) / (v.sqrt() / correction2.sqrt() + self.eps)
            else:
                update = (m / correction1) / ((v / correction2).sqrt() + self.eps)
            if self.weight_decay:
                update = update + self.weight_decay * p.detach()
            scaled = lr * update if self.adam else lr * self._trust_ratio(p, update) * update
            p.assign(p.detach() - scaled)
        return [self.b1_t, self.b2_t, *self.m, *self.v]

    @staticmethod
    def _trust_ratio(p: Tensor, update: Tensor) -> Tensor:
        weight_norm = (p.detach() * p.detach()).sum().sqrt()
        update_norm = (update * update).sum().sqrt()
        both_positive = (weight_norm > 0) & (update_norm > 0)
        return both_positive.where(weight_norm / update_norm, 1.0)


class Adam(LAMB):
    """torch.optim.Adam; weight_decay is L2 (added to the gradient before the moments)."""

    def __init__(self, params, lr: float = 0.001, b1: float = 0.9, b2: float = 0.999,
                 eps: float = 1e-8, weight_decay: float = 0.0,
                 betas: tuple[float, float] | None = None):
        super().__init__(params, lr, b1, b2, eps, 0.0, adam=True, betas=betas)
        self.l2 = _check_number(weight_decay, "weight_decay", "Adam")

    def _gradient(self, p: Tensor) -> Tensor:
        return p.grad + self.l2 * p.detach() if self.l2 else p.grad


class AdamW(LAMB):
    """torch.optim.AdamW: decoupled weight decay, p -= lr·(adam direction + wd·p)."""

    def __init__(self, params, lr: float = 0.001, b1: float = 0.9, b2: float = 0.999,
                 eps: float = 1e-8, weight_decay: float = 0.01,
                 betas: tuple[float, float] | None = None):
        super().__init__(params, lr, b1, b2, eps, weight_decay, adam=True, betas=betas)


def newton_schulz(g: Tensor, steps: int, coefficients: tuple[float, ...],
                  eps: float = 1e-7) -> Tensor:
    """Orthogonalize a matrix: X = G / (||G||_F + eps), then `steps` times
    X = sum_i c_i (X Xᵀ)^i X (Muon's quintic for 3 coefficients); wide form (rows <= cols)."""
    if g.shape[-2] > g.shape[-1]:
        return newton_schulz(g.transpose(-2, -1), steps, coefficients, eps).transpose(-2, -1)
    x = g / ((g * g).sum((-2, -1), keepdim=True).sqrt() + eps)
    for _ in range(steps):
        gram, term, total = x @ x.transpose(-2, -1), x, None
        for index, coefficient in enumerate(coefficients):
            term = term if index == 0 else gram @ term
            total = coefficient * term if total is None else total + coefficient * term
        x = total
    return x


class Muon(Optimizer):
    """tinygrad's Muon: b = momentum·b + g; g = g + momentum·b (nesterov) or b; g reshaped to
    (rows, -1) and orthogonalized by newton_schulz; p -= lr·g. weight_decay is kept as tinygrad
    keeps it: its post-momentum decay never reaches the parameter, so it changes nothing."""

    def __init__(self, params, lr: float = 0.001, momentum: float = 0.95,
                 weight_decay: float = 0.1, ns_steps: int = 5,
                 ns_coefficients: tuple[float, ...] = (3.4445, -4.775, 2.0315),
                 nesterov: bool = True):
        super().__init__(params, lr)
        self.momentum = _check_number(momentum, "momentum", "Muon")
        self.weight_decay = _check_number(weight_decay, "weight_decay", "Muon")
        if isinstance(ns_steps, bool) or not isinstance(ns_steps, int) or ns_steps < 0:
            raise ValueError(f"Muon: ns_steps must be an int >= 0, got {ns_steps!r}")
        self.ns_steps, self.ns_coefficients = ns_steps, tuple(ns_coefficients)
        self.nesterov = nesterov
        self.b = [_zeros_like(p) for p in self.params] if self.momentum else []

    def _update(self, lr: Tensor, step: Tensor) -> list[Tensor]:
        for index, p in enumerate(self.params):
            g = p.grad
            if self.momentum:
                self.b[index].assign(self.momentum * self.b[index] + g)
                g = g + self.momentum * self.b[index] if self.nesterov else self.b[index]
            rows = p.shape[0] if p.ndim else 1
            g = newton_schulz(g.reshape(rows, -1), self.ns_steps, self.ns_coefficients)
            p.assign(p.detach() - (g.reshape(p.shape) * lr).cast(p.dtype))
        return self.b


class LARS(Optimizer):
    """tinygrad's LARS (You et al. 2017, layer-wise adaptive rate scaling), rule for rule: per
    tensor the trust ratio r = tcoef·‖p‖ / (‖g‖ + wd·‖p‖) (1 where either norm is 0, or with
    tcoef 0); g += wd·p (pre_wd); g *= r·lr (classic: before the momentum); b = momentum·b + g;
    g = g + momentum·b (nesterov) or b; g *= r·lr (not classic: after it); g += wd·lr·p (not
    pre_wd); p -= g."""

    def __init__(self, params, lr: float = 0.001, momentum: float = 0.9,
                 weight_decay: float = 1e-4, nesterov: bool = False, classic: bool = True,
                 pre_wd: bool = True, tcoef: float = 0.001):
        super().__init__(params, lr)
        self.momentum = _check_number(momentum, "momentum", "LARS")
        self.weight_decay = _check_number(weight_decay, "weight_decay", "LARS")
        self.tcoef = _check_number(tcoef, "tcoef", "LARS")
        self.nesterov, self.classic, self.pre_wd = nesterov, classic, pre_wd
        self.b = [_zeros_like(p) for p in self.params] if self.momentum else []

    def _trust_ratio(self, p: Tensor, g: Tensor):
        if not self.tcoef:
            return 1.0
        weight_norm, grad_norm = (p.detach() * p.detach()).sum().sqrt(), (g * g).sum().sqrt()
        ratio = self.tcoef * weight_norm / (grad_norm + self.weight_decay * weight_norm)
        return (weight_norm > 0).where((grad_norm > 0).where(ratio, 1.0), 1.0)

    def _update(self, lr: Tensor, step: Tensor) -> list[Tensor]:
        wd = self.weight_decay
        for index, p in enumerate(self.params):
            g = p.grad
            r = self._trust_ratio(p, g)
            if self.pre_wd and wd:
                g = g + wd * p.detach()
            if self.classic:
                g = g * r * lr
            if self.momentum:
                self.b[index].assign(self.momentum * self.b[index] + g)
                g = g + self.momentum * self.b[index] if self.nesterov else self.b[index]
            if not self.classic:
                g = g * r * lr
            if not self.pre_wd and wd:
                g = g + wd * lr * p.detach()
            p.assign(p.detach() - g.cast(p.dtype))
        return self.b
