"""Edge semantics against PyTorch (torch 2.13 CPU) on every backend: size-0 and size-1 dims,
NaN/inf through max/min/relu/softmax/argmax, integer division and modulo of negatives, int8/uint8
overflow, float16 rounding, and out-of-range gathers (documented: they select nothing, read
nothing outside the buffer). Each row is (name, function of tensors, input arrays)."""
import numpy as np
import pytest
import torch

from tinylab import Tensor, dtypes
from tinylab.errors import ShapeError

from dtype_support import lacks, refuses

NAN, INF = np.nan, np.inf
RNG = np.random.default_rng(0)


def f32(*values, shape=None):
    return np.array(values, np.float32).reshape(shape or (len(values),))


def compare(name: str, fn, arrays, exact: bool = False, rtol: float = 1e-6, ulps: int = 0,
            atol: float = 0.0):
    """fn on tinylab tensors vs fn on torch tensors: values (NaN == NaN) and shape; integer
    results keep their kind (tinylab's default int is int32 where torch uses int64)."""
    got = fn(*[Tensor(a) for a in arrays]).numpy()
    expected = fn(*[torch.tensor(a) for a in arrays])
    if not isinstance(expected, torch.Tensor):  # torch.max(dim) gives (values, indices)
        expected = expected.values
    expected = expected.numpy()
    assert got.shape == expected.shape, f"{name}: shape {got.shape} vs torch {expected.shape}"
    assert got.dtype.kind == expected.dtype.kind, f"{name}: {got.dtype} vs torch {expected.dtype}"
    if got.dtype == np.float16 and ulps:
        distance = np.abs(got.view(np.int16).astype(int) - expected.view(np.int16).astype(int))
        assert distance.max(initial=0) <= ulps, f"{name}: {distance.max()} ulps from torch"
    elif exact or got.dtype.kind in "iub":
        np.testing.assert_array_equal(got, expected.astype(got.dtype), err_msg=name)
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=name)


# ---- size 0 and size 1 --------------------------------------------------------------------
EMPTY = np.zeros((0, 3), np.float32)
SHAPES = [
    ("empty + row", lambda a, b: a + b, [EMPTY, np.ones((1, 3), np.float32)]),
    ("(0,1) * (1,4)", lambda a, b: a * b, [np.zeros((0, 1), np.float32), f32(1, 2, 3, 4)]),
    ("mean over empty is nan", lambda a: a.mean(0), [EMPTY]),
    ("mean of nothing", lambda a: a.mean(), [EMPTY]),
    ("prod over empty is 1", lambda a: a.prod(0), [EMPTY]),
    ("sum over empty is 0", lambda a: a.sum(0), [EMPTY]),
    ("softmax of empty rows", lambda a: a.softmax(1), [EMPTY]),
    ("softmax over empty axis", lambda a: a.softmax(0), [EMPTY]),
    ("cumsum of empty", lambda a: a.cumsum(0), [EMPTY]),
    ("expand 1 -> 0", lambda a: a.expand(0, 3), [np.ones((1, 3), np.float32)]),
    ("reshape of empty", lambda a: a.reshape(3, 0, 5), [np.zeros((0, 5, 3), np.float32)]),
    ("matmul over empty k", lambda a, b: a @ b, [np.ones((2, 0), np.float32),
                                                 np.ones((0, 3), np.float32)]),
    ("(3,1,4) + (1,5,1)", lambda a, b: a + b, [RNG.standard_normal((3, 1, 4), np.float32),
                                               RNG.standard_normal((1, 5, 1), np.float32)]),
    ("(1,) * ()", lambda a, b: a * b, [f32(3), np.array(2, np.float32)]),
    ("(1,1) - (4,)", lambda a, b: a - b, [f32(1, shape=(1, 1)), f32(1, 2, 3, 4)]),
    ("where broadcasts 3 ways", lambda c, a, b: (c > 0).where(a, b) if isinstance(c, Tensor)
     else torch.where(c > 0, a, b), [f32(1, -1, shape=(2, 1)), f32(5, 6, 7), f32(0)]),
    ("sum of size-1 axis keepdim", lambda a: a.sum(1, keepdim=True), [f32(1, 2, shape=(2, 1))]),
    ("max of an expanded size-1 axis", lambda a: a.expand(2, 5).max(1), [f32(3, -1, shape=(2, 1))]),
]


@pytest.mark.ieee_special  # the mean of nothing is NaN
@pytest.mark.parametrize("name, fn, arrays", SHAPES, ids=[row[0] for row in SHAPES])
def test_size_zero_and_size_one_match_torch(device, name, fn, arrays):
    compare(name, fn, arrays)


@pytest.mark.parametrize("reduce", ["max", "min", "argmax", "argmin"])
def test_reducing_nothing_is_an_error_like_torch(reduce):
    # (min and argmin name "max" / "argmax" in the message: reported to the frontend owner)
    with pytest.raises(ShapeError, match="cannot reduce over axis 0 of size 0"):
        getattr(Tensor(EMPTY), reduce)(0)
    with pytest.raises(IndexError):
        getattr(torch.tensor(EMPTY), reduce)(0)


# ---- NaN and infinities -------------------------------------------------------------------
SPECIAL = f32(1, NAN, -INF, INF, 0, -2, shape=(1, 6))
ROWS = f32(0, -INF, 1, -INF, -INF, -INF, 1e30, 0, -1e30, NAN, 1, 2, shape=(4, 3))
NANS = [
    ("maximum propagates nan", lambda a: a.maximum(a.flip(1)), [SPECIAL]),
    ("minimum propagates nan", lambda a: a.minimum(a.flip(1)), [SPECIAL]),
    ("max reduce propagates nan", lambda a: a.max(1), [SPECIAL]),
    ("min reduce propagates nan", lambda a: a.min(1), [SPECIAL]),
    ("relu keeps nan and inf", lambda a: a.relu(), [SPECIAL]),
    ("clip keeps nan", lambda a: a.clip(-1, 1), [SPECIAL]),
    ("sum of inf and -inf", lambda a: a.sum(1), [SPECIAL]),
    ("softmax with inf, -inf, nan", lambda a: a.softmax(1), [SPECIAL]),
    ("softmax rows with -inf", lambda a: a.softmax(1), [ROWS]),
    ("log_softmax rows with -inf", lambda a: a.log_softmax(1), [ROWS]),
    ("logsumexp rows with -inf", lambda a: a.logsumexp(1), [ROWS]),
    ("sigmoid at the extremes", lambda a: a.sigmoid(), [SPECIAL]),
    ("exp overflows to inf", lambda a: a.exp(), [f32(100, -100, 88.7, 89)]),
    ("log of 0, -1, inf", lambda a: a.log(), [f32(0, -1, INF, NAN)]),
    ("sqrt of negatives", lambda a: a.sqrt(), [f32(-1, -0.0, INF, NAN)]),
    ("x / 0", lambda a, b: a / b, [f32(0, 1, -1, NAN), f32(0, 0, -0.0, 0)]),
    ("argmax picks the first nan", lambda a: a.argmax(1), [SPECIAL]),
    ("argmin picks the first nan", lambda a: a.argmin(1), [SPECIAL]),
    ("argmax of ties is the first", lambda a: a.argmax(1), [f32(1, 3, 3, 0, shape=(1, 4))]),
]


@pytest.mark.ieee_special
@pytest.mark.parametrize("name, fn, arrays", NANS, ids=[row[0] for row in NANS])
def test_nan_and_inf_match_torch(device, name, fn, arrays):
    compare(name, fn, arrays, rtol=1e-5)


# ---- integer division, modulo, overflow ------------------------------------------------------
def trunc_div(a, b):
    return a.div(b, rounding_mode="trunc") if isinstance(a, Tensor) else \
        torch.div(a, b, rounding_mode="trunc")


def floor_div(a, b):
    return a.div(b, rounding_mode="floor") if isinstance(a, Tensor) else \
        torch.div(a, b, rounding_mode="floor")


def cast_to(name):
    return lambda a: a.cast(name) if isinstance(a, Tensor) else a.to(getattr(torch, name))


NUMERATORS = np.arange(-7, 8).reshape(-1, 1)
DIVISORS = np.array([[-3, -2, -1, 1, 2, 3]])
DIVISION = [
    ("//", lambda a, b: a // b), ("%", lambda a, b: a % b), ("trunc", trunc_div),
    ("floor", floor_div), ("fmod", lambda a, b: a.fmod(b)), ("true /", lambda a, b: a / b),
]


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "float32"])
@pytest.mark.parametrize("op, fn", DIVISION, ids=[row[0] for row in DIVISION])
def test_division_of_negatives_matches_torch(device, dtype, op, fn):
    numerators = NUMERATORS + (0.5 if dtype == "float32" else 0)
    with refuses(device, dtype):
        compare(op, fn, [numerators.astype(dtype), DIVISORS.astype(dtype)], rtol=1e-6)


SCALAR_DIVISION = [
    ("x // -2", lambda a: a // -2), ("x % -3", lambda a: a % -3), ("7 // x", lambda a: 7 // a),
    ("-7 % x", lambda a: -7 % a), ("x % 3", lambda a: a % 3), ("x // 3", lambda a: a // 3),
]


@pytest.mark.parametrize("name, fn", SCALAR_DIVISION, ids=[row[0] for row in SCALAR_DIVISION])
def test_division_by_python_scalars_matches_torch(device, name, fn):
    values = np.array([-7, -6, -1, 1, 5, 6], np.int32)
    compare(name, fn, [values])


def test_integer_division_by_zero_is_zero_not_a_crash(device):
    """Documented: integer x // 0 and x % 0 give 0 (PyTorch raises ZeroDivisionError); the
    kernel never traps, and INT_MIN // -1 wraps like PyTorch."""
    x = Tensor(np.array([3, -3, 0], np.int32))
    np.testing.assert_array_equal((x // (x * 0)).numpy(), [0, 0, 0])
    np.testing.assert_array_equal((x % (x * 0)).numpy(), [0, 0, 0])
    compare("INT_MIN // -1", lambda a: a // -1, [np.array([-2 ** 31, 5], np.int32)])
    compare("INT_MIN % -1", lambda a: a % -1, [np.array([-2 ** 31, 5], np.int32)])


INT8 = np.array([100, 127, -128, -100, 0], np.int8)
UINT8 = np.array([0, 1, 200, 255], np.uint8)
OVERFLOW = [
    ("int8 + int8 wraps", lambda a: a + a, INT8),
    ("int8 * 3 wraps", lambda a: a * 3, INT8),
    ("-int8(-128) wraps", lambda a: -a, INT8),
    ("int8 - 100 wraps", lambda a: a - 100, INT8),
    ("int8 << 1 wraps", lambda a: a << 1, INT8),
    ("int8 sum does not wrap", lambda a: a.sum(), INT8),
    ("uint8 + uint8 wraps", lambda a: a + a, UINT8),
    ("uint8 - 1 wraps", lambda a: a - 1, UINT8),
    ("uint8 * uint8 wraps", lambda a: a * a, UINT8),
    ("-uint8 wraps", lambda a: -a, UINT8),
    ("uint8 // 7", lambda a: a // 7, UINT8),
    ("uint8 >> 3", lambda a: a >> 3, UINT8),
    ("uint8 sum does not wrap", lambda a: a.sum(), UINT8),
    ("int32 -> uint8 wraps", cast_to("uint8"), np.array([300, -1, 256, 255], np.int32)),
    ("int32 -> int8 wraps", cast_to("int8"), np.array([200, -129, 128, -128], np.int32)),
    ("int32 + 1 wraps at 2^31", lambda a: a + 1, np.array([2 ** 31 - 1, -1], np.int32)),
]


@pytest.mark.parametrize("name, fn, array", OVERFLOW, ids=[row[0] for row in OVERFLOW])
def test_small_integer_overflow_matches_torch(device, name, fn, array):
    compare(name, fn, [array])


# ---- float16 --------------------------------------------------------------------------------
HALF_A = (RNG.standard_normal((4, 64)) * 4).astype(np.float16)
HALF_B = (RNG.standard_normal((4, 64)) * 4).astype(np.float16)
HALF = [  # (name, fn, largest distance from torch in float16 units in the last place)
    ("add", lambda a, b: a + b, 0), ("mul", lambda a, b: a * b, 0), ("sub", lambda a, b: a - b, 0),
    ("a*b + a rounds twice", lambda a, b: a * b + a, 0),
    ("sqrt", lambda a, b: a.abs().sqrt(), 0), ("max", lambda a, b: a.max(1), 0),
    ("sum", lambda a, b: a.sum(1), 0), ("mean", lambda a, b: a.mean(1), 0),
    ("div (a * 1/b)", lambda a, b: a / b, 1), ("exp", lambda a, b: (a / 4).exp(), 2),
    ("matmul", lambda a, b: a @ b.T, 2),
]


@pytest.mark.parametrize("name, fn, ulps", HALF, ids=[row[0] for row in HALF])
def test_float16_rounds_like_torch(device, name, fn, ulps):
    """Regression (a*b + a): the C backend fused the float16 multiply-add into one rounding."""
    compare(name, fn, [HALF_A, HALF_B], ulps=max(ulps, 0), exact=not ulps)


def test_float16_overflow_and_subnormals_match_torch(device):
    compare("overflow", lambda a: a * 2, [np.array([60000, -60000, 30000], np.float16)],
            exact=True)
    compare("subnormals", lambda a: a * 1, [np.array([6e-8, 1e-5, -3e-6], np.float16)],
            exact=True)
    compare("float32 -> float16", lambda a: a.half(),
            [f32(1e5, 65519, 65520, -1e-9, 3e-8)], exact=True)
    compare("softmax", lambda a: a.softmax(1), [HALF_A], rtol=5e-3, atol=1e-5)


# ---- out-of-range gathers -------------------------------------------------------------------
def _index_dtype(device: str):
    """int64 as PyTorch's indices, int32 where the backend's language has no int64 (WGSL)."""
    return np.int32 if lacks(device, "int64") else np.int64


def test_out_of_range_gather_selects_nothing(device):
    """Documented (frontend/indexing.py): index values are lazy and not range-checked; an index
    outside [-n, n) selects nothing (0), negatives count from the end. PyTorch raises."""
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    index = np.array([[0, 4, 5, -1, -5, -6, 100, -100]] * 2, _index_dtype(device))
    got = Tensor(x).gather(1, Tensor(index)).numpy()
    expected = np.where((index >= -5) & (index < 5), np.take_along_axis(x, index % 5, 1), 0)
    np.testing.assert_array_equal(got, expected)
    picked = Tensor(np.arange(5, dtype=np.float32))[Tensor(np.array([1, 5, -1, -6],
                                                                    _index_dtype(device)))]
    np.testing.assert_array_equal(picked.numpy(), [1, 0, 4, 0])


def test_gather_never_reads_outside_its_tensor(device):
    """The gathered tensor is a window of a larger buffer full of sentinels: out-of-range
    indices must give 0, never a neighbour's sentinel."""
    big = np.full(64, 999, np.float32)
    big[20:30] = np.arange(10)
    window = Tensor(big)[20:30].reshape(2, 5)
    index = Tensor(np.array([[-6, 5, 6, 40, -20, 0]] * 2, _index_dtype(device)))
    got = window.gather(1, index).numpy()
    np.testing.assert_array_equal(got, [[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 5]])
    scattered = window.scatter(1, index, Tensor(np.full((2, 6), 7, np.float32))).numpy()
    np.testing.assert_array_equal(scattered, [[7, 1, 2, 3, 4], [7, 6, 7, 8, 9]])
    assert Tensor(big).numpy()[:20].tolist() == [999] * 20  # nothing written outside


def test_tensor_default_int_is_int32():
    """Where PyTorch returns int64 (argmax, sums of small ints) tinylab returns its default int,
    int32 (as tinygrad); the comparisons above check the values and the kind only."""
    assert Tensor(INT8).sum().dtype == dtypes.int32
    assert Tensor(SPECIAL).argmax(1).dtype == dtypes.int32


# ---- relative accuracy near zero ------------------------------------------------------------
SMALL = f32(1e-6, -1e-5, 1e-4, 1e-3, 0.05, -0.3)
# including composites such as tanh = 2*sigmoid(2x) - 1 or expm1 = exp(x) - 1, which would cancel
# near 0 if written naively
ACCURATE_NEAR_ZERO = ["sin", "tan", "atan", "sigmoid", "softplus", "silu", "logsigmoid",
                      "tanh", "sinh", "expm1", "log1p", "asinh", "atanh", "erf"]


def torch_function(name: str):
    return getattr(torch, name, None) or getattr(torch.nn.functional, name)


@pytest.mark.parametrize("name", ACCURATE_NEAR_ZERO)
def test_functions_near_zero_keep_relative_accuracy(name):
    got = getattr(Tensor(SMALL), name)().numpy()
    expected = torch_function(name)(torch.tensor(SMALL, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=0, err_msg=name)


