"""Optimizers with torch.optim's update rules (step for step): SGD (momentum, nesterov,
weight decay), Adam, AdamW, LAMB. Every update is a lazy tensor expression; `step()` realizes all
parameters and optimizer state in one schedule, so updates fuse into few kernels.
Uses only the public Tensor API.
"""
from __future__ import annotations

from ..dtype import dtypes
from ..frontend.tensor import Tensor


class Optimizer:
    def __init__(self, params: list[Tensor], lr: float):
        unique, seen = [], set()
        for p in params:
            if id(p) not in seen:
                seen.add(id(p))
                unique.append(p)
        for p in unique:
            if p.requires_grad is None:
                p.requires_grad = True
        self.params = [p for p in unique if p.requires_grad]
        if not self.params:
            raise ValueError("optimizer got no parameters that require gradients")
        self.buffers = [p for p in unique if not p.requires_grad]
        self.lr = Tensor([lr], device=self.params[0].device, requires_grad=False)
        self.device = self.params[0].device

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        Tensor.realize(*self.schedule_step())

    def schedule_step(self) -> list[Tensor]:
        for i, p in enumerate(self.params):
            if p.grad is None:
                raise RuntimeError(f"parameter {i} {p.shape} has no gradient; call backward() "
                                   f"first (or leave it out of the optimizer)")
        return self._step() + self.params + self.buffers

    def _step(self) -> list[Tensor]:
        raise NotImplementedError


def _state_like(p: Tensor) -> Tensor:
    return Tensor.zeros(*p.shape, device=p.device, dtype=p.dtype, requires_grad=False).contiguous()


class SGD(Optimizer):
    def __init__(self, params, lr: float = 0.001, momentum: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False, classic: bool = False):
        super().__init__(params, lr)
        self.momentum, self.weight_decay, self.nesterov = momentum, weight_decay, nesterov
        self.classic = classic
        self.velocity = [_state_like(p) for p in self.params] if momentum else []
        self.started = False

    def _step(self) -> list[Tensor]:
        lr = self.lr.reshape(())
        for i, p in enumerate(self.params):
            g = p.grad.detach()
            if self.weight_decay:
                g = g + self.weight_decay * p.detach()
            if self.momentum:
                v = self.velocity[i]
                # torch: the first step's buffer is the gradient itself
                new_v = g if not self.started else self.momentum * v + g
                v.assign(new_v)
                g = g + self.momentum * v if self.nesterov else v
            p.assign(p.detach() - lr * g)
        self.started = True
        return self.velocity


class LAMB(Optimizer):
    """LAMB (You et al. 2019); with adam=True and no trust ratio it is Adam / AdamW."""

    def __init__(self, params, lr: float = 0.001, b1: float = 0.9, b2: float = 0.999,
                 eps: float = 1e-6, weight_decay: float = 0.0, adam: bool = False):
        super().__init__(params, lr)
        self.b1, self.b2, self.eps, self.weight_decay, self.adam = b1, b2, eps, weight_decay, adam
        self.t = Tensor([0], dtype=dtypes.int32, device=self.device, requires_grad=False)
        self.m = [_state_like(p) for p in self.params]
        self.v = [_state_like(p) for p in self.params]

    def _step(self) -> list[Tensor]:
        self.t.assign(self.t + 1)
        t = self.t.cast(dtypes.float32).reshape(())
        lr = self.lr.reshape(())
        correction1 = 1 - self.b1 ** t
        correction2 = 1 - self.b2 ** t
        for i, p in enumerate(self.params):
            g = p.grad.detach()
            self.m[i].assign(self.b1 * self.m[i] + (1 - self.b1) * g)
            self.v[i].assign(self.b2 * self.v[i] + (1 - self.b2) * (g * g))
            m_hat = self.m[i] / correction1
            if self.adam:  # torch.optim.Adam(W): denominator sqrt(v)/sqrt(c2) + eps
                update = m_hat / (self.v[i].sqrt() / correction2.sqrt() + self.eps)
            else:
                update = m_hat / ((self.v[i] / correction2).sqrt() + self.eps)
            if self.weight_decay:
                update = update + self.weight_decay * p.detach() if not self.adam else update
            if not self.adam:
                weight_norm = (p.detach() * p.detach()).sum().sqrt()
                update_norm = (update * update).sum().sqrt()
                trust = ((weight_norm > 0) & (update_norm > 0)).where(weight_norm / update_norm,
                                                                      1.0)
            else:
                trust = 1.0
            decayed = p.detach() * (1 - lr * self.weight_decay) if self.adam and \
                self.weight_decay else p.detach()
            p.assign(decayed - lr * trust * update)
        return [self.t] + self.m + self.v


def Adam(params, lr: float = 0.001, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,  # noqa: N802
         weight_decay: float = 0.0):
    """torch.optim.Adam (weight_decay as L2 added to the gradient)."""
    opt = LAMB(params, lr, b1, b2, eps, 0.0, adam=True)
    if weight_decay:
        opt.l2 = weight_decay
        original = opt._step

        def with_l2():
            for p in opt.params:
                p.grad = p.grad + weight_decay * p.detach()
            return original()
        opt._step = with_l2
    return opt


def AdamW(params, lr: float = 0.001, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,  # noqa: N802
          weight_decay: float = 0.01):
    """torch.optim.AdamW (decoupled weight decay)."""
    return LAMB(params, lr, b1, b2, eps, weight_decay, adam=True)
