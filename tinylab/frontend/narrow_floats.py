"""bfloat16 composites computed in float32 and rounded once: PyTorch's CPU kernels take a
bfloat16 tensor's exp, sigmoid, softmax, mean or quotient in float32 and round the result to
bfloat16 once, where tinylab's primitives would round after each of the ops that make them up.
`round_once(Tensor)` wraps the methods named below, once, for bfloat16 inputs only (float16 keeps
its own rules: transcendental.py, reduce.py, linalg.py). Called by frontend/tensor.py.
"""
from __future__ import annotations

import functools

from ..dtype import dtypes

# method families made of several primitives, each a PyTorch kernel over float32 for bfloat16
COMPOSITES = (
    "div", "pow", "lerp", "logaddexp",                                      # elementwise
    "reciprocal", "sqrt", "rsqrt", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "erf",                                                         # transcendental
    "elu", "celu", "selu", "sigmoid", "hardsigmoid", "hardswish", "gelu", "quick_gelu", "silu",
    "mish", "softplus", "softsign", "logsigmoid",                           # activations
    "mean", "var", "std", "logsumexp", "softmax", "log_softmax", "normalize", "layernorm",
)


def _in_float32(method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if self.dtype != dtypes.bfloat16:
            return method(self, *args, **kwargs)
        out = method(self.float(), *args, **kwargs)  # bfloat16 operands promote to float32
        return out.cast(dtypes.bfloat16) if out.dtype == dtypes.float32 else out
    return wrapper


def round_once(cls) -> None:
    """Wrap cls's COMPOSITES so a bfloat16 input computes in float32 and rounds once."""
    for name in COMPOSITES:
        setattr(cls, name, _in_float32(getattr(cls, name)))
