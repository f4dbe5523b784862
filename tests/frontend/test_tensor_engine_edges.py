"""Edge cases fixed below the frontend: a reduce over an empty axis is its identity (built as a
CONST by ir.reduce); kernels whose output has zero elements are neither compiled nor run; a
padded logical-not (bool NEG, True at 0) reads False in the padding like every other value."""
import numpy as np
import torch

from tinylab import GlobalCounters, Tensor, dtypes
from tinylab.ir import node as ir
from tinylab.ir.ops import Op


def empty(*shape):
    return Tensor(np.zeros(shape, np.float32))


def test_reduce_over_empty_axis_is_its_identity():
    x = empty(0, 3)
    assert ir.reduce(Op.REDUCE_SUM, x.node, (0,)).op is Op.CONST
    assert ir.reduce(Op.REDUCE_SUM, x.node, (0,)).value == 0
    assert ir.reduce(Op.REDUCE_MAX, x.node, (0,)).value == -np.inf
    ints = Tensor(np.zeros((2, 0), np.int32))
    assert ir.reduce(Op.REDUCE_MAX, ints.node, (1,)).value == np.iinfo(np.int32).min
    assert Tensor(np.zeros((0,), bool)).node.max((0,)).value is False


def test_sum_and_matmul_over_empty_axes_match_torch():
    np.testing.assert_array_equal(empty(0, 3).sum(0).numpy(), torch.zeros(0, 3).sum(0).numpy())
    np.testing.assert_array_equal(empty(2, 0).sum().numpy(), np.float32(0))
    out = Tensor.ones(2, 0) @ Tensor.ones(0, 3)
    np.testing.assert_array_equal(out.numpy(), (torch.ones(2, 0) @ torch.ones(0, 3)).numpy())
    assert Tensor(np.zeros((0, 4), np.int32)).sum(0).dtype == dtypes.int32


def test_gradient_through_a_broadcast_over_an_empty_axis_is_zero():
    x = Tensor(np.ones((1, 3), np.float32), requires_grad=True)
    (grad,) = (x + empty(0, 3)).sum().gradient(x)
    np.testing.assert_array_equal(grad.numpy(), np.zeros((1, 3), np.float32))


def test_zero_element_kernels_do_not_launch():
    a, b = empty(0, 3), empty(0, 3)
    before = GlobalCounters.kernel_count
    out = (a + b).exp().realize()
    a.assign(a + 1).realize()
    assert GlobalCounters.kernel_count == before
    assert out.node.op is Op.BUFFER and out.numpy().shape == (0, 3)


def test_padding_around_a_logical_not_is_false(device):
    x = Tensor([True, False])
    np.testing.assert_array_equal(x.logical_not().pad(((1, 1),)).numpy(),
                                  [False, False, True, False])
    hot = Tensor([[0, 2]]).unsqueeze(-1) == Tensor.arange(3)  # one-hot, then padded
    np.testing.assert_array_equal(hot.pad(((0, 1), None, None)).any(-1).numpy(),
                                  [[True, True], [False, False]])
