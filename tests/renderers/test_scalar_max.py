"""The C family's scalar float max (renderers/cstyle.py spell_max): NaN wins and a tie gives the
second operand, for every pair of special floats, bit for bit; checked against that rule in
Python and against numpy where numpy defines it, in an elementwise maximum and in a max-reduce
(the accumulator form a max-pool runs), with vectorization off so the scalar text is what runs."""
import itertools
import struct

import numpy as np
import pytest

from tinylab import Context, Tensor

SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, float("inf"), float("-inf"), float("nan"), 1e-40,
           -1e-40, 3.4e38]


def _bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _rule(a: float, b: float) -> float:
    """The defined max: a NaN operand wins; otherwise the larger; a tie gives b."""
    return a if (a > b or a != a) else b


def _same(got: float, want: float) -> bool:
    return (got != got and want != want) or _bits(got) == _bits(want)


PAIRS = list(itertools.product(SPECIAL, repeat=2))


@pytest.mark.parametrize("noopt", [1, 0])
def test_elementwise_maximum_of_every_special_pair(noopt):
    a = np.array([p[0] for p in PAIRS], np.float32)
    b = np.array([p[1] for p in PAIRS], np.float32)
    with Context(NOOPT=noopt):
        got = Tensor(a).maximum(Tensor(b)).numpy()
    for (x, y), value in zip(PAIRS, got.tolist()):
        want = _rule(float(np.float32(x)), float(np.float32(y)))
        assert _same(value, want), (x, y, value, want)
    # numpy agrees wherever its maximum is defined (NaN propagates; unequal values)
    unequal = a != b
    np.testing.assert_array_equal(got[unequal], np.maximum(a, b)[unequal])


def test_max_reduce_over_windows_of_special_values():
    """Each row's max through the reduce accumulator (a 2x2 pool's loop), NaN anywhere wins."""
    rng = np.random.default_rng(0)
    x = rng.choice(np.array(SPECIAL, np.float32), (64, 4))
    with Context(NOOPT=1):
        got = Tensor(x).max(1).numpy()
        pooled = Tensor(x.reshape(1, 1, 16, 16)).max_pool2d(2).numpy()
    want = np.where(np.isnan(x).any(1), np.nan, np.max(np.where(np.isnan(x), -np.inf, x), 1))
    np.testing.assert_array_equal(got, want.astype(np.float32))
    windows = x.reshape(16, 16).reshape(8, 2, 8, 2).transpose(0, 2, 1, 3).reshape(8, 8, 4)
    want_pool = np.where(np.isnan(windows).any(-1), np.nan,
                         np.where(np.isnan(windows), -np.inf, windows).max(-1))
    np.testing.assert_array_equal(pooled.reshape(8, 8), want_pool.astype(np.float32))
