"""Regression tests: one per bug the random-graph fuzzer (test_fuzz.py) found, each the smallest
program that showed it, checked on every backend against numpy."""
import numpy as np

from tinylab import Context, Tensor

X = np.array([1.0, -2.0, 3.5], np.float32)


def test_subtracting_a_negative_constant_compiles(device):
    """C-style renderers printed NEG of the literal -2.5f as `--2.5f`, a decrement: a compile error."""
    np.testing.assert_allclose((Tensor(X) - (-2.5)).numpy(), X + 2.5)
    np.testing.assert_allclose((-(Tensor(X) * 0 - 2.5)).numpy(), np.full(3, 2.5, np.float32))


def test_padding_an_empty_tensor_gives_zeros(device):
    """The PYTHON backend failed to view the 1-byte placeholder of an empty float buffer."""
    empty = Tensor(np.zeros((1, 1, 0), np.float32))
    np.testing.assert_array_equal(empty.pad(((0, 0), (0, 0), (0, 1))).numpy(),
                                  np.zeros((1, 1, 1), np.float32))
    np.testing.assert_array_equal((-empty).sum(0).pad(((0, 0), (1, 1))).numpy(),
                                  np.zeros((1, 2), np.float32))


def test_empty_intermediates_of_different_dtypes_do_not_share_a_buffer(device):
    """Unfused, the memory planner gave an empty int32 intermediate the (empty) buffer of a bool
    one; its one-byte placeholder could not be viewed as int32 on the PYTHON backend."""
    x = Tensor(np.array([[[[7]]]], np.int32))
    y = (-x).shrink(((0, 1), (0, 0), (0, 0), (0, 0)))
    with Context(FUSE=0):
        out = y.neg().neg().relu().pad(((0, 0), (0, 1), (0, 1), (0, 1))).numpy()
    np.testing.assert_array_equal(out, np.zeros((1, 1, 1, 1), np.int32))


def test_a_group_axis_cannot_be_upcast():
    """The kernel fuzzer found UPCAST accepted on a GROUP (work-group reduce) axis: the plan then
    summed only one of the group's elements (CL gave -0.132 for -0.132 + 0.126)."""
    from tinylab.codegen.plan import KernelPlan, Opt, OptError
    from tinylab.schedule.fusion import SchedulerOptions
    from tinylab.schedule.schedule import schedule
    total = Tensor(np.array([[0.125], [-0.25]], np.float32)).sum(0)
    (item,) = schedule([total.node], SchedulerOptions()).kernels
    grouped = KernelPlan.from_ast(item.ast).apply(Opt("GROUP", 0, 0))
    for action in ("UPCAST", "LOCAL"):
        try:
            grouped.apply(Opt(action, 0, 0))
        except OptError as error:
            assert "needs a global loop" in str(error)
        else:
            raise AssertionError(f"{action} was applied to a GROUP axis")


def test_scatter_with_an_empty_index_returns_the_tensor(device):
    """The fuzzer's scatter steps found scatter / scatter_reduce(amax) taking the max over an
    empty axis (an index with 0 elements along dim): a ShapeError, where PyTorch returns self."""
    x = np.array([7.0, -1.0], np.float32)
    empty = Tensor(np.zeros(0, np.int32))
    np.testing.assert_array_equal(Tensor(x).scatter(0, empty, Tensor(np.zeros(0, np.float32)))
                                  .numpy(), x)
    np.testing.assert_array_equal(Tensor(x).scatter_reduce(0, empty, Tensor(np.zeros(
        0, np.float32)), "amax").numpy(), x)
