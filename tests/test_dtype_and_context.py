"""DType.min / DType.max (tinygrad's names) against torch.iinfo, and Context as a decorator
(tinygrad's `@Context(DEBUG=2)`): each call gets the overrides, recursion and exceptions
restore them."""
import math

import pytest
import torch

from tinylab import Context, dtypes
from tinylab.config import BEAM, DEBUG
from tinylab.dtype import ALL_DTYPES


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_dtype_min_max(dtype):
    if dtype.is_bool:
        expected = (False, True)
    elif dtype.is_float:  # tinygrad's: the identities of max / min (torch.finfo gives finite)
        expected = (-math.inf, math.inf)
    else:
        info = torch.iinfo(getattr(torch, dtype.name))
        expected = (info.min, info.max)
    assert (dtype.min, dtype.max) == expected
    assert (dtypes.min(dtype), dtypes.max(dtype.name)) == expected


def test_context_decorator_scopes_each_call():
    before = DEBUG.value

    @Context(DEBUG=3)
    def read():
        return DEBUG.value
    assert read() == 3 and read() == 3
    assert DEBUG.value == before


def test_context_decorator_recursion_and_exceptions():
    before = (BEAM.value, DEBUG.value)

    @Context(BEAM=2)
    def nested(depth):
        with Context(DEBUG=depth):
            inner = nested(depth - 1) if depth else []
            return [(BEAM.value, DEBUG.value)] + inner
    assert nested(2) == [(2, 2), (2, 1), (2, 0)]
    assert (BEAM.value, DEBUG.value) == before

    @Context(BEAM=1)
    def fails():
        raise KeyError("inside")
    with pytest.raises(KeyError):
        fails()
    assert BEAM.value == before[0]


def test_context_decorator_checks_its_settings_at_once():
    with pytest.raises(ValueError, match="NOPE"):
        Context(NOPE=1)
    with pytest.raises(TypeError, match="DEBUG"):
        Context(DEBUG="loud")


def test_a_vector_type_is_one_object_equal_to_a_fresh_one():
    """DType.vec hands out one object per (scalar, lanes), like the scalar types; it still
    equals and hashes as a DType built with the same fields, and its scalar is the scalar."""
    from tinylab.dtype import DType
    v = dtypes.float32.vec(8)
    assert v is dtypes.float32.vec(8) and v is not dtypes.float32.vec(4)
    fresh = DType(v.name, v.itemsize, v.kind, v.c_name, v.numpy_name, 8)
    assert fresh == v and hash(fresh) == hash(v)
    assert v.count == 8 and v.scalar is dtypes.float32 and dtypes.int32.vec(8) != v
