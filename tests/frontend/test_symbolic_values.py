"""Symbolic sizes as values (issue 29): Tensor(v) of a bound Variable, v * tensor, arange with a
symbolic start or stop, tril/triu of a symbolic size, Variable(..., dtype=); several bound values
against numpy, and a second value compiles nothing."""
import numpy as np
import pytest

from tinylab import GlobalCounters, Tensor, Variable, dtypes
from tinylab.engine import realize as engine

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


def test_symbolic_range_needs_a_unit_step_and_a_length_that_stays_positive():
    v = Variable("i", 1, 10).bind(3)
    with pytest.raises(TypeError, match="arange: a symbolic range takes step 1"):
        Tensor.arange(0, v, 2)
    with pytest.raises(TypeError, match="arange: a symbolic range takes step 1"):
        Tensor.arange(0, 10, v)
    with pytest.raises(ValueError, match="may be negative"):
        Tensor.arange(v, 5)


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
