"""tinygrad's conventions (issue 52): where tinygrad accepts a call PyTorch refuses, tinylab
accepts it with tinygrad's meaning (negative pads crop in every mode, `dtype=` on matmul / dot /
linear / conv2d, string dtypes, tuple indices as numpy reads them, `interpolate(mode="linear")`
over every spatial dim, 0-d cummax, argmax of bool); where the two give different values for one
call (gelu, interpolate's default mode, cummax's tie index) PyTorch's stay the default and
TINYGRAD_VALUES=1 (the alias) gives tinygrad's. Checked against real tinygrad's results (a
golden file, tests/tinygrad_reference/make_reference.py), PyTorch and numpy."""
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tinylab import Context, Tensor, dtypes, nn
from tinylab.errors import TinylabError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tinygrad_reference"))
import conventions  # noqa: E402
from make_reference import GOLDEN, from_json  # noqa: E402

REFERENCE = from_json((GOLDEN / "conventions.json").read_text())
# float16 accumulation: PyTorch's (float32, rounded once) where tinygrad sums in half
HALF = {"products_2", "products_3"}


class Library:
    Tensor, dtypes, nn, Context = Tensor, dtypes, nn, Context


@pytest.fixture(scope="module")
def ours():
    with Context(TINYGRAD_VALUES=1):
        return conventions.run(Library)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_each_convention_gives_tinygrads_value(ours, name):
    want, have = REFERENCE[name], ours[name]
    assert have.shape == want.shape, name
    assert have.dtype == want.dtype or {have.dtype.kind, want.dtype.kind} <= {"i", "u"}, \
        (name, have.dtype, want.dtype)
    tolerance = 1e-3 if name in HALF else 2e-6
    np.testing.assert_allclose(have.astype(np.float64), want.astype(np.float64),
                               rtol=tolerance, atol=tolerance, err_msg=name)


# ---- the superset, against PyTorch and numpy --------------------------------------------------
@pytest.mark.parametrize("pads", [(1, -2, -1, 2), (-1, -1, 0, 0), (0, -3, 2, -1)])
def test_negative_constant_pads_crop_as_torch(pads):
    x = np.arange(30, dtype=np.float32).reshape(1, 1, 5, 6)
    np.testing.assert_array_equal(Tensor(x).pad(pads, value=2.5).numpy(),
                                  F.pad(torch.tensor(x), pads, value=2.5).numpy())


def test_negative_conv_padding_crops_the_input():
    x = np.random.default_rng(0).standard_normal((1, 2, 6, 7)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((3, 2, 2, 3)).astype(np.float32)
    cropped = F.conv2d(torch.tensor(x)[:, :, 1:-1, 2:-2], torch.tensor(w))
    np.testing.assert_allclose(Tensor(x).conv2d(Tensor(w), padding=(-1, -2)).numpy(),
                               cropped.numpy(), atol=1e-5)


def test_matmul_dtype_accumulates_exactly_in_a_wider_int():
    a = np.array([[100, 100, -3], [7, 8, 9]], np.int8)
    b = np.array([[3, 1], [3, 2], [5, -7]], np.int8)
    out = Tensor(a).matmul(Tensor(b), dtype=dtypes.int32)
    assert out.dtype == dtypes.int32
    np.testing.assert_array_equal(out.numpy(), a.astype(np.int32) @ b.astype(np.int32))
    np.testing.assert_array_equal((Tensor(a) @ Tensor(b)).numpy(), a @ b)  # int8 wraps, as numpy


@pytest.mark.parametrize("name, dtype", [("float", dtypes.float32), ("half", dtypes.float16),
                                         ("double", dtypes.float64), ("int", dtypes.int32),
                                         ("long", dtypes.int64), ("uint", dtypes.uint32),
                                         ("uchar", dtypes.uint8), ("char", dtypes.int8),
                                         ("FLOAT32", dtypes.float32), ("bfloat16", dtypes.bfloat16),
                                         ("default_float", dtypes.float32), ("bool", dtypes.bool)])
def test_string_dtypes_are_tinygrads_names(name, dtype):
    assert dtypes.from_any(name) is dtype
    assert Tensor([[1, 2], [3, 4]]).sum(dtype=name).dtype == dtype


@pytest.mark.parametrize("index", [(0,), (1, 1), ((0, 2),), ((0, 2), (1, 3)), (slice(None), (0, 2)),
                                   ([0, 1],), ([(0, 1)],), (((0, 1), (2, 2)),), ((True, False, True),)])
def test_tuples_inside_an_index_are_numpys_fancy_indices(index):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(Tensor(x)[index].numpy(), x[index])
    t, model = Tensor(x.copy()).realize(), x.copy()
    t[index] = -1.0
    model[index] = -1.0
    np.testing.assert_array_equal(t.numpy(), model)


def test_linear_interpolation_of_4d_and_5d_input_is_bilinear_and_trilinear():
    image = np.random.default_rng(2).standard_normal((2, 3, 5, 6)).astype(np.float32)
    volume = np.random.default_rng(3).standard_normal((1, 2, 4, 3, 5)).astype(np.float32)
    for x, mode in ((image, "bilinear"), (volume, "trilinear")):
        size = x.shape[2:][::-1]
        for corners in (False, True):
            want = F.interpolate(torch.tensor(x), size, mode=mode, align_corners=corners)
            np.testing.assert_allclose(Tensor(x).interpolate(size, mode="linear",
                                                             align_corners=corners).numpy(),
                                       want.numpy(), atol=1e-5)


def test_cummax_and_cummin_return_pytorchs_values_and_indices():
    x = np.array([[1, 3, 3, 2, np.nan, 1], [0, -1, -1, 4, 4, 2]], np.float32)
    for op in ("cummax", "cummin"):
        for dim in (0, 1):
            values, indices = getattr(Tensor(x), op)(dim)
            theirs = getattr(torch.tensor(x), op)(dim)
            np.testing.assert_array_equal(values.numpy(), theirs.values.numpy())
            np.testing.assert_array_equal(indices.numpy(), theirs.indices.numpy())
    values, indices = Tensor(2.5).cummax(0)
    assert values.item() == 2.5 and indices.item() == 0 and indices.dtype == dtypes.int32


def test_argmax_of_bool_is_the_first_true():
    x = np.array([[False, True, True], [False, False, False]])
    np.testing.assert_array_equal(Tensor(x).argmax(1).numpy(), x.argmax(1))
    np.testing.assert_array_equal(Tensor(x).argmin(1).numpy(), x.argmin(1))


def test_the_values_pytorch_and_tinygrad_disagree_on_follow_the_setting():
    x = np.linspace(-3, 3, 13, dtype=np.float32)
    erf = F.gelu(torch.tensor(x)).numpy()
    tanh = F.gelu(torch.tensor(x), approximate="tanh").numpy()
    np.testing.assert_allclose(Tensor(x).gelu().numpy(), erf, atol=1e-6)
    with Context(TINYGRAD_VALUES=1):
        np.testing.assert_allclose(Tensor(x).gelu().numpy(), tanh, atol=1e-6)
        np.testing.assert_allclose(Tensor(x).gelu(approximate="none").numpy(), erf, atol=1e-6)
        assert Tensor([1.0, 3.0, 3.0]).cummax(0)[1].tolist() == [0, 1, 1]
    assert Tensor([1.0, 3.0, 3.0]).cummax(0)[1].tolist() == [0, 1, 2]


# ---- errors tinygrad's tests expect, naming the op and argument --------------------------------
@pytest.mark.parametrize("make, kinds, words", [
    (lambda: Tensor([1, 2]) << -1, (ValueError, RuntimeError), "lshift: negative shift count -1"),
    (lambda: Tensor([1, 2]).rshift(-3), (ValueError, RuntimeError), "rshift: negative shift"),
    (lambda: Tensor.kaiming_uniform(-3, 3), (ValueError,), "kaiming_uniform: negative size"),
    (lambda: Tensor.kaiming_normal((-3, 3), 3), (ValueError,), "kaiming_normal"),
    (lambda: Tensor.linspace(5, 10, 3, dtype="bool"), (ValueError, RuntimeError,
                                                       NotImplementedError), "linspace: dtype bool"),
    (lambda: Tensor.stack(Tensor([1, 2]), Tensor([1, 2, 3])), (ValueError, RuntimeError), "stack"),
    (lambda: Tensor([1.0, 2]).scatter_reduce(0, Tensor([0, 1]), Tensor([1.0, 1]), reduce="bad"),
     (ValueError, RuntimeError), "scatter_reduce: reduce"),
    (lambda: Tensor([1, 2, 3])[::0], (ValueError,), "step"),
    (lambda: Tensor([0, 5]).one_hot(3), (ValueError, RuntimeError), "one_hot: class values"),
    (lambda: Tensor([0, -1]).one_hot(3), (ValueError, RuntimeError), "one_hot: class values"),
    (lambda: dtypes.finfo(dtypes.int8), (ValueError,), "finfo: dtypes.int8"),
])
def test_errors_name_the_op_and_argument(make, kinds, words):
    with pytest.raises(kinds) as caught:
        make()
    assert all(isinstance(caught.value, kind) for kind in kinds)
    assert words in str(caught.value)
    assert isinstance(caught.value, (TinylabError, ValueError))
