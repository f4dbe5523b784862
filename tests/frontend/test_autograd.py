"""Autograd: the gradient of every differentiable primitive against central differences (float64),
and composite ops against PyTorch."""
import numpy as np
import pytest
import torch

from tinylab import Tensor, dtypes
from tinylab.ir import node as ir
from tinylab.ir.ops import Op

from dtype_support import lacks, refuses

RNG = np.random.default_rng(1)


def numeric_gradient(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up) - f(down)) / (2 * eps)
    return grad


def check_gradient(build, *inputs, tol=1e-5):
    """build(*node inputs) -> node; compare d sum(out * w) / d input with central differences."""
    weights = None

    def value(*arrays):
        nonlocal weights
        out = Tensor(build(*[Tensor(a).node for a in arrays]))
        if weights is None:
            weights = RNG.standard_normal(out.shape)
        return float((out.numpy() * weights).sum())

    value(*inputs)
    tensors = [Tensor(a) for a in inputs]
    out = Tensor(build(*[t.node for t in tensors]))
    loss = (out * Tensor(weights)).sum()
    grads = loss.gradient(*tensors)
    for k, (a, g) in enumerate(zip(inputs, grads)):
        def f(x, k=k):
            args = list(inputs)
            args[k] = x
            return value(*args)
        np.testing.assert_allclose(g.numpy(), numeric_gradient(f, a), rtol=tol, atol=tol)


X = RNG.standard_normal((3, 4))
P = RNG.random((3, 4)) + 0.5

UNARY = [Op.EXP2, Op.SIN, Op.NEG]


@pytest.mark.parametrize("op", [Op.EXP2, Op.SIN, Op.NEG, Op.SQRT, Op.LOG2, Op.RECIPROCAL])
def test_unary_gradients(device, op):
    data = P if op in (Op.SQRT, Op.LOG2, Op.RECIPROCAL) else X
    with refuses(device, "float64"):  # central differences need float64
        check_gradient(lambda a: ir.alu(op, a), data)


@pytest.mark.parametrize("op", [Op.ADD, Op.MUL, Op.MAX])
def test_binary_gradients(device, op):
    with refuses(device, "float64"):
        check_gradient(lambda a, b: ir.alu(op, a, b), X, RNG.standard_normal((3, 4)))


def test_where_cast_reduce_movement_gradients(device):
    cond = RNG.random((3, 4)) < 0.5
    with refuses(device, "float64"):
        check_gradient(lambda a: a.sum((1,)), X)
    if lacks(device, "float64"):
        return
    check_gradient(lambda a, b: ir.alu(Op.WHERE, Tensor(cond).node, a, b), X, P)
    check_gradient(lambda a: a.sum((1,)), X)
    check_gradient(lambda a: a.max((0,)), X)
    check_gradient(lambda a: a.reshape((4, 3)).permute((1, 0)).pad(((1, 0), (0, 2))), X)
    check_gradient(lambda a: a.shrink(((1, 3), (0, 2))).flip((0,)), X)
    check_gradient(lambda a: a.reshape((3, 1, 4)).expand((3, 5, 4)), X)



def test_cast_gradient_passes_through(device):
    x = Tensor(X)
    w = RNG.standard_normal(X.shape)
    with refuses(device, "float64"):
        (Tensor(ir.cast(ir.cast(x.node, dtypes.float32), dtypes.float64)) * Tensor(w)).sum() \
            .backward()
        x.grad.numpy()
    if lacks(device, "float64"):
        return
    np.testing.assert_allclose(x.grad.numpy(), w.astype(np.float32), rtol=1e-6)


def _torch_grads(fn, *arrays):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    fn(*ts).sum().backward()
    return [t.grad.numpy() for t in ts]


@pytest.mark.parametrize("name,fn", [
    ("matmul", lambda a, b: a @ b.T),
    ("softmax", lambda a, b: a.softmax(1) * b),
    ("log_softmax", lambda a, b: a.log_softmax(1) * b),
    ("sigmoid_tanh", lambda a, b: a.sigmoid() * b.tanh()),
    ("relu_exp", lambda a, b: (a.relu() + b).exp()),
    ("mean_var", lambda a, b: (a - a.mean(1, keepdim=True)) * b.var(1, keepdim=True)),
])
def test_composites_against_torch(device, name, fn):
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal((3, 4)).astype(np.float32)
    ta, tb = Tensor(a), Tensor(b)
    fn(ta, tb).sum().backward()
    expected = _torch_grads(fn, a, b)
    np.testing.assert_allclose(ta.grad.numpy(), expected[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(tb.grad.numpy(), expected[1], rtol=1e-4, atol=1e-5)


def test_seed_example(device):
    x = Tensor.eye(3).clone()
    y = Tensor([[2.0, 0, -2.0]])
    y.matmul(x).sum().backward()
    assert x.grad.tolist() == [[2.0, 2.0, 2.0], [0.0, 0.0, 0.0], [-2.0, -2.0, -2.0]]
    assert y.grad.tolist() == [[1.0, 1.0, 1.0]]


def test_gradients_accumulate_and_clear(device):
    w = Tensor([1.0, 2.0], requires_grad=True)
    (w * 3).sum().backward()
    (w * 4).sum().backward()
    assert w.grad.tolist() == [7.0, 7.0]
    w.grad = None
    (w * w).sum().backward()
    assert w.grad.tolist() == [2.0, 4.0]


def test_detach_stops_gradient(device):
    w = Tensor([1.0, 2.0])
    (w * w.detach()).sum().backward()
    assert w.grad.tolist() == [1.0, 2.0]


# ---- the sliding-window composite rule (frontend/windows.py `_window_grad`) ----
def _torch_conv_grads(x, w, g, **kw):
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    (torch.nn.functional.conv2d(tx, tw, **kw) * torch.tensor(g)).sum().backward()
    return tx.grad.numpy(), tw.grad.numpy()


@pytest.mark.parametrize("kernel,padding,dilation", [((3, 3), 0, 1), ((5, 2), 1, 2), ((1, 3), 0, 1),
                                                     ((4, 4), 2, 1)])
def test_window_gradient_against_torch(device, kernel, padding, dilation):
    x = RNG.standard_normal((2, 3, 9, 8)).astype(np.float32)
    w = RNG.standard_normal((4, 3) + kernel).astype(np.float32)
    tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
    out = tx.conv2d(tw, padding=padding, dilation=dilation)
    g = RNG.standard_normal(out.shape).astype(np.float32)
    (out * Tensor(g)).sum().backward()
    dx, dw = _torch_conv_grads(x, w, g, padding=padding, dilation=dilation)
    np.testing.assert_allclose(tx.grad.numpy(), dx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tw.grad.numpy(), dw, rtol=1e-4, atol=1e-4)


def test_window_gradient_reaches_a_reshaped_source(device):
    """max_pool2d ends in a reshape and the window starts with one; the two fold into one node, so
    the window's chain never passes through the pooled tensor. Its gradient must still arrive."""
    x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    tx = Tensor(x, requires_grad=True)
    tx.max_pool2d().conv2d(Tensor(w)).sum().backward()
    ref = torch.tensor(x, requires_grad=True)
    torch.nn.functional.conv2d(torch.nn.functional.max_pool2d(ref, 2), torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), ref.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_window_gradient_adds_to_other_uses(device):
    """A windowed tensor used elsewhere too gets both gradients summed."""
    x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
    tx = Tensor(x, requires_grad=True)
    (tx.avg_pool2d(3, stride=1).sum() + (tx * tx).sum()).backward()
    ref = torch.tensor(x, requires_grad=True)
    (torch.nn.functional.avg_pool2d(ref, 3, stride=1).sum() + (ref * ref).sum()).backward()
    np.testing.assert_allclose(tx.grad.numpy(), ref.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_conv_input_gradient_is_one_transposed_window_kernel(device):
    """The input gradient of a 5x5 conv is a kernel reducing over 5x5 taps and the output
    channels, every index affine (no div/mod), like PyTorch's transposed convolution; chaining
    the primitives' rules gave 6x6 masked taps."""
    from tinylab.codegen.heuristic_costs import accesses
    from tinylab.codegen.plan import KernelPlan, view_index
    from tinylab.engine.realize import REALIZED
    from tinylab.ir import symbolic as sym
    from tinylab.schedule.schedule import schedule
    tx = Tensor(RNG.standard_normal((2, 3, 12, 12), dtype=np.float32), requires_grad=True)
    tw = Tensor(RNG.standard_normal((4, 3, 5, 5), dtype=np.float32)).realize()
    tg = Tensor(RNG.standard_normal((2, 4, 8, 8), dtype=np.float32)).realize()
    (tx.conv2d(tw) * tg).sum().backward()
    kernels = schedule([tx.grad.node], realized=REALIZED).kernels  # + a re-laid-out weight copy
    plan = max((KernelPlan.from_ast(k.ast) for k in kernels), key=lambda p: np.prod(p.shape))
    assert plan.shape == (2, 3, 12, 12, 5, 5, 4)
    for _, view, _ in accesses(plan):
        names = [sym.var(f"d{k}", 0, max(s - 1, 0)) for k, s in enumerate(view.shape)]
        text = str(view_index(view, names))
        assert "/" not in text and "%" not in text, text
