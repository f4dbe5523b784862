"""Parity with PyTorch for the elementwise methods: math, activations, arithmetic with
broadcasting and promotion, comparisons, logical and bitwise ops, casts (forward and backward)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from parity_harness import Case, run_case, variants
from tinylab import Tensor

UNARY_SHAPES = [((4, 5),), ((1, 3),), ((0, 2),)]
BINARY_SHAPES = [((4, 5), (4, 5)), ((3, 1), (1, 4)), ((2, 0), (1, 0))]


def unary(name, ours, theirs=None, kinds=("real",), **kw):
    theirs = theirs or (lambda x: getattr(torch, name)(x))
    return Case(name, ours, theirs, UNARY_SHAPES, kinds, **kw)


def method(name, kinds=("real",), **kw):
    return unary(name, lambda x: getattr(x, name)(), lambda x: getattr(torch, name)(x), kinds,
                 **kw)


def binary(name, ours, theirs, kinds=("real", "real"), **kw):
    return Case(name, ours, theirs, BINARY_SHAPES, kinds, **kw)


MATH = [
    unary("neg", lambda x: -x), method("reciprocal", ("positive",)),
    method("sqrt", ("positive",)), method("rsqrt", ("positive",)), method("exp"),
    method("exp2"), method("log", ("positive",)), method("log2", ("positive",)),
    method("log10", ("positive",)), method("log1p", ("positive",)), method("expm1"),
    method("sin"), method("cos"), method("tan", ("unit",)), method("asin", ("unit",)),
    method("acos", ("unit",)), method("atan", ("wide",)), method("sinh"), method("cosh"),
    method("tanh"), method("asinh"), method("acosh", ("above1",)), method("atanh", ("unit",)),
    method("erf"), method("erfc", ("wide",)), method("abs"), method("sign"), method("floor", ("halves",)),
    method("ceil", ("halves",)), method("round", ("halves",)), method("trunc", ("halves",)),
    method("frac", ("halves",)), method("square"), method("sigmoid"), method("relu"),
    method("isnan"), method("isinf"), method("isfinite"),
    unary("round_decimals", lambda x: x.round(1), lambda x: torch.round(x, decimals=1),
          ("real",), atol=1e-4),
    unary("pow_scalar", lambda x: x ** 3, lambda x: x ** 3),
    unary("pow_fraction", lambda x: x ** 1.7, lambda x: x ** 1.7, ("positive",)),
    unary("pow_negative", lambda x: x ** -2, lambda x: x ** -2, ("positive",)),
    unary("pow_half", lambda x: x ** 0.5, lambda x: x ** 0.5, ("positive",)),
    unary("rpow", lambda x: 2.5 ** x, lambda x: 2.5 ** x),
    unary("clip", lambda x: x.clip(-0.5, 0.7), lambda x: x.clip(-0.5, 0.7)),
    unary("clamp_min", lambda x: x.clamp(min_=-0.2), lambda x: x.clamp(min=-0.2)),
    unary("clamp_max", lambda x: x.clamp(max_=0.3), lambda x: x.clamp(max=0.3)),
    unary("clamp_torch_keywords", lambda x: x.clamp(min=-0.3, max=0.4),
          lambda x: x.clamp(min=-0.3, max=0.4)),
    unary("lerp_scalar", lambda x: x.lerp(x * 2 + 1, 0.25), lambda x: x.lerp(x * 2 + 1, 0.25)),
]

ACTIVATIONS = [
    unary("relu6", lambda x: x.relu6(), F.relu6, ("wide",)),
    unary("leaky_relu", lambda x: x.leaky_relu(0.1), lambda x: F.leaky_relu(x, 0.1)),
    unary("elu", lambda x: x.elu(0.7), lambda x: F.elu(x, 0.7)),
    unary("celu", lambda x: x.celu(1.3), lambda x: F.celu(x, 1.3)),
    unary("selu", lambda x: x.selu(), F.selu),
    unary("gelu", lambda x: x.gelu(), lambda x: F.gelu(x)),
    unary("quick_gelu", lambda x: x.quick_gelu(), lambda x: x * torch.sigmoid(1.702 * x)),
    unary("silu", lambda x: x.silu(), F.silu), unary("swish", lambda x: x.swish(), F.silu),
    unary("mish", lambda x: x.mish(), F.mish),
    unary("softplus", lambda x: x.softplus(), F.softplus, ("wide",)),
    unary("softplus_beta", lambda x: x.softplus(beta=2.0), lambda x: F.softplus(x, beta=2.0)),
    unary("softsign", lambda x: x.softsign(), F.softsign),
    unary("hardsigmoid", lambda x: x.hardsigmoid(), F.hardsigmoid, ("wide",)),
    unary("hardswish", lambda x: x.hardswish(), F.hardswish, ("wide",)),
    unary("hardtanh", lambda x: x.hardtanh(), F.hardtanh),
    unary("hardtanh_range", lambda x: x.hardtanh(-0.5, 2.0), lambda x: F.hardtanh(x, -0.5, 2.0)),
    unary("logsigmoid", lambda x: x.logsigmoid(), F.logsigmoid, ("wide",)),
]

ARITHMETIC = [
    binary("add", lambda a, b: a + b, lambda a, b: a + b),
    binary("sub", lambda a, b: a - b, lambda a, b: a - b),
    binary("mul", lambda a, b: a * b, lambda a, b: a * b),
    binary("div", lambda a, b: a / b, lambda a, b: a / b, ("real", "positive")),
    binary("maximum", lambda a, b: a.maximum(b), torch.maximum),
    binary("minimum", lambda a, b: a.minimum(b), torch.minimum),
    binary("pow_tensor", lambda a, b: a ** b, lambda a, b: a ** b, ("positive", "real")),
    binary("pow_negative_base", lambda a, b: a.pow(b), lambda a, b: a.pow(b), ("real", "int"),
           atol=1e-4),
    binary("lerp", lambda a, b: a.lerp(b, 0.3), lambda a, b: a.lerp(b, 0.3)),
    binary("where_tensor", lambda a, b: (a > b).where(a, b), lambda a, b: torch.where(a > b, a, b)),
    binary("floordiv_float", lambda a, b: a // b, lambda a, b: a // b, ("wide", "positive"),
           grad=False),
    binary("mod_float", lambda a, b: a % b, lambda a, b: a % b, ("wide", "positive")),
    binary("fmod_float", lambda a, b: a.fmod(b), torch.fmod, ("wide", "positive")),
    binary("add_int", lambda a, b: a + b, lambda a, b: a + b, ("int", "int")),
    binary("mul_int", lambda a, b: a * b, lambda a, b: a * b, ("int", "int")),
    binary("sub_int", lambda a, b: a - b, lambda a, b: a - b, ("int", "int")),
    binary("floordiv_int", lambda a, b: a // b, lambda a, b: a // b, ("int", "nonzero_int")),
    binary("mod_int", lambda a, b: a % b, lambda a, b: a % b, ("int", "nonzero_int")),
    binary("fmod_int", lambda a, b: a.fmod(b), torch.fmod, ("int", "nonzero_int")),
    binary("div_int", lambda a, b: a / b, lambda a, b: a / b, ("int", "nonzero_int")),
    binary("div_trunc", lambda a, b: a.div(b, rounding_mode="trunc"),
           lambda a, b: a.div(b, rounding_mode="trunc"), ("int", "nonzero_int")),
    binary("div_floor", lambda a, b: a.div(b, rounding_mode="floor"),
           lambda a, b: a.div(b, rounding_mode="floor"), ("int", "nonzero_int")),
    binary("pow_int", lambda a, b: a ** b, lambda a, b: a ** b, ("int", "shift")),
    binary("promote_int_float", lambda a, b: a + b, lambda a, b: a + b, ("int", "real")),
    binary("promote_bool_int", lambda a, b: a * b, lambda a, b: a * b, ("bool", "int")),
    binary("promote_f16_f32", lambda a, b: a * b, lambda a, b: a * b, ("f16", "real"),
           atol=1e-3),
    binary("promote_f64", lambda a, b: a - b, lambda a, b: a - b, ("f64", "real")),
    binary("promote_uint8_int", lambda a, b: a + b, lambda a, b: a + b, ("uint8", "int")),
    unary("scalar_int_to_float", lambda x: x * 1.5, lambda x: x * 1.5, ("int",)),
    unary("scalar_rsub", lambda x: 3 - x, lambda x: 3 - x),
    unary("scalar_rdiv", lambda x: 2 / x, lambda x: 2 / x, ("positive",)),
    unary("scalar_int_stays", lambda x: x * 2 + 1, lambda x: x * 2 + 1, ("int",)),
    unary("scalar_bool_int", lambda x: x + 1, lambda x: x + 1, ("bool",)),
    unary("abs_int", lambda x: x.abs(), torch.abs, ("int",)),
    unary("sign_int", lambda x: x.sign(), torch.sign, ("int",)),
    unary("neg_int", lambda x: -x, lambda x: -x, ("int",)),
    unary("uint8_wraps", lambda x: x + 200, lambda x: x + 200, ("uint8",)),
]

LOGIC = [
    binary(name, fn, fn, kinds) for name, fn, kinds in [
        ("lt", lambda a, b: a < b, ("real", "real")), ("le", lambda a, b: a <= b, ("int", "int")),
        ("gt", lambda a, b: a > b, ("int", "int")), ("ge", lambda a, b: a >= b, ("real", "real")),
        ("eq", lambda a, b: a == b, ("small_int", "small_int")),
        ("ne", lambda a, b: a != b, ("small_int", "small_int")),
        ("and_bool", lambda a, b: a & b, ("bool", "bool")),
        ("or_bool", lambda a, b: a | b, ("bool", "bool")),
        ("xor_bool", lambda a, b: a ^ b, ("bool", "bool")),
        ("and_int", lambda a, b: a & b, ("int", "int")),
        ("or_int", lambda a, b: a | b, ("int", "int")),
        ("xor_int", lambda a, b: a ^ b, ("int", "int")),
        ("lshift", lambda a, b: a << b, ("small_int", "shift")),
        ("rshift", lambda a, b: a >> b, ("int", "shift")),
        ("cmp_promote", lambda a, b: a < b, ("int", "real")),
    ]
] + [
    binary("logical_and", lambda a, b: a.logical_and(b), torch.logical_and, ("int", "bool")),
    binary("logical_or", lambda a, b: a.logical_or(b), torch.logical_or, ("bool", "int")),
    binary("logical_xor", lambda a, b: a.logical_xor(b), torch.logical_xor, ("int", "int")),
    binary("where_bool_cond", lambda c, x: c.where(x, 0.5), lambda c, x: torch.where(c, x, 0.5),
           ("bool", "real")),
    binary("masked_fill", lambda x, m: x.masked_fill(m, -1.0), lambda x, m: x.masked_fill(m, -1.0),
           ("real", "bool")),
    unary("logical_not", lambda x: x.logical_not(), torch.logical_not, ("int",)),
    unary("logical_not_bool", lambda x: x.logical_not(), torch.logical_not, ("bool",)),
    unary("invert_int", lambda x: ~x, lambda x: ~x, ("int",)),
    unary("invert_bool", lambda x: ~x, lambda x: ~x, ("bool",)),
    unary("invert_uint8", lambda x: ~x, lambda x: ~x, ("uint8",)),
    unary("eq_scalar", lambda x: x == 2, lambda x: x == 2, ("small_int",)),
    unary("and_scalar", lambda x: x & 6, lambda x: x & 6, ("int",)),
]

CASTS = [
    unary("float", lambda x: x.float(), lambda x: x.float(), ("int",)),
    unary("half", lambda x: x.half(), lambda x: x.half(), ("real",), atol=1e-3),
    unary("double", lambda x: x.double(), lambda x: x.double()),
    unary("int", lambda x: x.int(), lambda x: x.int(), ("wide",)),
    unary("long", lambda x: x.long(), lambda x: x.long(), ("int",), int_as_default=False),
    unary("bool", lambda x: x.bool(), lambda x: x.bool(), ("small_int",)),
    unary("bool_from_float", lambda x: x.bool(), lambda x: x.bool(), ("halves",)),
    unary("float_from_bool", lambda x: x.float(), lambda x: x.float(), ("bool",)),
    unary("cast_uint8", lambda x: x.cast("uint8"), lambda x: x.to(torch.uint8), ("small_int",)),
    unary("cast_int8", lambda x: x.cast("int8"), lambda x: x.to(torch.int8), ("int",)),
    unary("cast_grad_f64", lambda x: x.double() * 2, lambda x: x.double() * 2),
    unary("half_math", lambda x: (x.half() * 2).exp().float(),
          lambda x: (x.half() * 2).exp().float(), atol=1e-2, rtol=1e-2),
    unary("bitcast_f32_i32", lambda x: x.bitcast("int32"), lambda x: x.view(torch.int32)),
    unary("bitcast_i32_f32", lambda x: (x & 0x7FFFFF | 0x3F800000).bitcast("float32"),
          lambda x: (x & 0x7FFFFF | 0x3F800000).view(torch.float32), ("int",)),
    unary("bitcast_i32_u32", lambda x: x.bitcast("uint32").cast("int64"),
          lambda x: x.view(torch.uint32).to(torch.int64), ("int",), int_as_default=False),
]

CASES = MATH + ACTIVATIONS + ARITHMETIC + LOGIC + CASTS


@pytest.mark.parametrize("case,shapes,strided", variants(CASES))
def test_elementwise_parity(case, shapes, strided):
    run_case(case, shapes, strided)


SMALL = ["exp", "atan", "gelu", "mod_int", "lshift", "where_tensor", "half", "pow_tensor"]


@pytest.mark.parametrize("name", SMALL)
def test_elementwise_parity_on_every_backend(device, name):
    case = next(c for c in CASES if c.name == name)
    run_case(case, case.shapes[1], False)



NEAR_ZERO = np.array([1e-7, -1e-6, 1e-5, -1e-4, 1e-3, -0.02, 0.2, -0.6, 3.0, -12.0], np.float32)
CANCELLING = {"tanh": NEAR_ZERO, "sinh": NEAR_ZERO, "cosh": NEAR_ZERO, "expm1": NEAR_ZERO,
              "log1p": np.clip(NEAR_ZERO, -0.9, None), "asinh": NEAR_ZERO,
              "atanh": np.clip(NEAR_ZERO, -0.9, 0.9), "erf": NEAR_ZERO, "acosh": 1 + abs(NEAR_ZERO),
              "elu": NEAR_ZERO, "softplus": NEAR_ZERO * 5}


@pytest.mark.parametrize("name", list(CANCELLING))
def test_relative_accuracy_where_formulas_cancel(name):
    """Near 0 (near 1 for acosh) values and gradients keep their relative accuracy: the naive
    composites (exp(x) - 1, 2 sigmoid(2x) - 1, ...) lose every digit at 1e-7."""
    values = CANCELLING[name]
    x = Tensor(values)
    out = getattr(x, name)()
    (grad,) = out.sum().gradient(x)
    reference = torch.tensor(values.astype(np.float64), requires_grad=True)
    expected = getattr(torch, name, None) or getattr(F, name)
    expected = expected(reference)
    expected.sum().backward()
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=5e-6, atol=0)
    np.testing.assert_allclose(grad.numpy(), reference.grad.numpy(), rtol=2e-5, atol=1e-7)
