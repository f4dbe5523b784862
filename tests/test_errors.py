"""Bad input: clear errors at build time naming the op and the shapes; compiler failures show
the source and the compiler's message; unknown devices list the known ones."""
import numpy as np
import pytest

from tinylab import Context, Device, Tensor
from tinylab.errors import CompileError, CompilerNotFoundError, DeviceError, ShapeError
from tinylab.runtimes.cpu import CPURuntime


def test_broadcast_error_names_op_and_shapes():
    with pytest.raises(ShapeError, match=r"add: shapes \(2, 3\) and \(4,\)"):
        Tensor.ones(2, 3) + Tensor.ones(4)


def test_matmul_error():
    with pytest.raises(ShapeError, match=r"matmul: shapes \(2, 3\) and \(4, 5\) do not align"):
        Tensor.ones(2, 3) @ Tensor.ones(4, 5)


def test_reshape_error():
    with pytest.raises(ShapeError, match=r"reshape: cannot reshape \(2, 3\)"):
        Tensor.ones(2, 3).reshape(4, 2)


def test_permute_and_axis_errors():
    with pytest.raises(ShapeError, match="permute"):
        Tensor.ones(2, 3).permute(0, 0)
    with pytest.raises(IndexError, match=r"sum: axis 2 is out of range .*shape \(2, 3\)"):
        Tensor.ones(2, 3).sum(2)


def test_unknown_device_lists_known():
    with pytest.raises(DeviceError, match="known devices: .*CPU.*PYTHON"):
        Device["NOPE"]
    with pytest.raises(DeviceError, match="known devices"):
        Tensor([1.0], device="FOO")


def test_compile_error_shows_source_and_log(tmp_path):
    runtime = CPURuntime(cache_dir=tmp_path)
    with pytest.raises(CompileError) as info:
        runtime.compile("void broken(float* x) { x[0] = undefined_name; }")
    message = str(info.value)
    assert "undefined_name" in message and "kernel source" in message
    assert "1 | void broken" in message
    # the next kernel still compiles
    library, _ = runtime.compile("void fine(float* x) { x[0] = 1.0f; }")
    assert library.exists()


def test_missing_compiler_says_how_to_install(tmp_path):
    runtime = CPURuntime(compiler="definitely-not-a-compiler", cache_dir=tmp_path)
    with pytest.raises(CompilerNotFoundError, match="apt-get install gcc"):
        runtime.compile("void f(void) {}")


def test_ragged_and_non_numeric_data():
    with pytest.raises(ValueError, match="ragged"):
        Tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="not a number"):
        Tensor([1, "a"])


def test_backward_needs_scalar():
    with pytest.raises(ShapeError, match="gradient can only be implied"):
        Tensor.ones(3).mul(2).backward()


def test_numpy_values_roundtrip():
    data = np.arange(6, dtype=np.int64).reshape(2, 3)
    out = Tensor(data).numpy()
    assert out.dtype == np.int64 and (out == data).all()
    with Context(DEV="PYTHON"):
        assert Tensor([1.5, 2.5]).device == "PYTHON"
