"""The Tensor core: construction dtypes, .numpy() dtypes (PyTorch's), item/tolist, devices,
realize/replace/assign/clone, the training and no_grad switches, and the autograd API
(backward, gradient, accumulation, detach, requires_grad)."""
import numpy as np
import pytest
import torch

from tinylab import Context, Tensor, dtypes
from tinylab.engine.devices import Device

NUMPY_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
                "float64"]


@pytest.mark.parametrize("name", NUMPY_DTYPES)
def test_numpy_returns_the_dtype_pytorch_would(name):
    array = (np.arange(6).reshape(2, 3) % 2).astype(name)
    ours = Tensor(array)
    theirs = torch.from_numpy(array.copy())
    assert ours.numpy().dtype == theirs.numpy().dtype == np.dtype(name)
    assert (ours + ours).numpy().dtype == (theirs + theirs).numpy().dtype or name in (
        "bool",)  # bool + bool: PyTorch gives bool too; tinylab ORs
    np.testing.assert_array_equal(ours.numpy(), array)


def test_python_data_takes_tinygrads_defaults():
    assert Tensor([1, 2]).dtype == dtypes.int32
    assert Tensor([1.0, 2]).dtype == dtypes.float32
    assert Tensor([[True], [False]]).dtype == dtypes.bool
    assert Tensor(3).dtype == dtypes.int32 and Tensor(3).shape == ()
    assert Tensor(2.5).dtype == dtypes.float32
    assert Tensor(np.float64(2.5)).dtype == dtypes.float64
    assert Tensor(np.zeros(2)).dtype == dtypes.float64  # numpy arrays keep their dtype
    assert Tensor([1, 2], dtype="float16").numpy().dtype == np.float16
    assert Tensor([]).shape == (0,) and Tensor([]).dtype == dtypes.float32
    assert Tensor(b"\x01\x02").dtype == dtypes.uint8


def test_item_tolist_and_python_conversions():
    x = Tensor([[1.5, 2.0], [3.0, 4.0]])
    assert x.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    assert x.sum().item() == 10.5 and isinstance(x.sum().item(), float)
    assert Tensor([7]).item() == 7 and isinstance(Tensor([7]).item(), int)
    assert float(x[0, 0]) == 1.5 and int(x[1, 1]) == 4 and bool(x[0, 0] > 1)
    assert len(x) == 2 and x.numel() == 4 and x.ndim == 2 and x.size(1) == 2
    assert x.nbytes() == 16 and x.element_size() == 4 and x.is_floating_point()
    with pytest.raises(ValueError):
        x.item()
    with pytest.raises(ValueError):
        bool(x)


def test_realize_several_and_replace():
    a, b = Tensor([1.0, 2.0]) + 1, Tensor([3.0]) * 2
    Tensor.realize(a, b)
    assert a.node.op.name == "BUFFER" and b.node.op.name == "BUFFER"
    a.replace(Tensor([5.0, 6.0]))
    assert a.tolist() == [5.0, 6.0]
    with pytest.raises(ValueError):
        a.replace(Tensor([1.0]))


def test_assign_writes_in_place_and_clone_keeps_the_old_value():
    x = Tensor([1.0, 2.0, 3.0]).realize()
    buffer, copy = x.node.buffer, x.clone()
    x.assign(x * 2)
    x += 1
    assert x.tolist() == [3.0, 5.0, 7.0] and x.node.buffer is buffer
    assert copy.tolist() == [1.0, 2.0, 3.0]
    x.assign(0)  # scalars broadcast
    assert x.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.skipif(not Device["PYTHON"].available, reason="no PYTHON device")
def test_to_device_moves_values_and_gradients():
    x = Tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x.to("PYTHON")
    assert y.device == "PYTHON" and y.to("CPU").device == "CPU" and x.to(x.device) is x
    loss = (y * y).sum()
    assert loss.item() == 14.0
    loss.backward()
    assert x.grad.device == x.device
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, -4.0, 6.0])
    z = Tensor([1.0]).realize()
    z.to_("PYTHON")
    assert z.device == "PYTHON" and z.tolist() == [1.0]


def test_training_switches():
    assert not Tensor.training
    with Tensor.train():
        assert Tensor.training
        with Tensor.train(False):
            assert not Tensor.training
        with Tensor.test():
            assert not Tensor.training and Tensor.no_grad
        assert not Tensor.no_grad
    assert not Tensor.training
    with Context(TRAINING=1):
        assert Tensor.training

    @Tensor.train()
    def step():
        return Tensor.training
    assert step() and not Tensor.training


def test_no_grad_detaches_what_it_builds():
    x = Tensor([1.0, 2.0], requires_grad=True)
    Tensor.no_grad = True
    try:
        frozen = x * 3
    finally:
        Tensor.no_grad = False
    (frozen * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 6.0])  # only through the second x


def test_backward_accumulates_and_grad_can_be_cleared():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    (x * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 6.0, 8.0])
    x.grad = None
    x.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 1.0])


def test_backward_with_explicit_gradient_and_errors():
    x = Tensor([[1.0, 2.0]], requires_grad=True)
    (x * 3).backward(Tensor([[1.0, -1.0]]))
    np.testing.assert_array_equal(x.grad.numpy(), [[3.0, -3.0]])
    with pytest.raises(ValueError, match="one element"):
        (x * 3).backward()
    with pytest.raises(ValueError, match="gradient shape"):
        (x * 3).backward(Tensor([1.0]))
    with pytest.raises(TypeError, match="float"):
        Tensor([1, 2]).sum().backward()


def test_gradient_returns_tensors_and_zeros_for_unused_targets():
    x, y, unused = Tensor([2.0]), Tensor([5.0]), Tensor([1.0, 1.0])
    dx, dy, du = (x * y + x.exp()).sum().gradient(x, y, unused)
    np.testing.assert_allclose(dx.numpy(), 5 + np.exp(2.0), rtol=1e-6)
    np.testing.assert_array_equal(dy.numpy(), [2.0])
    np.testing.assert_array_equal(du.numpy(), [0.0, 0.0])


def test_detach_and_requires_grad_flags():
    x = Tensor([1.0, 2.0], requires_grad=True)
    (x.detach() * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0])
    frozen = Tensor([1.0], requires_grad=False)
    (frozen * x[:1]).sum().backward()
    assert frozen.grad is None
    assert Tensor([1.0]).requires_grad_().requires_grad is True


@pytest.mark.parametrize("make", [lambda t: t.detach(), lambda t: t.requires_grad_(False)])
def test_backward_of_a_tensor_that_needs_no_grad_raises_as_pytorch(make):
    with pytest.raises(RuntimeError):   # PyTorch, the reference
        make(torch.ones(1, requires_grad=True).detach()).backward()
    x = Tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="does not require grad"):
        make(x.detach()).backward()
    assert x.grad is None


def test_lazy_and_constant_leaves_get_gradients():
    weight = Tensor.rand(2, 3, requires_grad=True)  # a lazy value, reshaped below
    bias = Tensor.zeros(3, requires_grad=True)      # a constant
    (weight.reshape(6).sum() + (bias * 2).sum()).backward()
    np.testing.assert_array_equal(weight.grad.numpy(), np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(bias.grad.numpy(), [2.0, 2.0, 2.0])
    later = Tensor.ones(2)
    later.requires_grad = True  # as an optimizer does
    later.reshape(1, 2).sum().backward()
    np.testing.assert_array_equal(later.grad.numpy(), [1.0, 1.0])


def test_integer_tensors_get_no_gradient():
    x, index = Tensor([1.0, 2.0, 3.0], requires_grad=True), Tensor([2, 0])
    x[index].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 1.0])
    assert index.grad is None


def test_backward_after_reading_the_loss():
    x = Tensor([1.0, -2.0], requires_grad=True)
    loss = (x * x).sum()
    assert loss.item() == 5.0  # realizes the loss, as printing it in a training loop does
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, -4.0])
    np.testing.assert_array_equal(loss.gradient(x)[0].numpy(), [2.0, -4.0])
