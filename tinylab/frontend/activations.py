"""Activation functions (relu, gelu, silu, softplus, hardswish...): each a short composite of
elementwise methods, so it fuses into the kernel around it. Mixed into Tensor
(frontend/tensor.py) beside ElementwiseMixin, whose math they use.
"""
from __future__ import annotations

import math

from .. import config
from ..dtype import dtypes
from ..ir.ops import Op
from .composite import _with_backward

LOG2_E = 1 / math.log(2)


class ActivationMixin:
    __slots__ = ()

    def relu(self):
        # where keeps NaN (like PyTorch) and gives 0 gradient at 0
        return (self > 0).where(self, (self != self).where(self, 0))

    def relu6(self):
        return self.hardtanh(0.0, 6.0)

    def leaky_relu(self, neg_slope: float = 0.01):
        return (self > 0).where(self, self * neg_slope)

    def elu(self, alpha: float = 1.0):
        return self._exponential_below_zero(alpha, 1.0)

    def celu(self, alpha: float = 1.0):
        return self._exponential_below_zero(alpha, 1 / alpha)

    def selu(self, alpha: float = 1.6732632423543772, gamma: float = 1.0507009873554805):
        return gamma * self._exponential_below_zero(alpha, 1.0)

    def _exponential_below_zero(self, alpha: float, scale: float):
        """x where x > 0, else alpha * (exp(scale * x) - 1). The exponential reads 0 where x > 0:
        exp(1e4) there would be inf, and its gradient 0 * inf = NaN."""
        positive = self > 0
        return positive.where(self, alpha * (positive.where(0.0, self) * scale).expm1())

    def sigmoid(self):
        """1 / (1 + exp(-x)), with PyTorch's gradient s (1 - s): the chain's own rules give
        0 * inf = NaN at x = -1e4, where exp(-x) overflows."""
        x = self if self.dtype.is_float else self.cast(dtypes.default_float)
        out = (1 + (x * -LOG2_E)._unary(Op.EXP2)).reciprocal()
        return _with_backward(out, (x,), lambda grad, s, _: (grad * s * (1 - s),))

    def hardsigmoid(self, alpha: float = 1 / 6, beta: float = 0.5):
        return (alpha * self + beta).hardtanh(0.0, 1.0)

    def hardswish(self):
        # x (x + 3) / 6 between -3 and 3, 0 below, x above; the gradient x/3 + 1/2 only inside
        # (0 at -3 and 1 at 3 as in PyTorch), and 1 (not inf * 0) for huge x
        outside = (self <= -3) | (self >= 3)
        x = outside.where(0.0, self)
        # below -3, x·0 as PyTorch's x·relu6(x + 3)/6: -0.0, and NaN at -inf
        low = (self <= -3).where(self, 0.0) * 0.0
        return (self <= -3).where(low, (self >= 3).where(self, x * (x + 3) * (1 / 6)))

    def hardtanh(self, min_val: float = -1.0, max_val: float = 1.0):
        """clip, with PyTorch's hardtanh gradient: none at the bounds themselves (clamp's
        passes it there), so relu6, hardsigmoid and hardswish have PyTorch's kinks too."""
        if not self.dtype.is_float and float(min_val).is_integer() and \
                float(max_val).is_integer():  # integer tensors keep their dtype, as in PyTorch
            return self.clip(int(min_val), int(max_val))
        out = self.clip(min_val, max_val)
        return _with_backward(out, (self,), lambda grad, _, x: (
            ((x > min_val) & (x < max_val)).where(grad, 0.0),))

    def gelu(self, approximate: str | None = None):
        """x * Φ(x) (torch.nn.functional.gelu): with erf by default ("none", PyTorch's default),
        or the tanh approximation ("tanh", what tinygrad's gelu() computes: the default under
        TINYGRAD_VALUES=1, the tinygrad alias)."""
        if approximate is None:
            approximate = "tanh" if config.TINYGRAD_VALUES.value else "none"
        if approximate == "tanh":
            inner = math.sqrt(2 / math.pi) * (self + 0.044715 * self ** 3)
            return 0.5 * self * (1 + inner.tanh())
        if approximate != "none":
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        return 0.5 * self * (1 + (self * (1 / math.sqrt(2))).erf())

    def quick_gelu(self):
        return self * (self * 1.702).sigmoid()

    def silu(self):
        """x sigmoid(x), with PyTorch's gradient s (1 + x (1 - s)): the chain's rules multiply
        the incoming gradient by x first, which overflows to inf (then inf * 0 = NaN) at
        x = -3e38 for a gradient above about 1.1."""
        x = self if self.dtype.is_float else self.cast(dtypes.default_float)
        out = x * x.sigmoid()

        def rule(grad, _, x):  # (x.sigmoid() is the forward's node again: nodes are interned)
            s = x.sigmoid()
            return (grad * (s * (1 + x * (1 - s))),)
        return _with_backward(out, (x,), rule)

    swish = silu

    def mish(self):
        return self * self.softplus().tanh()

    def softplus(self, beta: float = 1.0, threshold: float = 20.0):
        scaled = self * beta
        linear = scaled > threshold  # there softplus(x) is x; the other branch reads 0 instead
        soft = linear.where(0.0, scaled).exp().log1p() / beta
        return linear.where(self, soft)

    def softsign(self):
        return self / (1 + self.abs())

    def logsigmoid(self):
        return -(-self).softplus()

