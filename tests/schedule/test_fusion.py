"""Kernel counts of the scheduler (REFERENCE.md's table), the decisions it records, and fused vs
unfused schedules computing the same numbers."""
import numpy as np
import pytest

from tinylab import Context, Tensor
from tinylab.engine.realize import REALIZED
from tinylab.schedule.fusion import Reason, SchedulerOptions
from tinylab.schedule.schedule import schedule

N = 16


def inputs(*shapes):
    rng = np.random.default_rng(0)
    return [Tensor(rng.standard_normal(s).astype(np.float32)).realize() for s in shapes]


def kernels(*outs, **options):
    return schedule([t.node for t in outs], SchedulerOptions(**options), realized=REALIZED)


CASES = {
    "elementwise chain": (lambda x, y: [((x + y) * 2).relu().exp()], 1),
    "mul then sum": (lambda x, y: [(x * y).sum(1)], 1),
    "sum then sqrt": (lambda x, y: [x.sum(1).sqrt()], 1),
    "matmul as sum": (lambda x, y: [(x.reshape(N, 1, N) * y.T.reshape(1, N, N)).sum(axis=2)], 1),
    "matmul + bias + relu": (lambda x, y: [(x @ y.T + 1).relu()], 1),
    "reduce broadcast back": (lambda x, y: [x - x.max(1, keepdim=True)], 2),
    "softmax": (lambda x, y: [x.softmax(1)], 3),
    "layernorm": (lambda x, y: [x.layernorm()], 3),
    "cheap producer recomputed": (lambda x, y: [(lambda t: t + t.T)((x + 1).exp())], 1),
    "matmul read transposed": (lambda x, y: [(lambda m: m + m.T)(x @ y)], 2),
    "two outputs share work": (lambda x, y: [(x + y).exp(), (x + y).log()], 2),
    "cumsum": (lambda x, y: [x.cumsum(1)], 1),
}


@pytest.mark.parametrize("name", list(CASES))
def test_kernel_counts(name):
    build, expected = CASES[name]
    x, y = inputs((N, N), (N, N))
    outs = build(x, y)
    assert len(kernels(*outs).kernels) == expected


def test_conv_and_pool_kernel_counts():
    # conv2d is one kernel plus a tiny copy of the weights in output-channel-last order (so the
    # conv's vector lanes load weights contiguously); tinygrad makes one kernel
    x, w = inputs((2, 3, 8, 8), (4, 3, 3, 3))
    sched = kernels(x.conv2d(w, padding=1))
    assert len(sched.kernels) == 2
    assert [d.reason for d in sched.decisions if not d.merged].count(Reason.CONTIGUOUS) == 1
    assert len(kernels(x.max_pool2d(2)).kernels) == 1


def test_relu_read_by_a_conv_gets_a_buffer():
    """relu(x + b) read through a conv's sliding windows is needed ~ cout*k*k times per value:
    a few ops each, but recomputed that often they cost more than one pass to a buffer."""
    x, b, w = inputs((2, 8, 12, 12), (8, 1, 1), (64, 8, 5, 5))
    sched = kernels((x + b).relu().conv2d(w))
    cut = [d for d in sched.decisions if d.reason is Reason.EXPENSIVE_RECOMPUTE]
    assert len(cut) == 1 and "ops per value" in cut[0].evidence["detail"]
    assert len(sched.kernels) == 3  # relu, weights copy, conv
    tiny = kernels((x + b).relu().sum((2, 3)))  # read once per value: still fused
    assert len(tiny.kernels) == 1


def test_non_overlapping_windows_are_a_reshape():
    """Windows with stride >= kernel need no expand: their gradient is a reshape back, so a
    max-pool's backward has no reduce over repeated windows."""
    (x,) = inputs((2, 3, 8, 8))
    ops = {n.op.name for n in x._pool((2, 2), 2).node.toposort()}
    assert "EXPAND" not in ops
    overlapping = {n.op.name for n in x._pool((3, 3), 1).node.toposort()}
    assert "EXPAND" in overlapping
    xg = Tensor(np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32),
                requires_grad=True)
    xg.max_pool2d(2).sum().backward()
    grad_kernels = [k for k in kernels(xg.grad).kernels if k.output.shape == (2, 3, 8, 8)]
    assert grad_kernels and all(k.ast.src[0].src[0].op.name != "REDUCE_SUM"
                                for k in grad_kernels)


def test_decisions_say_why():
    (x,) = inputs((N, N))
    sched = kernels(x - x.max(1, keepdim=True))
    cuts = [d for d in sched.decisions if not d.merged]
    reasons = {d.reason for d in cuts}
    assert Reason.BROADCAST_REDUCE in reasons and Reason.REQUESTED in reasons
    text = str(sched)
    assert "broadcast_reduce" in text and "expanded" in text
    merged = [d for d in sched.decisions if d.merged]
    assert merged and all(d.evidence["rule"] == d.reason.value for d in sched.decisions)


def test_fuse_false_is_one_kernel_per_op():
    x, y = inputs((N, N), (N, N))
    out = ((x + y) * 2).relu().exp()
    fused, unfused = kernels(out), kernels(out, fuse=False)
    assert len(fused.kernels) == 1 and len(unfused.kernels) >= 5
    assert all(d.reason is Reason.FUSION_OFF for d in unfused.decisions if not d.merged
               and d.consumer is not None)


def test_counterfactual_rules():
    x, y = inputs((N, N), (N, N))
    out = (x @ y.T + 1).relu()
    assert len(kernels(out, fuse_after_reduce=False).kernels) == 2
    assert len(kernels(out, fuse_into_reduce=False).kernels) == 2  # the product gets a buffer
    assert len(kernels(((x + 1) * y).sum(1), fuse_into_reduce=False).kernels) == 2


@pytest.mark.parametrize("name", list(CASES))
def test_fused_equals_unfused(name, device):
    build, _ = CASES[name]
    x, y = inputs((N, N), (N, N))
    fused = [t.numpy() for t in build(x, y)]
    with Context(FUSE=0):
        unfused = [t.numpy() for t in build(x, y)]
    for a, b in zip(fused, unfused):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_folded_reduce_rewrite_matches():
    # a sum over window copies of a channel sum (a conv's input gradient) folds into fewer
    # kernels and computes the same numbers
    x, w = inputs((2, 3, 8, 8), (4, 3, 3, 3))
    gx = (x.conv2d(w) * x.conv2d(w)).sum().gradient(x)[0]
    node = gx.node
    plain = kernels(gx, fold_reduces=False)
    folded = kernels(gx, fold_reduces=True)
    assert any(d.reason is Reason.FOLDED_REDUCE for d in folded.decisions)
    assert len(folded.kernels) < len(plain.kernels)
    from tinylab.engine.realize import run_schedule
    buffers = run_schedule(folded)
    got = buffers[id(folded.outputs[node])].numpy().reshape(gx.shape)
    np.testing.assert_allclose(got, gx.numpy(), rtol=1e-4, atol=1e-4)
