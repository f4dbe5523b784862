"""Loops over a vector's lanes (renderers/c.py): a vector along a strided axis is stored, and
read outside reduce loops, by one loop over its lanes (in a kernel with a reduce loop, a helper's
loop: one per helper however many vectors call it), and a vector accumulator folds into one value
by a loop over its lanes. Checked on the kernels this CPU runs (make
presets runs them for avx2 and sse4 too) against numpy and PyTorch, in compositions: a transpose
after a pad, a scatter through a permuted view, and a convolution's weight gradient (its tile is
stored across the output channels, read back and accumulated over batch blocks)."""
import numpy as np
import pytest

from tinylab import Device, Tensor, trace
from tinylab.engine.realize import render_for

LANE_LOOP = "for (int lane = 0; lane <"


def _spaced_in_helpers(sources) -> bool:
    """Some kernel reads or writes spaced lanes, and every lane loop from lane 0 is a helper's:
    one per helper however many vectors call it."""
    found = False
    for source in sources:
        helpers = [line for line in source.splitlines() if "static" in line and "_spaced_" in line]
        assert source.count(LANE_LOOP) == len(helpers), source
        found |= bool(helpers) and source.count("_spaced_") > len(helpers)  # and calls
    return found


def _run(build):
    with trace() as record:
        out = build()
        out.realize()
    return out.numpy(), [render_for(k.ast, k.device) for k in record.kernels]


def _vector_cpu() -> bool:
    return Device["CPU"].target.lanes_of(4) > 1


def test_a_transpose_after_a_pad_writes_its_strided_lanes_in_a_loop():
    """No reduce loop: the strided store is the kernel's work, its loop written inline."""
    rng = np.random.default_rng(0)
    a = rng.random((48, 64), dtype=np.float32)
    got, sources = _run(lambda: (Tensor(a).pad(((1, 1), (0, 0))).permute(1, 0) + 1).exp())
    np.testing.assert_allclose(got, np.exp(np.pad(a, ((1, 1), (0, 0))).T + 1), rtol=1e-6)
    if _vector_cpu():
        assert any(LANE_LOOP in s for s in sources)
        assert not any("_spaced_" in s for s in sources)


@pytest.mark.parametrize("shape", [(33, 17), (64, 48), (5, 40)])
def test_strided_reads_and_writes_in_one_kernel(shape):
    """A permuted read and write in one elementwise kernel, odd sizes (tail tiles)."""
    rng = np.random.default_rng(1)
    a, b = rng.random(shape, dtype=np.float32), rng.random(shape[::-1], dtype=np.float32)
    got, _ = _run(lambda: (Tensor(a).permute(1, 0) * Tensor(b)).permute(1, 0).contiguous()
                  .sqrt())
    np.testing.assert_allclose(got, np.sqrt((a.T * b).T), rtol=1e-6)


@pytest.mark.parametrize("cin,cout,k", [(32, 32, 3), (32, 64, 3), (1, 32, 5)])
def test_conv_weight_gradient_matches_pytorch(cin, cout, k):
    torch = pytest.importorskip("torch")
    from torch_reference import aten_kernels
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, cin, 10, 10), dtype=np.float32)
    w = rng.standard_normal((cout, cin, k, k), dtype=np.float32) * 0.1
    weight = Tensor(w, requires_grad=True)
    with trace() as record:
        Tensor(x).conv2d(weight).relu().sum().backward()
        grad = weight.grad.numpy()
    sources = [render_for(kn.ast, kn.device) for kn in record.kernels]
    with aten_kernels():
        tw = torch.tensor(w, requires_grad=True)
        torch.nn.functional.conv2d(torch.tensor(x), tw).relu().sum().backward()
    np.testing.assert_allclose(grad, tw.grad.numpy(), rtol=2e-4, atol=2e-4)
    if _vector_cpu():  # its tiles are strided on every target this runs for (avx2, sse4 too)
        assert _spaced_in_helpers(sources)


@pytest.mark.parametrize("op", ["max", "min", "sum"])
def test_a_vector_accumulator_folds_its_lanes_in_a_loop(op):
    """The fold at the end of a vectorized reduce runs over the lanes in a loop: a NaN in any
    lane wins a max or min, infinities hold, an int32 sum is exact."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((37, 96)).astype(np.float32)
    for row, column in enumerate(range(0, 96, 5)):
        a[row, column] = np.nan       # a NaN in each lane position, one per row
    a[30, 7], a[31, 50] = np.inf, -np.inf
    got, sources = _run(lambda: getattr(Tensor(a), op)(1))
    want = getattr(np, op)(a, axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-5, equal_nan=True)
    ints = rng.integers(-1000, 1000, (19, 256)).astype(np.int32)
    got_int, _ = _run(lambda: getattr(Tensor(ints), op)(1))
    np.testing.assert_array_equal(got_int, getattr(np, op)(ints, axis=1))
    if _vector_cpu():
        assert any("for (int lane = 1; lane <" in s for s in sources)


def test_folds_of_one_width_share_one_lane_loop_and_keep_their_lines():
    """a @ b.T's heuristic plan vectorizes the reduce (contiguous in both operands) over a tile of
    outputs: their folds follow each other and share one lane loop, a statement each (their add
    chains overlap), each line owned by its own fold in the compile record (the inspector's
    line map); the product, then a relu and a NaN-aware max over it, match numpy."""
    from tinylab.codegen.linear_ops import LinearOp
    from tinylab.engine.realize import record_for
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((64, 96)).astype(np.float32) for _ in "ab")
    a[3, 17] = np.nan
    with trace() as record:
        product = Tensor(a) @ Tensor(b).T
        tail = (product.relu() * 2).max(1)
        Tensor.realize(product, tail)
    want = a.astype(np.float64) @ b.T.astype(np.float64)
    np.testing.assert_allclose(product.numpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tail.numpy(), (np.maximum(want, 0) * 2).max(1), rtol=1e-4,
                               equal_nan=True)
    assert np.isnan(tail.numpy()[3]) and np.isnan(product.numpy()[3]).all()
    if not _vector_cpu():
        return
    grouped = 0
    for kernel in record.kernels:
        kept = record_for(kernel.ast, kernel.device)
        body = kept.source.splitlines()[-len(kept.line_owners) - 1:-1]
        for number, line in enumerate(body):
            if not line.strip().startswith("for (int lane = 1;") or not line.endswith("{"):
                continue
            grouped += 1
            statements = []
            for inner, owner in zip(body[number + 1:], kept.line_owners[number + 1:]):
                if inner.strip() == "}":
                    break
                statements.append(inner)
                assert kept.program.instrs[owner].op == LinearOp.VREDUCE
                assert inner.strip().startswith(f"red{owner} = ")   # its own fold's line
            assert len(statements) >= 2
    assert grouped


def test_the_shown_plan_has_every_loop_the_source_runs():
    """What the inspector shows is what ran: the plan pass lists the renderer's lane loops (a
    helper's, once however often it is called; an inline strided loop; a fold group's) after the
    plan's own, so the loops shown are the loops compiled: a conv's weight gradient (helpers), a
    transpose (inline), a softmax (folds)."""
    import re

    from tinylab.engine.realize import record_for
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 8, 10, 10), dtype=np.float32)
    w = Tensor(rng.standard_normal((16, 8, 3, 3), dtype=np.float32), requires_grad=True)
    a = rng.random((40, 72), dtype=np.float32)
    with trace() as record:
        Tensor(x).conv2d(w).relu().sum().backward()
        grad = w.grad.numpy()
        t = (Tensor(a).permute(1, 0) + 1).exp().numpy()
        s = Tensor(a).softmax(-1).numpy()
    np.testing.assert_allclose(t, np.exp(a.T + 1), rtol=1e-6)
    e = np.exp(a - a.max(-1, keepdims=True))
    np.testing.assert_allclose(s, e / e.sum(-1, keepdims=True), rtol=1e-5)
    patches = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))
    out = np.einsum("ncijhw,ochw->noij", patches, w.numpy())
    np.testing.assert_allclose(grad, np.einsum("noij,ncijhw->ochw", (out > 0).astype(np.float32),
                                               patches), rtol=1e-4, atol=1e-4)
    extra = 0
    for kernel in record.kernels:
        rec = record_for(kernel.ast, kernel.device)
        plan = rec.passes()["plan"]
        if "not printed" in plan:
            continue
        shown = len(re.findall(r"^\s*for \w+ in ", plan, re.M))
        assert shown == len(re.findall(r"\bfor \(", rec.source)), (plan, rec.source)
        extra += len(rec.extra_loops)
    assert extra or not _vector_cpu()
