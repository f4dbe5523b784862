"""Operand relayout through a transposed window (schedule/relayout.py): a convolution's input
gradient sums the product of the output gradient and the weights through pads and reshapes
(frontend/pooling.py), and where its columns leave vector lanes masked the weights are copied
with the input channels innermost, so the kernel's vectors run over channels. Checked against
PyTorch for 16, 8 and 4 lanes, in composition (padding, stride, dilation, a second conv whose
weight gradient reads this gradient), at an infinite weight (a padded tap must add nothing,
not 0 * inf), and the graph rewrite that keeps one copy of a gradient two rewrites read."""
import dataclasses

import numpy as np
import pytest
import torch

from tinylab import Device, Tensor
from tinylab.engine.realize import REALIZED
from tinylab.ir.ops import Op
from tinylab.schedule.fusion import Reason
from tinylab.schedule.relayout import useful_lanes
from tinylab.schedule.schedule import schedule

from relayout_support import conv_grads, relayouts

RNG = np.random.default_rng(23)


@pytest.mark.parametrize("count", [16, 8, 4])
@pytest.mark.parametrize("shape", [(32, 32, 10, 64, 3), (8, 32, 24, 32, 5), (32, 64, 8, 64, 3)])
def test_input_gradient_reads_channel_last_weights_and_equals_torch(lanes, count, shape):
    lanes(count)
    (tx, tw), (gx, gw) = conv_grads(RNG, *shape)
    n, c, size, o, k = shape
    found, sched = relayouts([tx.grad.node], count)
    fires = useful_lanes(size, count) < count  # the input's columns: its one contiguous axis
    assert len(found) == int(fires), [d.describe() for d in found]
    if fires:  # the weights, copied (ky, kx, out, in): the input channels are consecutive
        (decision,) = found
        copies = [i.output.shape for i in sched.kernels if i.output.op is Op.CONTIGUOUS]
        assert (1, k, k, o, c) in copies, copies
        assert f"relayout_lanes={count}" in decision.describe()
    np.testing.assert_allclose(tx.grad.numpy(), gx, rtol=1e-4, atol=2e-3)
    np.testing.assert_allclose(tw.grad.numpy(), gw, rtol=1e-4, atol=2e-3)


@pytest.mark.parametrize("conv, relaid", [(dict(padding=1), True), (dict(padding=(2, 1)), True),
                                          (dict(stride=2), False), (dict(dilation=2), False),
                                          (dict(padding=2, stride=2, dilation=2), False)])
def test_input_gradient_composes_with_padding_stride_dilation(lanes, conv, relaid):
    """Padding only widens the transposed window: relaid. A stride or a dilation keeps the
    channel sum apart from the taps' sum (rewrite.py does not fold them), and neither sum is
    a product over several axes: left as it was. The values are PyTorch's either way."""
    lanes(16)
    (tx, tw), (gx, gw) = conv_grads(RNG, 32, 32, 13, 64, 3, **conv)
    assert bool(relayouts([tx.grad.node], 16)[0]) == relaid  # 13 columns fill no 16 lanes
    np.testing.assert_allclose(tx.grad.numpy(), gx, rtol=1e-4, atol=2e-3)
    np.testing.assert_allclose(tw.grad.numpy(), gw, rtol=1e-4, atol=2e-3)


def test_a_padded_tap_adds_nothing_at_an_infinite_weight(lanes):
    """Near the border a tap of the transposed window falls in the padding: the product there
    is the pad's zero, not 0 * inf. The relaid kernel loads each weight vector unmasked (one
    condition for all its lanes) and zeroes it where the tap is padded."""
    lanes(8)
    x = RNG.standard_normal((32, 32, 10, 10)).astype(np.float32)
    w = RNG.standard_normal((64, 32, 3, 3)).astype(np.float32)
    w[0, :, 0, 0] = np.inf  # input channel c gets +inf where tap (0, 0) reaches it
    g = RNG.random((32, 64, 8, 8)).astype(np.float32) + 0.5  # positive: no inf - inf
    tx = Tensor(x, requires_grad=True)
    (tx.conv2d(Tensor(w)) * Tensor(g)).sum().backward()
    assert relayouts([tx.grad.node], 8)[0]
    rx = torch.tensor(x, requires_grad=True)
    (torch.nn.functional.conv2d(rx, torch.tensor(w)) * torch.tensor(g)).sum().backward()
    got, expected = tx.grad.numpy(), rx.grad.numpy()
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    assert not np.isnan(got).any() and np.isinf(got).any() and np.isfinite(got).any()
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-4, atol=2e-3)


def test_a_gradient_two_rewrites_read_is_computed_once(lanes):
    """The second conv's input gradient (relaid) is read, through a batch norm's backward, by
    the first conv's weight gradient (relaid too) and by the norm's own sums: every reader gets
    the relaid input gradient, computed once (the rewrite used to rebuild the weight gradient
    on the graph before it: its copy read an input gradient of its own, and both sums ran)."""
    lanes(8)
    x = RNG.standard_normal((64, 16, 14, 14)).astype(np.float32)
    w1 = (RNG.standard_normal((32, 16, 3, 3)) * 0.2).astype(np.float32)
    w2 = (RNG.standard_normal((64, 32, 3, 3)) * 0.2).astype(np.float32)
    t1, t2 = Tensor(w1, requires_grad=True), Tensor(w2, requires_grad=True)

    def norm(h):
        return (h - h.mean((0, 2, 3), keepdim=True)) / (h.var((0, 2, 3), keepdim=True) +
                                                         1e-5).sqrt()
    norm(Tensor(x).conv2d(t1)).relu().conv2d(t2).square().mean().backward()
    found, sched = relayouts([t1.grad.node], 8)
    assert len(found) == 2  # w2's transposed window (input gradient), then w1's gradient
    copies = [i.output.shape for i in sched.kernels if i.output.op is Op.CONTIGUOUS]
    assert (1, 3, 3, 64, 32) in copies, copies  # the input gradient reads relaid weights
    sums = [i.output.shape for i in sched.kernels if i.output.op is Op.REDUCE_SUM]
    assert len(sums) == len(set(sums)), sums  # no sum computed twice
    r1, r2 = torch.tensor(w1, requires_grad=True), torch.tensor(w2, requires_grad=True)
    conv = torch.nn.functional.conv2d
    conv(norm(conv(torch.tensor(x), r1)).relu(), r2).square().mean().backward()
    np.testing.assert_allclose(t1.grad.numpy(), r1.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(t2.grad.numpy(), r2.grad.numpy(), rtol=1e-3, atol=1e-4)


def test_a_matmul_of_a_matmul_packs_both():
    """Packing rewrites both products of (a @ b).relu() @ c: the outer one's rows panel reads
    the inner packed product (it used to read an unpacked copy of it)."""
    a = RNG.standard_normal((512, 256)).astype(np.float32)
    b, c = (RNG.standard_normal((256, 256)).astype(np.float32) for _ in range(2))
    ta, tb, tc = Tensor(a).realize(), Tensor(b).realize(), Tensor(c).realize()
    out = (ta @ tb).relu() @ tc
    caps = {"CPU": dataclasses.replace(Device.caps()["CPU"], panel_width=16)}
    sched = schedule([out.node], realized=REALIZED, caps=caps)
    packed = [d for d in sched.decisions if d.reason is Reason.PACKED_MATMUL]
    assert len(packed) == 4, [d.describe() for d in packed]
    sums = [i.output for i in sched.kernels if i.output.op is not Op.CONTIGUOUS]
    assert len(sched.kernels) == 6 and len(sums) == 2, [i.output for i in sched.kernels]
    inner = np.maximum(a.astype(np.float64) @ b, 0)
    np.testing.assert_allclose(out.numpy(), inner @ c, rtol=1e-4, atol=1e-2)
