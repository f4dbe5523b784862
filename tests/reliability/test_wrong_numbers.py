"""Silent wrong numbers (issue 15): one regression test per bug, named for the behaviour, each
against numpy or PyTorch (values and gradients), at the special points where it was wrong:
indexing into padding, stacked views, eye, prod, realize and autograd, assigns that read their
target elsewhere, NaN comparisons, pow, clip, large-magnitude activations, cross_entropy,
cumulative ops."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from tinylab import Context, Tensor
from tinylab.engine.realize import REALIZED
from tinylab.schedule.fusion import Reason
from tinylab.schedule.schedule import schedule

F32 = np.float32


def same_numbers(ours: np.ndarray, theirs: np.ndarray, what: str, rtol=1e-5, atol=1e-6):
    """Equal values, NaN where the reference has NaN, infinities of the same sign."""
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} != {theirs.shape}"
    np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=rtol,
                               atol=atol, equal_nan=True, err_msg=what)


def against_torch(ours_fn, torch_fn, *arrays, what: str, rtol=1e-5, atol=1e-6):
    """Forward value and the gradient of sum(out * w) for every float input, against torch."""
    ours_in = [Tensor(a.copy(), requires_grad=a.dtype.kind == "f") for a in arrays]
    theirs_in = [torch.tensor(a.copy(), requires_grad=a.dtype.kind == "f") for a in arrays]
    ours, theirs = ours_fn(*ours_in), torch_fn(*theirs_in)
    same_numbers(ours.numpy(), theirs.detach().numpy(), f"{what}: value", rtol, atol)
    if not theirs.requires_grad:
        return
    weight = np.random.default_rng(0).uniform(0.5, 1.5, theirs.shape).astype(F32)
    (ours * Tensor(weight)).sum().backward()
    (theirs * torch.tensor(weight)).sum().backward()
    for k, (o, t) in enumerate(zip(ours_in, theirs_in)):
        if t.grad is None:
            continue
        got = o.grad.numpy() if o.grad is not None else np.zeros(t.shape, F32)
        same_numbers(got, t.grad.numpy(), f"{what}: gradient of input {k}", rtol, atol)


# ---- views -------------------------------------------------------------------------------------
def test_index_inside_padding_reads_pad_value(device):
    """The shrink landed wholly in the padding, the reshape to 0-d dropped its empty mask, and the
    kernel read data1[0]."""
    assert Tensor(np.array([0.5], F32)).pad(((1, 0),))[0].numpy() == 0
    assert Tensor(np.array([0.5], F32)).pad(((0, 2),))[-1].numpy() == 0
    x = Tensor(np.arange(1, 7, dtype=F32).reshape(2, 3)).pad(((1, 1), (2, 0)))
    np.testing.assert_array_equal([x[0, 0].numpy(), x[1, 2].numpy(), x[3, 4].numpy()], [0, 1, 0])


def test_indexing_a_stack_reads_the_piece_it_names(device):
    x = Tensor(np.array([1, 2, 3, 4], F32))
    stacked = Tensor.stack(x, x * 10, x * 100)
    assert stacked[0, 0].numpy() == 1 and stacked[2, 3].numpy() == 400
    assert Tensor.cat(x, x + 10)[5].numpy() == 12


# ---- creation and reductions -------------------------------------------------------------------
def test_eye_with_more_rows_than_columns_is_zero_below_the_square():
    """Rows of m + 1 read back as m columns put 1s at [m + 1, 0], [m + 2, 1]... when n > m."""
    for n in range(7):
        for m in range(7):
            np.testing.assert_array_equal(Tensor.eye(n, m).numpy(), np.eye(n, m, dtype=F32),
                                          err_msg=f"eye({n}, {m})")


def test_tril_triu_eye_arange_on_non_square_and_offset_arguments():
    a = np.random.default_rng(0).standard_normal((3, 5)).astype(F32)
    for x in (a, np.ascontiguousarray(a.T)):  # wide and tall
        for k in (-6, -2, -1, 0, 1, 2, 6):
            against_torch(lambda t: t.tril(k), lambda t: t.tril(k), x, what=f"tril {k}")
            against_torch(lambda t: t.triu(k), lambda t: t.triu(k), x, what=f"triu {k}")
    for args in ((5,), (0,), (2, 9, 3), (9, 2, -3), (0, 1, 0.1), (1, 0, -0.25), (-3, 3)):
        same_numbers(Tensor.arange(*args).numpy(), torch.arange(*args).numpy(), f"arange{args}")


def test_prod_gradient_at_a_zero_factor_is_the_product_of_the_others():
    """prod was sign * exp(sum log|x|) with zeros patched in: the patch had no gradient."""
    for data in ([0, 2, 3], [0, 0, 3], [1, -2, 3, 0.5, 4], [2] * 11, [[1, 0], [3, 4]]):
        x = np.array(data, F32)
        against_torch(lambda t: t.prod(), lambda t: t.prod(), x, what=f"prod {data}")
        against_torch(lambda t: t.prod(0), lambda t: t.prod(0), x, what=f"prod(0) {data}")
    x = np.random.default_rng(1).standard_normal((3, 4, 5)).astype(F32)
    against_torch(lambda t: t.prod((0, 2), keepdim=True),
                  lambda t: t.prod(2, keepdim=True).prod(0, keepdim=True), x,
                  what="prod over two axes", rtol=1e-4)


def test_integer_prod_and_cumprod_are_exact():
    """exp(sum log) in float32 gave 479000864 for 12! (479001600)."""
    x = np.arange(1, 13, dtype=np.int32)
    assert Tensor(x).prod().item() == 479001600
    assert Tensor([3] * 15).prod().item() == 3 ** 15
    np.testing.assert_array_equal(Tensor(x).cumprod(0).numpy(), np.cumprod(x))
    np.testing.assert_array_equal(Tensor(np.zeros((2, 0), F32)).prod(1).numpy(), [1, 1])


def test_cumprod_gradient_at_zeros_matches_torch():
    for data in ([0, 2, 3, 4], [1, 0, 0, 3], [2, -1, 3, 0.5, 1.5, 2, 1, 0.5, 3, 2, 0, 4]):
        x = np.array(data, F32)
        against_torch(lambda t: t.cumprod(0), lambda t: t.cumprod(0), x, what=f"cumprod {data}")


# ---- realize and autograd ----------------------------------------------------------------------
REALIZERS = {
    "numpy": lambda t: t.numpy(), "item": lambda t: t.sum().item(), "tolist": lambda t: t.tolist(),
    "realize": lambda t: t.realize(), "realize_many": lambda t: Tensor.realize(t, t * 3),
}


@pytest.mark.parametrize("realizer", list(REALIZERS))
def test_realizing_an_intermediate_keeps_it_in_autograd(realizer):
    """A realized tensor's node became a plain buffer: printing an activation trained nothing."""
    x = Tensor(np.array([1, 2, 3], F32), requires_grad=True)
    w = Tensor(np.array([0.5, -1, 2], F32))
    y = x * 2
    REALIZERS[realizer](y)
    hidden = (y * w).relu()
    REALIZERS[realizer](hidden)
    (hidden * y).sum().backward()
    tx = torch.tensor([1, 2, 3.0], requires_grad=True)
    ty = tx * 2
    ((ty * torch.tensor([0.5, -1, 2])).relu() * ty).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_tracing_and_a_realized_loss_keep_the_graph():
    from tinylab import trace
    x = Tensor(np.array([1, -2, 3], F32), requires_grad=True)
    with trace():
        loss = (x * x).sum()
        loss.item()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, -4, 6])


def test_realize_under_no_grad_or_detach_keeps_no_graph():
    x = Tensor(np.array([1.0, 2.0], F32), requires_grad=True)
    Tensor.no_grad = True
    try:
        frozen = (x * 2).realize()
    finally:
        Tensor.no_grad = False
    detached = (x * 3).detach().realize()
    (frozen * detached).sum().backward()
    assert x.grad is None


def test_a_realized_tensor_frees_its_graph_when_it_dies():
    import gc
    import weakref
    x = Tensor(np.array([1.0, 2.0], F32), requires_grad=True)
    y = x * 2 + 1
    lazy = weakref.ref(y.node)
    y.realize()
    assert lazy() is not None  # kept for autograd while y lives
    del y
    gc.collect()
    assert lazy() is None


# ---- assign ------------------------------------------------------------------------------------
ASSIGNS = {
    "flip": (lambda x: x.flip(0), lambda a: a[::-1]),
    "shift": (lambda x: x.pad(((1, 0),)).shrink(((0, 64),)), lambda a: np.r_[0, a[:-1]]),
    "permute": (lambda x: x.reshape(8, 8).permute(1, 0).reshape(64), lambda a: a.reshape(8, 8).T),
    "sum_of_flip": (lambda x: x * 2 + x.flip(0), lambda a: a * 2 + a[::-1]),
    "in_place": (lambda x: x * 2 + 1, lambda a: a * 2 + 1),
}


@pytest.mark.parametrize("fuse", [1, 0])
@pytest.mark.parametrize("name", list(ASSIGNS))
def test_assign_reading_its_target_elsewhere_gets_a_copy_first(device, name, fuse):
    """x.assign(x.flip(0)) wrote x[0] before reading it back as x[7]: [7 6 5 4 4 5 6 7]."""
    ours, reference = ASSIGNS[name]
    start = np.arange(64, dtype=F32)
    with Context(FUSE=fuse):
        x = Tensor(start.copy())
        x.assign(ours(x))
        np.testing.assert_array_equal(x.numpy(), np.ravel(reference(start)))


def test_assign_hazard_is_a_recorded_cut():
    x = Tensor(np.arange(8, dtype=F32)).realize()
    x.assign(x.flip(0))
    sched = schedule([x.node], realized=REALIZED)
    cuts = [d for d in sched.decisions if d.reason is Reason.ASSIGN_HAZARD]
    assert len(sched.kernels) == 2 and len(cuts) == 1 and not cuts[0].merged
    assert "strides=(-1,)" in cuts[0].evidence["detail"]
    y = Tensor(np.arange(8, dtype=F32)).realize()
    y.assign(y * 2 + 1)
    assert len(schedule([y.node], realized=REALIZED).kernels) == 1  # no hazard: no copy


def test_a_lazy_value_keeps_the_value_it_had_before_an_assign(device):
    """y = w * 2 read w's buffer when realized, after w.assign(...) had overwritten it."""
    w = Tensor(np.array([1, 2, 3], F32)).realize()
    y = w * 2
    w.assign(w + 10).realize()
    np.testing.assert_array_equal(y.numpy(), [2, 4, 6])
    np.testing.assert_array_equal(w.numpy(), [11, 12, 13])


def test_grad_after_an_optimizer_step_is_the_gradient_at_the_old_weights():
    """loss.backward(); opt.step(); w.grad read the gradient at the updated weights."""
    from tinylab.nn import optim
    w = Tensor(np.array([1, 2, 3], F32), requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.grad.numpy(), [2, 4, 6])
    np.testing.assert_allclose(w.numpy(), [0.8, 1.6, 2.4], rtol=1e-6)


def test_grad_after_a_jitted_step_is_the_gradient_at_that_steps_old_weights():
    """Under TinyJit the step's gradients are realized with it, so each replay's w.grad is that
    replay's gradient at the weights before its update (torch as the reference)."""
    from tinylab import TinyJit
    from tinylab.nn import optim
    w = Tensor(np.array([1, 2, 3], F32), requires_grad=True)
    t_w = torch.tensor([1.0, 2, 3], requires_grad=True)
    opt, t_opt = optim.SGD([w], lr=0.1, momentum=0.9), torch.optim.SGD([t_w], lr=0.1, momentum=0.9)

    @TinyJit
    def step(x):
        opt.zero_grad()
        loss = (w * w * x).sum().backward()
        opt.step()
        return loss
    for i in range(4):  # plain call, capture, two replays
        x = np.array([1, -2, 3], F32) * (i + 1)
        step(Tensor(x)).item()
        t_opt.zero_grad()
        (t_w * t_w * torch.tensor(x)).sum().backward()
        t_opt.step()
        np.testing.assert_allclose(w.grad.numpy(), t_w.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(w.numpy(), t_w.detach().numpy(), rtol=1e-6)


def test_an_unrealized_activation_keeps_its_value_over_many_steps():
    """A lazy value read after two optimizer steps reads the weights it was written with."""
    from tinylab.nn import optim
    w = Tensor(np.array([1, 2, 3], F32), requires_grad=True)
    opt = optim.SGD([w], lr=0.5)
    first = w * 3
    for _ in range(2):
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
    np.testing.assert_allclose(first.numpy(), [3, 6, 9])
    np.testing.assert_allclose(w.numpy(), [0, 0, 0], atol=1e-7)


def test_assigns_that_read_each_other_swap_values(device):
    """Each assign's kernel read the other's target: 'cyclic dependency' ScheduleError."""
    a, b = Tensor(np.arange(4, dtype=F32)).realize(), Tensor(np.arange(4, dtype=F32) * 10).realize()
    new_a, new_b = b.flip(0) + 0.5, a + 0.25  # both from the old values
    a.assign(new_a)
    b.assign(new_b)
    Tensor.realize(a, b)
    np.testing.assert_array_equal(a.numpy(), [30.5, 20.5, 10.5, 0.5])
    np.testing.assert_array_equal(b.numpy(), [0.25, 1.25, 2.25, 3.25])


def test_batchnorm_training_step_matches_torch():
    """conv -> BatchNorm -> relu -> linear with SGD: the step crashed (the BatchNorm weight and
    bias updates each read the other's old value), and the running mean came from the updated
    conv weights (realized after the step overwrote them)."""
    from tinylab import nn
    from tinylab.nn import optim
    Tensor.manual_seed(0)
    conv, norm, linear = nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.Linear(4 * 6 * 6, 3)
    t_conv, t_norm, t_linear = torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), \
        torch.nn.Linear(4 * 36, 3)
    with torch.no_grad():
        for ours, theirs in ((conv, t_conv), (linear, t_linear)):
            theirs.weight.copy_(torch.tensor(ours.weight.numpy()))
            theirs.bias.copy_(torch.tensor(ours.bias.numpy()))
    params = [conv.weight, conv.bias, norm.weight, norm.bias, linear.weight, linear.bias]
    opt = optim.SGD(params, lr=0.1, momentum=0.9)
    t_opt = torch.optim.SGD([p for m in (t_conv, t_norm, t_linear) for p in m.parameters()],
                            lr=0.1, momentum=0.9)
    x = np.random.default_rng(0).standard_normal((5, 1, 8, 8)).astype(F32)
    y = np.array([0, 1, 2, 1, 0])
    for _ in range(2):
        with Tensor.train():
            opt.zero_grad()
            loss = linear(norm(conv(Tensor(x))).relu().flatten(1)) \
                .sparse_categorical_crossentropy(Tensor(y.astype(np.int32)))
            loss.backward()
            opt.step()
        t_opt.zero_grad()
        t_loss = F.cross_entropy(t_linear(torch.relu(t_norm(t_conv(torch.tensor(x)))).flatten(1)),
                                 torch.tensor(y))
        t_loss.backward()
        t_opt.step()
        np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=1e-5)
    np.testing.assert_allclose(norm.running_mean.numpy(), t_norm.running_mean.numpy(), atol=1e-6)
    np.testing.assert_allclose(norm.running_var.numpy(), t_norm.running_var.numpy(), rtol=1e-5)
    np.testing.assert_allclose(conv.weight.grad.numpy(), t_conv.weight.grad.numpy(), atol=1e-5)


def test_an_assign_realized_through_its_reader_runs_once(device):
    """total.assign(total + x); (total * 2).numpy() ran the assign, then total.numpy() ran it
    again (total was still the lazy assign): an accumulator counted each step twice."""
    total = Tensor.zeros(4).contiguous().realize()
    x = Tensor(np.ones(4, F32)).realize()
    for step in (1, 2, 3):
        total.assign(total + x)
        np.testing.assert_array_equal((total * 2).numpy(), [2 * step] * 4)
        np.testing.assert_array_equal(total.numpy(), [step] * 4)


# ---- comparisons, pow, clip --------------------------------------------------------------------
@pytest.mark.ieee_special  # WGSL lets the compiler assume no NaN
def test_comparisons_with_nan_are_false(device):
    """a <= b was not (a > b): True for NaN."""
    a = np.array([math.nan, 1, 0, -1, math.inf], F32)
    for op in ("__le__", "__ge__", "__lt__", "__gt__", "__eq__", "__ne__"):
        ours = getattr(Tensor(a), op)(0.0).numpy()
        np.testing.assert_array_equal(ours, getattr(torch.tensor(a), op)(0.0).numpy(), err_msg=op)
        flipped = getattr(Tensor(np.zeros(5, F32)), op)(Tensor(a)).numpy()
        np.testing.assert_array_equal(flipped, getattr(torch.zeros(5), op)(torch.tensor(a)).numpy())


POW_BASES = np.array([0, -0.0, 2, -2, 0.5, 1, -1, math.inf, -math.inf, math.nan], F32)
POW_EXPONENTS = [0, 1, 2, 3, -1, -2, 0.5, -0.5, 2.5, -1.5, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("exponent", POW_EXPONENTS)
def test_pow_at_zero_inf_and_nan_bases_matches_torch(exponent):
    """Values (signed zeros included) and both gradients: d base was 0 at a zero base for x**1,
    NaN for exponents -1, -2 and 0.5; d exponent was NaN at a zero base."""
    def signs(x):
        return np.signbit(x) & ~np.isnan(x)
    ours = Tensor(POW_BASES.copy()) ** exponent
    theirs = torch.tensor(POW_BASES.copy()) ** exponent
    np.testing.assert_array_equal(signs(ours.numpy()), signs(theirs.numpy()), err_msg="signs")
    exps = np.full(POW_BASES.shape, exponent, F32)
    against_torch(lambda b: b ** exponent, lambda b: b ** exponent, POW_BASES,
                  what=f"x ** {exponent}")
    against_torch(lambda b, e: b ** e, lambda b, e: b ** e, POW_BASES, exps,
                  what=f"x ** tensor({exponent})")
    against_torch(lambda e: 2.0 ** e, lambda e: 2.0 ** e, exps, what=f"2 ** tensor({exponent})")
    against_torch(lambda e: 0.0 ** e, lambda e: 0.0 ** e, exps, what=f"0 ** tensor({exponent})")


def test_integer_pow_is_exact_and_wraps_like_torch():
    """It went through float32 exp2/log2: 3 ** 19 gave 1162260608."""
    a = np.array([3, 2, 7, -3, 5, 10, 1, -1, 0, -1, 2], np.int32)
    b = np.array([19, 30, 11, 7, 13, 9, -5, -3, 0, -4, -1], np.int32)
    expected = (torch.tensor(a) ** torch.tensor(b)).numpy()
    np.testing.assert_array_equal((Tensor(a) ** Tensor(b)).numpy(), expected)
    np.testing.assert_array_equal((Tensor(a) ** 17).numpy(), (torch.tensor(a) ** 17).numpy())
    with pytest.raises(ValueError, match="negative integer powers"):
        Tensor(a) ** -2


def test_clip_gradient_at_its_bounds_follows_torch():
    """clip was max/min, whose ties split the gradient in half; clamp passes all of it to x."""
    x = np.array([-1, -0.5, 0, 0.7, 1, 0.3, math.nan], F32)
    lo, hi = np.full(7, -0.5, F32), np.full(7, 0.7, F32)
    against_torch(lambda t: t.clip(-0.5, 0.7), lambda t: t.clip(-0.5, 0.7), x, what="clip")
    against_torch(lambda t: t.clamp(min_=-0.5), lambda t: t.clamp(min=-0.5), x, what="min")
    against_torch(lambda t: t.clamp(max_=0.7), lambda t: t.clamp(max=0.7), x, what="max")
    against_torch(lambda t, a, b: t.clip(a, b), lambda t, a, b: t.clip(a, b), x, lo, hi,
                  what="tensor bounds")
    against_torch(lambda t, a, b: t.clip(a, b), lambda t, a, b: t.clip(a, b), x, hi, lo,
                  what="min above max")
    np.testing.assert_array_equal(Tensor([1, 5, 9]).clip(2, 6).numpy(), [2, 5, 6])


KINKS = np.array([-4, -3, -1, -0.5, 0, 0.5, 1, 3, 4, 6, 7], F32)
HARD = {
    "relu6": (lambda t: t.relu6(), F.relu6),
    "hardtanh": (lambda t: t.hardtanh(), F.hardtanh),
    "hardtanh_wide": (lambda t: t.hardtanh(-3, 4), lambda t: F.hardtanh(t, -3, 4)),
    "hardsigmoid": (lambda t: t.hardsigmoid(), F.hardsigmoid),
    "hardswish": (lambda t: t.hardswish(), F.hardswish),
}


@pytest.mark.parametrize("name", list(HARD))
def test_hard_activations_have_torchs_gradient_at_their_kinks(name):
    """relu6 was relu().minimum(6): the tie at 6 gave half a gradient (hardswish 1.25 at 3);
    hardtanh was clip, which keeps the gradient at the bounds; PyTorch drops it there."""
    ours, theirs = HARD[name]
    against_torch(ours, theirs, KINKS, what=name)


# ---- large magnitudes --------------------------------------------------------------------------
LARGE = np.array([-1e4, -100, -88, -20, -1, 0, 1, 20, 88, 100, 1e4], F32)
ACTIVATIONS = {
    "sigmoid": (lambda t: t.sigmoid(), torch.sigmoid),
    "quick_gelu": (lambda t: t.quick_gelu(), lambda t: t * torch.sigmoid(1.702 * t)),
    "silu": (lambda t: t.silu(), F.silu),
    "softplus": (lambda t: t.softplus(), F.softplus),
    "logsigmoid": (lambda t: t.logsigmoid(), F.logsigmoid),
    "tanh": (lambda t: t.tanh(), torch.tanh),
    "elu": (lambda t: t.elu(), F.elu),
    "selu": (lambda t: t.selu(), F.selu),
    "celu": (lambda t: t.celu(0.5), lambda t: F.celu(t, 0.5)),
    "mish": (lambda t: t.mish(), F.mish),
    "gelu": (lambda t: t.gelu(), lambda t: F.gelu(t)),
    "gelu_tanh": (lambda t: t.gelu(approximate="tanh"), lambda t: F.gelu(t, approximate="tanh")),
    "log_softmax": (lambda t: t.log_softmax(-1), lambda t: F.log_softmax(t, -1)),
    "softmax": (lambda t: t.softmax(-1), lambda t: F.softmax(t, -1)),
    "sinh": (lambda t: t.sinh(), torch.sinh),
    "cosh": (lambda t: t.cosh(), torch.cosh),
    "bce_logits": (lambda t: t.binary_crossentropy_logits(t * 0 + 0.25, reduction="none"),
                   lambda t: F.binary_cross_entropy_with_logits(t, t.detach() * 0 + 0.25,
                                                                reduction="none")),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activations_at_large_magnitudes_have_torchs_values_and_gradients(name):
    """sigmoid's chain rule met 0 * inf = NaN at -1e4 (so did quick_gelu, silu); elu's unused
    branch exp(1e4) did the same through where; cosh gave NaN for -inf."""
    ours, theirs = ACTIVATIONS[name]
    against_torch(ours, theirs, LARGE, what=name, rtol=1e-4, atol=1e-6)


def test_binary_crossentropy_logits_gradient_at_zero_is_sigmoid_minus_target():
    x, y = np.array([0.0, 0.0, 2.0], F32), np.array([0.0, 1.0, 0.5], F32)
    against_torch(lambda a, b: a.binary_crossentropy_logits(b),
                  lambda a, b: F.binary_cross_entropy_with_logits(a, b), x, y, what="bce")


def test_std_of_a_constant_has_zero_gradient_as_in_torch():
    """sqrt's rule met 0 * inf: a constant row's std gave NaN gradients."""
    x = np.ones((3, 4), F32)
    x[1] = [1, 2, 3, 5]
    against_torch(lambda t: t.std(1), lambda t: t.std(1), x, what="std rows")
    against_torch(lambda t: t.std(), lambda t: t.std(), np.full(5, 2.5, F32), what="std all")


# ---- losses and cumulative ops -----------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_classes_are_dim_1_as_in_torch(reduction):
    """With (N, C, d) logits the class dim was the last one."""
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((2, 5, 3, 2)).astype(F32)
    probs = rng.random((2, 5, 3, 2)).astype(F32)
    probs /= probs.sum(1, keepdims=True)
    labels = rng.integers(0, 5, (2, 3, 2))
    against_torch(lambda a, p: a.cross_entropy(p, reduction=reduction, label_smoothing=0.1),
                  lambda a, p: F.cross_entropy(a, p, reduction=reduction, label_smoothing=0.1),
                  logits, probs, what="probabilities")
    against_torch(lambda a: a.cross_entropy(Tensor(labels.astype(np.int32)), reduction=reduction),
                  lambda a: F.cross_entropy(a, torch.tensor(labels), reduction=reduction),
                  logits, what="labels")
    against_torch(lambda a, p: a.cross_entropy(p), lambda a, p: F.cross_entropy(a, p),
                  logits[:, :, 0, 0].copy(), probs[:, :, 0, 0].copy(), what="2-d")


def test_cumulative_ops_on_0d_and_empty_inputs():
    for name in ("cumsum", "cumprod", "cummax", "cummin"):
        for array in (np.array(3, F32), np.zeros(0, F32), np.zeros((2, 0), F32)):
            theirs = getattr(torch, name)(torch.tensor(array), 0)
            theirs = theirs.values if name in ("cummax", "cummin") else theirs
            ours = getattr(Tensor(array), name)(0)
            ours = ours[0] if name in ("cummax", "cummin") else ours
            np.testing.assert_array_equal(ours.numpy(),
                                          theirs.numpy(), err_msg=f"{name} {array.shape}")


@pytest.mark.parametrize("length", [5, 300])
def test_cummax_cummin_gradient_goes_to_the_last_tie_as_in_torch(length):
    """Window maxima shared the gradient among ties; PyTorch gives it to the index it returns,
    the last maximum (300 runs the two-level scan)."""
    x = np.random.default_rng(length).integers(0, 4, (2, length)).astype(F32)
    x[0, length // 2] = math.nan
    for name in ("cummax", "cummin"):
        for dim in (1, 0):
            against_torch(lambda t: getattr(t, name)(dim)[0],
                          lambda t: getattr(torch, name)(t, dim).values, x, what=name)


def test_a_sum_read_backwards_with_a_stride_matches_numpy(device):
    """gcc 12.2's loop vectorizer summed arange(12).flip((0, 1)) as 90, not 66, at -O2 (the
    CPU runtime turns it off; kernels spell their own vectors). Found by the write fuzzer."""
    start = np.arange(12, dtype=F32).reshape(3, 4)
    x = Tensor(start.copy()).realize()
    np.testing.assert_array_equal(x.flip((0, 1)).sum().numpy(), start.sum())
    np.testing.assert_array_equal(x[::-1, ::-2].sum(1).numpy(), start[::-1, ::-2].sum(1))
