"""The target rewrites (packing.py, relayout.py) run on the graph before the cut: one cut and one
lowering per schedule, whichever rewrites fire. Packing matches the algebra of a matmul (a sum
over the last axis of a product of two broadcasts sharing it), not the frontend's one spelling:
other spellings pack too, and compute what numpy computes. placement.py's answers (is the product
computed in the reduce loop, is an operand read from a buffer) agree with the cut of the same
graph. Every rewrite's decisions are kept, with the folds made beside them."""
import dataclasses

import numpy as np
import pytest

from tinylab import Device, Tensor
from tinylab.engine.realize import REALIZED
from tinylab.ir.ops import Op
from tinylab.schedule import schedule as scheduler
from tinylab.schedule.cuts import choose_cuts
from tinylab.schedule.fusion import Reason, SchedulerOptions
from tinylab.schedule.packing import matmul_operands
from tinylab.schedule.placement import Placement, operand_chain
from tinylab.schedule.relayout import _plan

RNG = np.random.default_rng(5)
PANEL = 16


def _caps(panel=PANEL, lanes=None):
    """Device.caps() with the CPU packing into `panel` columns and relaying out for `lanes`."""
    return {name: dataclasses.replace(caps, panel_width=panel, relayout_lanes=lanes)
            if name == "CPU" else caps for name, caps in Device.caps().items()}


def _counted(monkeypatch):
    counts = {"cut": 0, "lower": 0}

    def count(name, fn):
        def wrapped(*args, **kwargs):
            counts[name] += 1
            return fn(*args, **kwargs)
        return wrapped
    monkeypatch.setattr(scheduler, "choose_cuts", count("cut", scheduler.choose_cuts))
    monkeypatch.setattr(scheduler, "lower_region", count("lower", scheduler.lower_region))
    return counts


def _reasons(sched, reason):
    return [d for d in sched.decisions if d.reason is reason]


def _array(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_one_cut_and_one_lowering_when_both_rewrites_fire(monkeypatch):
    a, b = Tensor(_array(512, 256)).realize(), Tensor(_array(256, 256)).realize()
    x, w = _conv()
    counts = _counted(monkeypatch)
    sched = scheduler.schedule([(a @ b).node, w.grad.node], realized=REALIZED,
                               caps=_caps(lanes=16))
    assert len(_reasons(sched, Reason.PACKED_MATMUL)) == 2
    assert len(_reasons(sched, Reason.RELAYOUT)) == 1
    assert counts == {"cut": 1, "lower": len(sched.kernels)}
    # each copy kernel opens with the decision that explains it
    explained = [item.decisions[0].reason.value for item in sched.kernels if item.decisions and
                 item.decisions[0].reason in (Reason.PACKED_MATMUL, Reason.RELAYOUT)]
    assert sorted(explained) == ["packed_matmul", "packed_matmul", "relayout"]


def _swapped(x, w):      # w's broadcast first
    m, k = x.shape
    n = w.shape[1]
    return (w.T.reshape(1, n, k).expand(m, n, k) * x.reshape(m, 1, k).expand(m, n, k)).sum(2)


def _permuted(x, w):     # the broadcasts made by permutes of size-1 axes
    m, k = x.shape
    n = w.shape[1]
    rows = x.reshape(m, k, 1).permute(0, 2, 1).expand(m, n, k)
    columns = w.reshape(k, n, 1).permute(2, 1, 0).expand(m, n, k)
    return (rows * columns).sum(axis=2)


@pytest.mark.parametrize("spelling", [lambda x, w: x @ w, _swapped, _permuted])
def test_any_spelling_of_a_matmul_packs(spelling):
    m, k, n = 256, 512, 384
    a, b = _array(m, k), _array(k, n)
    out = spelling(Tensor(a).realize(), Tensor(b).realize())
    sched = scheduler.schedule([out.node], realized=REALIZED, caps=_caps())
    packs = _reasons(sched, Reason.PACKED_MATMUL)
    assert [d.producer.shape for d in packs] == [(m, k), (k, n)]
    assert len(sched.kernels) == 3
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-4, atol=1e-3)


def _reduce(t):
    """The REDUCE_SUM node under a Tensor.sum (which reshapes the kept axes away)."""
    node = t.node
    return node.src[0] if node.op is Op.RESHAPE else node


def test_what_is_not_a_matmul_is_not_matched():
    x, y = Tensor(_array(64, 64, 32)), Tensor(_array(64, 64, 32))
    assert matmul_operands(_reduce((x * y).sum(2))) is None          # no broadcast
    a = Tensor(_array(64, 32))
    sides = a.reshape(64, 1, 32).expand(64, 64, 32)
    assert matmul_operands(_reduce((sides * sides).sum(2))) is None  # both broadcast along n
    padded = a.pad(((0, 0), (0, 1))).reshape(64, 1, 33).expand(64, 64, 33)
    other = Tensor(_array(33, 64)).T.reshape(1, 64, 33).expand(64, 64, 33)
    assert matmul_operands(_reduce((padded * other).sum(2))) is not None
    assert matmul_operands(_reduce((other * padded).sum(1))) is None  # not the last axis
    masked = a.reshape(64, 1, 32).expand(64, 64, 32).pad(((0, 0), (0, 0), (0, 1)))
    other = Tensor(_array(33, 64)).T.reshape(1, 64, 33).expand(64, 64, 33)
    assert matmul_operands(_reduce((masked * other).sum(2))) is None  # a pad over the broadcast


def _conv():
    """(x, w) of a convolution (then relu) big enough to relay out, after its backward."""
    x = Tensor(_array(16, 32, 24, 24), requires_grad=True).realize()
    w = Tensor(_array(32, 32, 5, 5), requires_grad=True).realize()
    out = x.conv2d(w)
    out.relu().sum().backward()
    return x, w


def _graphs():
    """(outputs, options) pairs: matmuls and conv gradients whose product and operands sit
    differently after the cut."""
    a, b = Tensor(_array(128, 128)).realize(), Tensor(_array(128, 128)).realize()
    product = a.reshape(128, 1, 128).expand(128, 128, 128) * \
        b.T.reshape(1, 128, 128).expand(128, 128, 128)
    x, w = _conv()
    h = Tensor(_array(16, 32, 24, 24)).realize()
    w2 = Tensor(_array(32, 32, 5, 5), requires_grad=True).realize()
    (h * 2).relu().conv2d(w2).relu().sum().backward()   # an elementwise operand
    return [
        ([(a @ b).relu().node], SchedulerOptions()),
        ([product.sum(2).node, product.node], SchedulerOptions()),      # the product requested
        ([(a @ b).node], SchedulerOptions(fuse=False)),
        ([(a @ b).node], SchedulerOptions(fuse_into_reduce=False)),
        ([w.grad.node, x.grad.node], SchedulerOptions()),
        ([w.grad.node], SchedulerOptions(recompute_shared=False)),
        ([w2.grad.node], SchedulerOptions()),
    ]


@pytest.mark.parametrize("case", range(7))
def test_placement_agrees_with_the_cut(case):
    outputs, options = _graphs()[case]
    placement = Placement(outputs, REALIZED, options)
    _, regions = choose_cuts(placement.graph, outputs, REALIZED, options)
    checked = 0
    for reduce in placement.reduces():
        product = reduce.src[0]
        (region,) = [r for r in regions.values() if reduce in r.nodes]
        fused = product in region.nodes
        assert placement.fused_into_reduce(product, reduce) == fused, (reduce, product)
        if product.op is not Op.MUL or not fused:
            continue
        for operand in product.src:
            base, chain = operand_chain(operand)
            assert placement.has_buffer(base, chain, product) == (base not in region.nodes), base
            checked += 1
    assert checked or case in (1, 2, 3)


def test_decisions_of_every_rewrite_and_fold_are_kept():
    """A conv weight gradient is relaid out and its input gradient's nested sums fold, in one
    schedule: both kinds of decision are recorded (the schedule once dropped the folds)."""
    x, w = _conv()
    sched = scheduler.schedule([x.grad.node, w.grad.node], realized=REALIZED,
                               caps=_caps(panel=None, lanes=16))
    assert _reasons(sched, Reason.RELAYOUT) and _reasons(sched, Reason.FOLDED_REDUCE)
    product = [r for r in Placement([w.grad.node], REALIZED, SchedulerOptions()).reduces()
               if _plan(r, 16) is not None]
    assert product  # the weight gradient is a case for relayout


def _without_shortcuts(outputs, caps):
    """schedule() as it was before its early-outs: every rewrite tried on every graph."""
    options, realized = SchedulerOptions(), scheduler.LookedUp(REALIZED)
    requested = list(dict.fromkeys(outputs))
    rewritten, folds, copies = scheduler.rewrite_before_cut(requested, options, realized, caps)
    return scheduler._cut_and_lower(requested, rewritten, folds, copies, options, realized, caps)


@pytest.mark.parametrize("case", ["elementwise", "small matmul", "matmul just under packing",
                                  "matmul at packing", "softmax", "conv weight gradient"])
def test_the_shortcuts_for_graphs_no_rewrite_touches_change_nothing(case):
    """schedule() skips the rewrites for a graph without a reduce, and packing and relayout for
    one whose sums of products are all below their minimum work: the schedule is the one the
    full path makes (same printout, kernel ASTs and decisions) on both sides of the threshold."""
    if case == "conv weight gradient":
        out = _conv()[1].grad
    else:
        shapes = {"elementwise": (8, 8), "small matmul": (24, 16),
                  "matmul just under packing": (512, 256), "matmul at packing": (512, 256),
                  "softmax": (16, 40)}
        a = Tensor(_array(*shapes[case])).realize()
        b = Tensor(_array(256, 255 if "under" in case else 256)).realize()
        out = {"elementwise": lambda: (a + 1).exp() * a, "softmax": lambda: a.softmax(-1),
               "small matmul": lambda: (a @ Tensor(_array(16, 8)).realize()).relu().sum()}.get(
                   case, lambda: a @ b)()
    caps = _caps(lanes=16)
    fast = scheduler.schedule([out.node], realized=REALIZED, caps=caps)
    full = _without_shortcuts([out.node], caps)
    assert str(fast) == str(full)
    assert [item.ast for item in fast.items] == [item.ast for item in full.items]
    def described(sched):  # a rewrite's copies are new CONTIGUOUS nodes (serials) each time
        def node(n):
            return None if n is None else (n.op, n.shape)
        return [(d.reason, node(d.producer), node(d.consumer)) for d in sched.decisions]
    assert described(fast) == described(full)
    packs = len(_reasons(fast, Reason.PACKED_MATMUL))
    assert packs == (2 if case == "matmul at packing" else 0)
