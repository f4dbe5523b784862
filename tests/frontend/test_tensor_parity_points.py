"""Parity with PyTorch for every unary math method and activation at its special points: ±0,
±inf, NaN, the bounds of piecewise functions (±1, ±3, ±6), huge (1e30, 3e38) and tiny (1e-30,
subnormal) magnitudes; on 0-d, empty and one-element tensors; and for integer, bool, float16 and
float64 inputs (PyTorch's result dtypes). Forward and backward; gradients are not compared at NaN
inputs or where PyTorch's value is NaN (outside the domain)."""
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from parity_harness import SPECIAL, Case, run_case, variants

SHAPES = [((4, 5),), ((),), ((0, 3),), ((1,),)]
FLOATS = SPECIAL + (("f16",), ("f64",))


def unary(name, ours, theirs, kinds=("real",), also=FLOATS + (("int",), ("bool",)), **kw):
    return Case(name, ours, theirs, SHAPES, kinds, also=also, **kw)


def method(name, kinds=("real",), **kw):
    return unary(name, lambda x: getattr(x, name)(), getattr(torch, name), kinds, **kw)


class _RoundedFromFloat64(torch.autograd.Function):
    """f(x) and its derivative f'(x) evaluated in float64 and rounded to PyTorch's result dtype;
    the gradient is grad · rounded f'(x) in that dtype: what a float32 op with correctly rounded
    parts gives."""

    @staticmethod
    def forward(ctx, x, function):
        ctx.save_for_backward(x)
        ctx.function = function
        return function(x.double()).to(function(x).dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            wide = x.detach().double().requires_grad_(True)
            (slope,) = torch.autograd.grad(ctx.function(wide).sum(), wide)
        return grad * slope.to(grad.dtype), None


def _rounded_from_float64(function):
    """The reference where PyTorch's own float32 kernels lose the value. PyTorch's AVX2 float32
    sinh / cosh (ATEN_CPU_CAPABILITY=avx2, e.g. Zen 3) form e^|x| first and give inf on
    88.72 < |x| < 89.41, where the value is finite (sinh(88.8) = 1.8379e38; its AVX-512 and
    scalar paths give it); gelu(3.4e38) = 3.4e38, PyTorch's x (1 + erf) / 2 gives inf."""
    return lambda x: _RoundedFromFloat64.apply(x, function)


MATH = [method(name) for name in (
    "exp", "exp2", "expm1", "sin", "cos", "tan", "atan", "tanh", "asinh", "erf")] + [
    unary(name, lambda x, n=name: getattr(x, n)(), _rounded_from_float64(getattr(torch, name)),
          also=FLOATS +
          (("int",), ("bool",))) for name in ("sinh", "cosh")] + [
    # x² of 3e38 times a weight below 0.57: PyTorch's gradient 2x * w overflows first, tinylab's
    # x*w + x*w does not (the finite value is right)
    method("square", also=(("special",), ("f16",), ("f64",), ("int",), ("bool",))),
] + [
    method(name, ("positive",)) for name in (
        "reciprocal", "sqrt", "rsqrt", "log", "log2", "log10", "log1p")] + [
    method("asin", ("unit",)), method("acos", ("unit",)), method("atanh", ("unit",)),
    method("acosh", ("above1",)),
    method("sign", also=FLOATS + (("int",), ("uint8",))),
    method("floor", ("halves",), also=FLOATS + (("int",),)),
    method("ceil", ("halves",), also=FLOATS + (("int",),)),
    method("trunc", ("halves",), also=FLOATS + (("int",),)),
    method("round", ("halves",), also=FLOATS + (("int",),)),
    method("frac", ("halves",), also=FLOATS),
    method("isnan", also=FLOATS + (("int",), ("bool",))),
    method("isinf", also=FLOATS + (("int",), ("bool",))),
    method("isfinite", also=FLOATS + (("int",), ("bool",))),
]

ACTIVATIONS = [
    method("relu", also=FLOATS + (("int",),)),
    method("sigmoid", also=(("f16",), ("f64",), ("int",), ("bool",))),
    unary("relu6", lambda x: x.relu6(), F.relu6, ("wide",), also=FLOATS + (("int",),)),
    unary("leaky_relu", lambda x: x.leaky_relu(0.1), lambda x: F.leaky_relu(x, 0.1), also=FLOATS),
    unary("elu", lambda x: x.elu(0.7), lambda x: F.elu(x, 0.7), also=FLOATS),
    unary("celu", lambda x: x.celu(1.3), lambda x: F.celu(x, 1.3), also=FLOATS),
    unary("selu", lambda x: x.selu(), F.selu, also=FLOATS),
    unary("softplus", lambda x: (x.softplus(), x.softplus(beta=2.0, threshold=5.0)),
          lambda x: (F.softplus(x), F.softplus(x, beta=2.0, threshold=5.0)), ("wide",),
          also=FLOATS),
    unary("softsign", lambda x: x.softsign(), F.softsign, also=FLOATS),
    unary("hardsigmoid", lambda x: x.hardsigmoid(), F.hardsigmoid, ("wide",), also=FLOATS),
    unary("hardtanh", lambda x: (x.hardtanh(), x.hardtanh(-0.5, 2.0)),
          lambda x: (F.hardtanh(x), F.hardtanh(x, -0.5, 2.0)), ("halves",), also=FLOATS),
    unary("logsigmoid", lambda x: x.logsigmoid(), F.logsigmoid, ("wide",), also=FLOATS),
    # PyTorch's values at these points are artefacts of its formulas: mish's gradient at ±inf is
    # NaN (inf * 0), hardswish(-inf) is NaN and hardswish(3e38) inf (x * 6 / 6 overflows);
    # tinylab gives the limits (1, 0 and 3e38)
    unary("mish", lambda x: x.mish(), F.mish, also=(("special_finite",), ("extreme",),
                                                    ("f16",), ("f64",))),
    unary("hardswish", lambda x: x.hardswish(), F.hardswish, ("wide",),
          also=(("special_finite",), ("f16",), ("f64",))),
]

SIGMOID_FAMILY = [  # their huge negative inputs: SIGMOID_EXTREMES below
    unary("silu", lambda x: x.silu(), F.silu, also=(("special",), ("f16",), ("f64",))),
    unary("swish", lambda x: x.swish(), F.silu, also=(("special",), ("f64",))),
    unary("quick_gelu", lambda x: x.quick_gelu(), lambda x: x * torch.sigmoid(1.702 * x),
          also=(("special",), ("f16",), ("f64",))),
]

CASTS = [
    unary(name, lambda x, n=name: getattr(x, n)(), lambda x, n=name: getattr(x, n)(),
          ("halves",), also=(("special",), ("int",), ("bool",), ("f16",), ("f64",)),
          int_as_default=name != "long")
    for name in ("float", "half", "double", "bool")
] + [
    unary(name, lambda x, n=name: getattr(x, n)(), lambda x, n=name: getattr(x, n)(),
          ("halves",), also=(("int",), ("bool",), ("f16",), ("f64",)),
          int_as_default=name != "long") for name in ("int", "long")
]

CASES = MATH + ACTIVATIONS + SIGMOID_FAMILY + CASTS

# Wrong numbers the wrong-numbers branch fixed (issue 15), kept as rows.
SIGMOID_EXTREMES = [
    # x = Tensor([-100.0], requires_grad=True); x.sigmoid().sum().backward(): x.grad was nan,
    # PyTorch 0 (also at -88.8, -1e30, -inf); silu, swish and quick_gelu inherit it
    unary("sigmoid_special", lambda x: x.sigmoid(), torch.sigmoid, ("extreme",),
          also=(("special",),), covers=("sigmoid",)),
    unary("silu_extreme", lambda x: x.silu(), F.silu, ("extreme",), also=(), covers=("silu",)),
    unary("swish_extreme", lambda x: x.swish(), F.silu, ("extreme",), also=(),
          covers=("swish",)),
    unary("quick_gelu_extreme", lambda x: x.quick_gelu(),
          lambda x: x * torch.sigmoid(1.702 * x), ("extreme",), also=(), covers=("quick_gelu",)),
]
CASES += SIGMOID_EXTREMES


def edges(name, ours, theirs, covers=None):
    return Case(f"{name}_edges", ours, theirs, [((4, 5),)], ("edges",), noncontiguous=False,
                covers=covers or (name,))


# every transcendental at the float32 overflow / underflow edges (EDGE_VALUES), forward and
# backward; `make presets` runs these under each CPU_TARGET with PyTorch's matching kernels
EDGES = [edges(name, lambda x, n=name: getattr(x, n)(), reference) for name, reference in (
    ("exp", torch.exp), ("exp2", torch.exp2), ("expm1", torch.expm1),
    ("sinh", _rounded_from_float64(torch.sinh)), ("cosh", _rounded_from_float64(torch.cosh)),
    ("tanh", torch.tanh), ("sigmoid", torch.sigmoid), ("log", torch.log),
    ("log2", torch.log2), ("log10", torch.log10), ("log1p", torch.log1p),
    ("sqrt", torch.sqrt), ("rsqrt", torch.rsqrt), ("sin", torch.sin), ("cos", torch.cos),
    ("tan", torch.tan), ("erf", torch.erf), ("softplus", F.softplus),
    ("logsigmoid", F.logsigmoid), ("silu", F.silu), ("gelu", _rounded_from_float64(F.gelu)))] + [
    edges("pow", lambda x: 2.0 ** x, lambda x: 2.0 ** x),
    edges("pow_half", lambda x: x ** 0.5, lambda x: x ** 0.5, covers=("__pow__",)),
]
CASES += EDGES


@pytest.mark.parametrize("case,shapes,strided", variants(CASES))
def test_special_point_parity(case, shapes, strided):
    run_case(case, shapes, strided)
