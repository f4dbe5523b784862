"""Operand relayout (schedule/relayout.py): a big reduce of a product whose output has no axis
contiguous for the vector lanes reads one operand from a copy with an output axis innermost. A
convolution's weight gradient is the case: checked against PyTorch with the copy made (for 16
and 8 lanes, whatever this CPU's own are), composed with padding, stride, dilation and a batch
norm before it; where it must not fire (forward convolution, an input gradient whose columns
fill its vectors, matmul, small kernels, devices that declare no lanes); the decision and the
what-if that switches it off."""

import numpy as np
import pytest
import torch

from tinylab import Context, Tensor, trace
from tinylab.engine import realize as engine
from tinylab.inspection.what_if import what_if
from tinylab.ir.ops import Op
from tinylab.schedule.fusion import Reason, SchedulerOptions
from tinylab.schedule.relayout import FILLED, useful_lanes
from tinylab.schedule.schedule import schedule

from relayout_support import caps_with_lanes, conv_grads, relayouts

RNG = np.random.default_rng(11)


def test_the_engine_relays_out_unless_told_not_to(monkeypatch):
    """On by default; RELAYOUT=0 turns it off (what-ifs and the bench compare the two)."""
    assert engine.scheduler_options().relayout_operands
    with Context(RELAYOUT=0):
        assert not engine.scheduler_options().relayout_operands


@pytest.mark.parametrize("count", [16, 8])
@pytest.mark.parametrize("shape", [(16, 32, 18, 32, 3), (8, 32, 18, 32, 5)])
def test_weight_gradient_reads_a_channel_last_copy_and_equals_torch(lanes, count, shape):
    lanes(count)
    (tx, tw), (gx, gw) = conv_grads(RNG, *shape)
    found, sched = relayouts([tw.grad.node], count)
    n, c, size, o, k = shape
    fires = useful_lanes(k, count) < count * FILLED  # kx is the only contiguous output axis
    assert len(found) == int(fires)
    if fires:  # the windowed operand (the input) is copied with its channels innermost
        (decision,) = found
        assert decision.producer.shape == (n, c, size, size)
        copies = [i for i in sched.kernels if i.output.op is Op.CONTIGUOUS]
        assert [i.output.shape for i in copies] == [(n, size, size, c)]
        assert copies[0].decisions[0].reason is Reason.RELAYOUT
        assert f"relayout_lanes={count}" in decision.describe()
    np.testing.assert_allclose(tw.grad.numpy(), gw, rtol=1e-4, atol=2e-3)
    np.testing.assert_allclose(tx.grad.numpy(), gx, rtol=1e-4, atol=2e-3)


@pytest.mark.parametrize("conv", [dict(padding=2), dict(stride=2), dict(dilation=2),
                                  dict(padding=1, stride=2)])
def test_relaid_weight_gradient_composes_with_padding_stride_dilation(lanes, conv):
    lanes(16)
    (tx, tw), (gx, gw) = conv_grads(RNG, 8, 64, 20, 128, 3, **conv)
    assert relayouts([tw.grad.node], 16)[0]  # each of these still gets the copy
    np.testing.assert_allclose(tw.grad.numpy(), gw, rtol=1e-4, atol=2e-3)
    np.testing.assert_allclose(tx.grad.numpy(), gx, rtol=1e-4, atol=2e-3)


def test_batchnorm_relu_before_the_conv_trains_like_torch(lanes):
    """The copied operand is itself computed (batch norm + relu of a conv), in a step that
    also needs it for the forward pass: both readers get the same values."""
    lanes(16)
    x = RNG.standard_normal((16, 16, 18, 18)).astype(np.float32)
    w1 = RNG.standard_normal((32, 16, 3, 3)).astype(np.float32) * 0.2
    w2 = RNG.standard_normal((64, 32, 3, 3)).astype(np.float32) * 0.2
    t1, t2 = Tensor(w1, requires_grad=True), Tensor(w2, requires_grad=True)
    h = Tensor(x).conv2d(t1)
    h = ((h - h.mean((0, 2, 3), keepdim=True)) / (h.var((0, 2, 3), keepdim=True) + 1e-5).sqrt())
    h.relu().conv2d(t2).square().mean().backward()
    r1, r2 = torch.tensor(w1, requires_grad=True), torch.tensor(w2, requires_grad=True)
    rh = torch.nn.functional.conv2d(torch.tensor(x), r1)
    rh = (rh - rh.mean((0, 2, 3), keepdim=True)) / (rh.var((0, 2, 3), keepdim=True) +
                                                      1e-5).sqrt()
    torch.nn.functional.conv2d(rh.relu(), r2).square().mean().backward()
    np.testing.assert_allclose(t2.grad.numpy(), r2.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(t1.grad.numpy(), r1.grad.numpy(), rtol=1e-3, atol=1e-4)


def test_forward_input_gradient_matmul_and_small_kernels_are_left_alone():
    x = Tensor(RNG.standard_normal((16, 32, 32, 32)).astype(np.float32), requires_grad=True)
    w = Tensor(RNG.standard_normal((32, 32, 5, 5)).astype(np.float32), requires_grad=True)
    out = x.conv2d(w)
    assert not relayouts([out.node], 16)[0]          # output channels: the weights' last axis
    (out * Tensor(RNG.standard_normal(out.shape).astype(np.float32))).sum().backward()
    assert not relayouts([x.grad.node], 16)[0]       # the input gradient's 32 columns fill
    # its vectors (with 24 columns it is relaid: test_relayout_input_gradient.py)
    a = Tensor(RNG.standard_normal((512, 256)).astype(np.float32))
    b = Tensor(RNG.standard_normal((512, 256)).astype(np.float32))
    assert not relayouts([(a @ b.T).node], 16)[0]    # 2-D: matmuls are packing.py's
    tiny_x = Tensor(RNG.standard_normal((1, 16, 8, 8)).astype(np.float32))
    tiny_w = Tensor(RNG.standard_normal((16, 16, 3, 3)).astype(np.float32), requires_grad=True)
    tiny_x.conv2d(tiny_w).sum().backward()
    assert not relayouts([tiny_w.grad.node], 16)[0]  # too little work for a copy
    assert not relayouts([w.grad.node], None)[0]     # a device that declares no lanes


def test_relayout_is_a_recorded_decision_and_the_what_if_switches_it_off(lanes):
    lanes(16)
    x = Tensor(RNG.standard_normal((16, 32, 18, 18)).astype(np.float32)).realize()
    w = Tensor(RNG.standard_normal((32, 32, 3, 3)).astype(np.float32), requires_grad=True)
    g = RNG.standard_normal((16, 32, 16, 16)).astype(np.float32)
    (x.conv2d(w) * Tensor(g)).sum().backward()
    with trace() as t:
        got = w.grad.numpy()
    record = t.realizes[-1]
    assert [d.reason for d in record.schedule.decisions].count(Reason.RELAYOUT) == 1
    (off,) = [s for s in what_if(record, {}) if s["key"] == "no_relayout"]
    assert off["delta_kernels"] == -1
    plain = schedule(record.outputs, SchedulerOptions(relayout_operands=False),
                     realized=record.schedule.leaves, caps=caps_with_lanes(16))
    assert not [d for d in plain.decisions if d.reason is Reason.RELAYOUT]
    rw = torch.tensor(w.numpy(), requires_grad=True)
    (torch.nn.functional.conv2d(torch.tensor(x.numpy()), rw) * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(got, rw.grad.numpy(), rtol=1e-4, atol=2e-3)


def test_useful_lanes():
    assert [useful_lanes(size, 16) for size in (5, 16, 20, 24, 32)] == [5, 16, 10, 12, 16]
