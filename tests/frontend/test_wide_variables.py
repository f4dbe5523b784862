"""Variables whose range leaves int32 (issue 52): a kernel takes them as int64 arguments, their
value as a number is int64 and is read with no loop over it, so a bound value past 2**31 reads
back exactly (it read 0). Checked against Python's integers on every backend; WGSL, whose
kernels take i32 variables, refuses with an error naming them."""
import numpy as np
import pytest

from tinylab import Tensor, TinyJit, Variable, dtypes
from tinylab.engine.realize import render_for
from tinylab.errors import TinylabError

VALUES = [5, 2 ** 31 - 1, 2 ** 31, 2 ** 32 + 1, 3 * 2 ** 33 + 7, 2 ** 41]


def _wide(value):
    return Variable("n", 0, 2 ** 41, dtype=dtypes.int64).bind(value)


def test_the_issue_example_reads_back(device):
    if device == "WEBGPU":
        pytest.skip("WGSL kernels take i32 variables (see the refusal test)")
    v = Variable("n", 0, 2 ** 41, dtype=dtypes.int64).bind(3 * 2 ** 33)
    assert int(Tensor(v).contiguous().item()) == 3 * 2 ** 33


@pytest.mark.parametrize("value", VALUES)
def test_a_wide_variable_as_a_value(device, value):
    if device == "WEBGPU":
        pytest.skip("WGSL kernels take i32 variables (see the refusal test)")
    v = _wide(value)
    got = Tensor(v)
    assert got.dtype == dtypes.int64
    assert got.item() == value
    t = Tensor([1, -2, 3], dtype=dtypes.int64)
    np.testing.assert_array_equal((t * v).numpy(), [value, -2 * value, 3 * value])
    np.testing.assert_array_equal((t + v).numpy(), [value + 1, value - 2, value + 3])
    np.testing.assert_array_equal(Tensor.arange(v, v + 3).numpy(), [value, value + 1, value + 2])


def test_a_jitted_step_replays_with_wide_values():
    @TinyJit
    def shifted(x, n):
        return (x + Tensor(n)).contiguous()

    x = Tensor([0, 1], dtype=dtypes.int64).realize()
    for value in VALUES * 2:
        np.testing.assert_array_equal(shifted(x, _wide(value)).numpy(), [value, value + 1])


def test_kernels_declare_wide_variables_int64_and_narrow_ones_int():
    wide = Tensor(_wide(2 ** 35)).node
    narrow = Tensor(Variable("m", 0, 64).bind(5)).node
    assert "const long long n" in _source(wide, "CPU")
    assert "const int m" in _source(narrow, "CPU")
    assert Tensor(Variable("m", 0, 64).bind(5)).dtype == dtypes.int32


def test_wgsl_refuses_a_wide_variable_by_name():
    with pytest.raises((TinylabError, NotImplementedError), match="n"):
        _source(Tensor(_wide(2 ** 35)).node, "WEBGPU")


def _source(node, device: str) -> str:
    from tinylab.engine.realize import cached_schedule, REALIZED
    from tinylab.engine.engine_state import FreshRealized
    sched = cached_schedule([node], FreshRealized(REALIZED))
    return "\n".join(render_for(item.ast, device) for item in sched.kernels)
