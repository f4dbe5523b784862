"""Symbolic sizes as values (issue 29): Tensor(v) of a bound Variable, v * tensor, arange with a
symbolic start or stop, tril/triu of a symbolic size, Variable(..., dtype=); several bound values
against numpy, and a second value compiles nothing."""
import numpy as np
import pytest

from tinylab import GlobalCounters, Tensor, Variable, dtypes
from tinylab.engine import realize as engine
from tinylab.errors import ShapeError

VALUES = (2, 5, 9)


def _compiles_once(build):
    """build(n) -> (tensor, expected numpy) for each value; values after the first compile
    nothing and add no runner."""
    for k, n in enumerate(VALUES):
        runners, compiles = len(engine.STATE.runners), GlobalCounters.compile_count
        got, expected = build(n)
        value = got.numpy()
        assert value.shape == expected.shape and value.dtype == expected.dtype, (value, expected)
        np.testing.assert_allclose(value, expected, rtol=1e-6)
        if k:
            assert len(engine.STATE.runners) == runners and GlobalCounters.compile_count == \
                compiles, f"value {n} compiled a new kernel"


def test_tensor_of_a_bound_variable_is_its_value():
    i = Variable("i", 1, 10)
    _compiles_once(lambda n: (Tensor(i.bind(n)), np.array(n, np.int32)))
    j = Variable("j", 1, 10)  # not i: i's values are realized above, and would be reused
    _compiles_once(lambda n: (Tensor(j.bind(n), dtype=dtypes.float32) / 4,
                              np.array(n / 4, np.float32)))


def test_variable_times_and_plus_a_tensor():
    i = Variable("i", 1, 10)
    x = Tensor([1.0, -2.0, 0.5]).realize()
    base = np.array([1.0, -2.0, 0.5], np.float32)
    _compiles_once(lambda n: (i.bind(n) * x + (i.bind(n) - x) * 2,
                              (n * base + (n - base) * 2).astype(np.float32)))


def test_arange_with_a_symbolic_start_or_stop():
    i = Variable("i", 1, 10)
    _compiles_once(lambda n: (Tensor.arange(i.bind(n)).sum(),
                              np.array(np.arange(n).sum(), np.int32)))
    _compiles_once(lambda n: ((Tensor.arange(i.bind(n), 12) * 3).sum(),
                              np.array(np.arange(n, 12).sum() * 3, np.int32)))
    _compiles_once(lambda n: (Tensor.arange(1, i.bind(n) + 3, dtype="float32").max(),
                              np.array(n + 2, np.float32)))
    v = i.bind(4)
    assert Tensor.arange(v).shape == (v,) and Tensor.arange(v, 12).shape == (12 - v,)


def test_symbolic_range_needs_a_nonzero_step_and_a_length_that_stays_positive():
    v = Variable("i", 1, 10).bind(3)
    with pytest.raises(ValueError, match="step must not be zero"):
        Tensor.arange(0, 10, Variable("z", 0, 4).bind(0))
    with pytest.raises(ValueError, match="may be negative"):
        Tensor.arange(v, 5)
    with pytest.raises(TypeError, match="must be an int or a Variable"):
        Tensor.arange(0.5, v)


def test_arange_whose_length_is_not_linear_in_the_variables():
    """arange(0, 10, v): ceil(10 / v) elements, as numpy and tinygrad; the length is a variable
    of its own, so one kernel serves every value (a step whose range holds 0 is fine where its
    bound value is not)."""
    s = Variable("st", 1, 6)
    _compiles_once(lambda n: (Tensor.arange(0, 10, s.bind(n % 6 + 1)) * 2,
                              np.arange(0, 10, n % 6 + 1).astype(np.int32) * 2))
    for n in (1, 2, 3, 4, 7):
        assert Tensor.arange(0, 10, Variable("st", 1, 7).bind(n)).tolist() == \
            list(range(0, 10, n))
        assert Tensor.arange(0, 10, Variable("z", 0, 10).bind(n)).tolist() == \
            list(range(0, 10, n))
    stop = Variable("sq", 1, 12)
    _compiles_once(lambda n: (Tensor.arange(1, stop.bind(n), 3, dtype="float32") + 0.5,
                              np.arange(1, n, 3).astype(np.float32) + 0.5))
    b, e, t = Variable("ab", 0, 5), Variable("ae", 10, 20), Variable("as_", 1, 3)
    for start, end, step in ((2, 14, 3), (0, 10, 2), (5, 20, 3), (4, 11, 1)):
        got = Tensor.arange(b.bind(start), e.bind(end), t.bind(step))
        assert got.tolist() == list(range(start, end, step))
        assert got.sum().item() == sum(range(start, end, step))
    down = Variable("dn", 1, 4)
    for n in (1, 3, 4):
        assert Tensor.arange(10, 0, -down.bind(n)).tolist() == list(range(10, 0, -n))
    assert Tensor.arange(0, 10, Variable("st", 1, 3).bind(2))[:5].tolist() == [0, 2, 4, 6, 8]


def test_arange_with_a_symbolic_step():
    """A symbolic step that divides stop - start gives a fixed count (one kernel for every
    value); a static step over a fixed span with symbolic ends too."""
    i = Variable("i", 1, 10)
    _compiles_once(lambda n: (Tensor.arange(0, 3 * i.bind(n), i.bind(n)) + 1,
                              (np.arange(0, 3 * n, n) + 1).astype(np.int32)))
    _compiles_once(lambda n: (Tensor.arange(1, 4 * i.bind(n) + 1, i.bind(n), dtype="float32") * 2,
                              np.arange(1, 4 * n + 1, n).astype(np.float32) * 2))
    _compiles_once(lambda n: (Tensor.arange(i.bind(n), i.bind(n) + 6, 2),
                              np.arange(n, n + 6, 2).astype(np.int32)))
    assert Tensor.arange(0, 2 * i.bind(3), i.bind(3)).shape == (2,)


def test_tril_and_triu_of_a_symbolic_size():
    i = Variable("i", 1, 10)
    weights = np.arange(100, dtype=np.float32).reshape(10, 10)
    w = Tensor(weights).realize()
    _compiles_once(lambda n: ((_square(w, i.bind(n)).tril() * 2).sum(1).sum(),
                              np.array(np.tril(weights[:n, :n]).sum() * 2, np.float32)))
    _compiles_once(lambda n: (_square(w, i.bind(n)).triu(1).sum(0).sum(),
                              np.array(np.triu(weights[:n, :n], 1).sum(), np.float32)))


def test_variable_takes_an_int_dtype_as_tinygrad_does():
    v = Variable("d", 1, 6, dtype=dtypes.int32).bind(4)
    assert Tensor(v).item() == 4 and Variable("e", 0, 3, dtype="int64").max == 3
    with pytest.raises(TypeError, match="int dtype"):
        Variable("f", 1, 6, dtype=dtypes.float32)


def _square(w, v):
    return w.shrink(((0, v), (0, v)))


# ---- issue 29, the rest: mean over two variables, shrink/pad/split/chunk along a symbolic dim --
DATA = np.arange(120, dtype=np.float32).reshape(10, 12) * 0.25 - 7


def _block(w, a, b):
    return w.shrink(((0, a), (0, b)))


def test_mean_var_std_over_a_product_of_two_variables():
    a, b = Variable("ma", 1, 10), Variable("mb", 1, 12)
    w = Tensor(DATA).realize()
    pairs = ((2, 3), (5, 7), (9, 12))
    for reduce, numpy_reduce in (
            (lambda t: t.mean(), lambda x: x.mean()),
            (lambda t: t.mean(axis=(0, 1), keepdim=True), lambda x: x.mean((0, 1), keepdims=True)),
            (lambda t: t.var(), lambda x: x.var(ddof=1)),
            (lambda t: t.std(correction=0), lambda x: x.std())):
        for k, (m, n) in enumerate(pairs):
            runners, compiles = len(engine.STATE.runners), GlobalCounters.compile_count
            got = reduce(_block(w, a.bind(m), b.bind(n))).numpy()
            np.testing.assert_allclose(got, numpy_reduce(DATA[:m, :n]).astype(np.float32),
                                       rtol=2e-6, atol=1e-6)
            if k:
                assert len(engine.STATE.runners) == runners and \
                    GlobalCounters.compile_count == compiles, f"({m}, {n}) compiled a new kernel"
    # one axis at a time: a symbolic count divides as before
    c = Variable("mc", 1, 10)
    _compiles_once(lambda n: (_block(w, c.bind(n), 12).mean(0),
                              DATA[:n].mean(0).astype(np.float32)))


def test_shrink_of_a_static_size_out_of_a_symbolic_dim():
    """The tiny suite's case: shrink ((0, 2),) of a dim bound to 2 with range 1..10, and
    x[:, v:v+2]: a shrink is checked at its bound values where the range does not decide it."""
    ones = Tensor.ones(10).contiguous().realize()
    for n in (2, 5):
        v = Variable("sv", 1, 10).bind(n)
        out = ones.shrink(((0, v),)).shrink(((0, 2),))
        assert out.shape == (2,)
        np.testing.assert_array_equal(out.numpy(), np.ones(2, np.float32))
    w = Tensor(DATA).realize()
    s = Variable("ss", 0, 10)
    _compiles_once(lambda n: (w[:, s.bind(n):s.bind(n) + 2] * 2, DATA[:, n:n + 2] * 2))
    with pytest.raises(ShapeError, match="do not fit"):
        ones.shrink(((0, Variable("sv", 1, 10).bind(1)),)).shrink(((0, 2),))


def test_pad_split_and_chunk_along_a_symbolic_dim():
    w = Tensor(DATA).realize()
    p = Variable("pp", 1, 10)
    _compiles_once(lambda n: (_block(w, p.bind(n), 12).pad(((1, 2), (0, 1))) + 1,
                              np.pad(DATA[:n], ((1, 2), (0, 1))) + 1))
    for n in (3, 5, 6, 7, 10):
        v = Variable("sp", 1, 10).bind(n)
        x = _block(w, v, 12)
        for pieces, expected in ((x.split(3), np.split(DATA[:n], range(3, n, 3))),
                                 (x.split([2, v - 2]), np.split(DATA[:n], [2])),
                                 (x.chunk(2), np.split(DATA[:n], [-(-n // 2)])),
                                 (x.split(5, dim=1), np.split(DATA[:n], [5, 10], axis=1))):
            assert len(pieces) == len(expected)
            for piece, want in zip(pieces, expected):
                np.testing.assert_array_equal((piece * 3).numpy(), want * 3)
    with pytest.raises(ShapeError, match="do not add up"):
        _block(w, Variable("sp", 1, 10).bind(4), 12).split([2, 3])


def test_a_variable_bound_to_zero_counts_zero():
    """Tensor(v) of v = 0 is counted by a zero-trip loop (the launch's FLOP count divided by
    that loop's 0 trips); arange over an empty symbolic range is empty."""
    z = Variable("zc", 0, 10)
    assert Tensor(z.bind(0)).item() == 0 and (Tensor(z.bind(0)) + 1).item() == 1
    assert Tensor.arange(0, 10, Variable("zs", 1, 10).bind(4)).tolist() == [0, 4, 8]
    assert Tensor.arange(z.bind(0), 0, Variable("zt", 1, 3).bind(2)).tolist() == []


def test_a_nonlinear_symbolic_arange_inside_tinyjit_is_refused():
    from tinylab import TinyJit
    from tinylab.errors import JitError

    @TinyJit
    def step(x, v):
        return (x + Tensor.arange(0, 10, v).sum()).realize()

    x = Tensor([1.0]).realize()
    with pytest.raises(JitError, match="linear in the variables"):
        for n in (2, 3, 2):
            step(x, Variable("jv", 1, 5).bind(n))
