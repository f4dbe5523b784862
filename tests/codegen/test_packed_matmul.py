"""`a @ b` on the CPU packs big 2-D operands into 16-column panels first (schedule/packing.py, a
graph rewrite inside schedule(), before its one cut): two copy kernels and the product, checked against numpy
and PyTorch; the heuristic tiles 16 consecutive panel rows; small, odd, batched and non-float
matmuls and devices without a panel width keep the one-kernel form. The frontend builds the same
graph for every device; packing is a recorded decision, and the what-if switches it off. A target
whose measured tile reads few rows copies only the columns where the rows are a row-major buffer."""
import dataclasses

import numpy as np
import pytest
import torch

from tinylab import Context, Device, Tensor, trace
from tinylab.caps import DeviceCaps
from tinylab.codegen.heuristic import choose_opts
from tinylab.codegen.panels import packed_tile_rows, packs_rows
from tinylab.target.cpu_target import PRESETS
from tinylab.codegen.plan import KernelPlan
from tinylab.engine.realize import REALIZED
from tinylab.inspection.what_if import schedule_bytes, what_if
from tinylab.ir.ops import Op
from tinylab.schedule.fusion import Reason, SchedulerOptions
from tinylab.schedule.schedule import schedule

RNG = np.random.default_rng(7)
AVX512 = dataclasses.replace(PRESETS["avx512"], cores=2)  # choices below are this target's


def _kernels(out: Tensor, **options):
    return schedule([out.node], realized=REALIZED, caps=Device.caps(), **options).kernels


def _operands(m, k, n, dtype=np.float32):
    a = RNG.standard_normal((m, k)).astype(dtype)
    b = RNG.standard_normal((k, n)).astype(dtype)
    return a, b


def test_big_matmul_is_two_panel_copies_and_the_product():
    a, b = _operands(256, 384, 512)
    out = Tensor(a).realize() @ Tensor(b).realize()
    kernels = _kernels(out)
    assert len(kernels) == 3
    assert sum(k.output.op is Op.CONTIGUOUS for k in kernels) == 2
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-4, atol=1e-3)


def test_packed_matmul_gradients_match_torch():
    a, b = _operands(256, 256, 512)
    ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    g = RNG.standard_normal((256, 512)).astype(np.float32)
    ((ta @ tb) * Tensor(g)).sum().backward()
    ra, rb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ((ra @ rb) * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(ta.grad.numpy(), ra.grad.numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(tb.grad.numpy(), rb.grad.numpy(), rtol=1e-4, atol=1e-3)


def test_heuristic_tiles_sixteen_panel_rows():
    """Rows of a panel are consecutive floats: the register tile takes 16 of them (8 then 2)
    against one 16-lane vector of the other panel, where row-major operands get 16 rows a
    whole row apart."""
    a, b = _operands(512, 512, 512)
    product = max(_kernels(Tensor(a).realize() @ Tensor(b).realize()),
                  key=lambda k: np.prod(KernelPlan.from_ast(k.ast).shape))
    plan = KernelPlan.from_ast(product.ast)
    opts = choose_opts(plan, Device["CPU"].renderer.supported_actions, AVX512)
    tiled = plan.apply_all(opts)
    assert ("VECTORIZE", 16) in [(o.action, o.amount) for o in opts]
    upcasts = [a for a in tiled.axes if a.kind.value == "upcast"]
    assert [a.size for a in upcasts] == [8, 2] and len({a.origin for a in upcasts}) == 1
    assert tiled.shape[upcasts[0].origin] == 16  # the panel's row axis, tiled whole


@pytest.mark.parametrize("shape, why", [
    ((64, 64, 64), "small"),
    ((256, 256, 256), "not enough work"),
    ((250, 384, 512), "rows not a multiple of 16"),
    ((256, 384, 500), "columns not a multiple of 16"),
])
def test_matmuls_that_are_not_packed(shape, why):
    a, b = _operands(*shape)
    out = Tensor(a).realize() @ Tensor(b).realize()
    assert len(_kernels(out)) == 1, why
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-4, atol=1e-3)


def test_batched_integer_and_python_device_matmuls_are_not_packed():
    a, b = _operands(256, 384, 512)
    batched = Tensor(np.stack([a, a])).realize() @ Tensor(b).realize()
    assert len(_kernels(batched)) == 1
    ints = Tensor(a.astype(np.int32)).realize() @ Tensor(b.astype(np.int32)).realize()
    assert len(_kernels(ints)) == 1
    with Context(DEV="PYTHON"):
        out = Tensor(a).realize() @ Tensor(b).realize()
        assert len(_kernels(out)) == 1


def _graph_ops(node) -> list:
    """The graph as data without its device: op, shape, dtype and argument of every node
    (a buffer's argument is its Buffer object, so a BUFFER is known by shape and dtype)."""
    return [(n.op, n.shape, n.dtype, None if n.op is Op.BUFFER else n.arg) for n in node.toposort()]


def test_the_frontend_builds_one_graph_for_every_device():
    a, b = _operands(256, 384, 512)
    graphs = {}
    for device in ["CPU", "PYTHON"] + (["CL"] if Device["CL"].available else []):
        out = Tensor(a, device=device) @ Tensor(b, device=device)
        graphs[device] = _graph_ops(out.node)
    assert all(graph == graphs["CPU"] for graph in graphs.values())
    assert Op.CONTIGUOUS not in [op for op, *_ in graphs["CPU"]]  # no panel copies in the graph


def test_packing_appears_only_where_the_renderer_declares_a_panel():
    a, b = _operands(256, 384, 512)
    declared = {name: Device[name].caps.panel_width for name in ("CPU", "PYTHON", "CL", "CUDA")}
    assert declared["CPU"] and not any(declared[name] for name in ("PYTHON", "CL", "CUDA"))
    for device in ["CPU", "PYTHON"] + (["CL"] if Device["CL"].available else []):
        out = Tensor(a, device=device).realize() @ Tensor(b, device=device).realize()
        kernels = _kernels(out)
        assert len(kernels) == (3 if declared[device] else 1), device
        np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-4, atol=1e-3)
    out = Tensor(a).realize() @ Tensor(b).realize()
    assert len(_kernels(out, options=SchedulerOptions(pack_matmuls=False))) == 1


def test_packing_is_a_recorded_decision_and_the_what_if_switches_it_off():
    m, k, n = 256, 384, 512
    a, b, bias = *_operands(m, k, n), RNG.standard_normal(n).astype(np.float32)
    ta, tb, tbias = (Tensor(v).realize() for v in (a, b, bias))
    with trace() as t:
        got = (ta.linear(tb, tbias).relu()).numpy()
    np.testing.assert_allclose(got, np.maximum(a @ b + bias, 0), rtol=1e-4, atol=1e-3)
    record = t.realizes[-1]
    packs = [d for d in record.schedule.decisions if d.reason is Reason.PACKED_MATMUL]
    panel = Device["CPU"].caps.panel_width
    assert [d.producer.shape for d in packs] == [(m, k), (k, n)]
    assert all(f"matmul_panel={panel}" in d.describe() for d in packs)
    copies = [item for item in record.schedule.kernels if item.output.op is Op.CONTIGUOUS]
    assert [item.decisions[0].reason for item in copies] == [Reason.PACKED_MATMUL] * 2
    (off,) = [w for w in what_if(record, {}) if w["key"] == "no_pack"]
    # packed: two panel copies, the product stored in its reader's order, then bias + relu;
    # unpacked: bias + relu fuse after the matmul's reduce, one kernel
    assert (off["base_kernels"], off["kernels"], off["delta_kernels"]) == (4, 1, -3)
    # the copies read and write each operand, the product reads both panels and writes (m, n),
    # which the bias kernel reads back: 2 (m k + k n + m n) floats more than the one kernel
    assert off["delta_bytes"] == -2 * 4 * (m * k + k * n + m * n)
    unpacked = schedule(record.outputs, record.schedule.options.with_(pack_matmuls=False),
                        realized=record.schedule.leaves, caps=Device.caps())
    assert off["bytes"] == schedule_bytes(unpacked)
    small = Tensor(a[:64, :64]).realize() @ Tensor(b[:64, :64]).realize()
    with trace() as t:
        small.realize()
    assert "no_pack" not in [w["key"] for w in what_if(t.realizes[-1], {})]


# Rows read in place: a target whose measured register tile reads few rows (AVX2's 4 x 2 vectors,
# SSE4's 2 x 2) copies only the columns of a matmul whose rows operand is a row-major buffer.

def test_which_targets_read_rows_in_place():
    """packed_tile_rows is the rows measured_tile gives the product; at most 4 read in place.
    AVX-512's panel is one vector: the model tiles it (16 rows, test above) and rows are packed."""
    cases = {"avx2": ((2, 4, 0), 4, False), "sse4": ((2, 4, 0), 2, False),
             "avx512": ((9, 3, 0), 0, True)}
    for preset, (micro, rows, packs) in cases.items():
        target = dataclasses.replace(PRESETS[preset], micro_kernel=micro, cores=1)
        assert (packed_tile_rows(target), packs_rows(target)) == (rows, packs), preset
        if not rows:
            continue
        a, b = _operands(256, 256, 512)
        caps = {"CPU": DeviceCaps("CPU", panel_width=16, pack_rows=packs)}
        out = Tensor(a).realize() @ Tensor(b).realize()
        product = _kernels_with(out, caps)[-1]
        plan = KernelPlan.from_ast(product.ast)
        tiled = plan.apply_all(choose_opts(plan, Device["CPU"].renderer.supported_actions,
                                           target))
        upcast_rows = [a.size for a in tiled.axes if a.kind.value == "upcast" and
                       a.origin != tiled.vector_axis.origin]
        assert upcast_rows == [rows], preset
    model = dataclasses.replace(PRESETS["avx2"], micro_kernel=())
    assert packs_rows(model)  # the model's ranking needs the panel's dense rows to find them


def _kernels_with(out: Tensor, caps: dict):
    return schedule([out.node], realized=REALIZED, caps=caps).kernels


@pytest.fixture
def rows_in_place(monkeypatch):
    """The CPU device as a target that reads rows in place declares it (tests run the model)."""
    registry = type(Device)
    declared = registry.caps

    def caps(self):
        table = declared(self)
        return {**table, "CPU": dataclasses.replace(table["CPU"], pack_rows=False)}
    monkeypatch.setattr(registry, "caps", caps)


def test_rows_in_place_copy_only_the_columns(rows_in_place):
    m, k, n = 256, 384, 512
    a, b = _operands(m, k, n)
    ta, tb = Tensor(a).realize(), Tensor(b).realize()
    with trace() as t:
        got = (ta @ tb).numpy()
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-3)
    record = t.realizes[-1]
    assert len(record.schedule.kernels) == 2
    (pack,) = [d for d in record.schedule.decisions if d.reason is Reason.PACKED_MATMUL]
    assert pack.producer.shape == (k, n) and "read in place" in pack.describe()


@pytest.mark.parametrize("name, rows, expected, kernels", [
    ("a row-major buffer", lambda a: Tensor(a).realize(), lambda a: a, 2),
    ("a transposed buffer", lambda a: Tensor(np.ascontiguousarray(a.T)).realize().T,
     lambda a: a, 3),
    ("a slice of a wider buffer", lambda a: Tensor(np.pad(a, ((0, 0), (0, 16)))).realize()
     [:, :a.shape[1]], lambda a: a, 3),
    ("an expression (computed in its copy, not per column panel)",
     lambda a: Tensor(a).realize().relu() * 2, lambda a: np.maximum(a, 0) * 2, 3),
    ("a padded buffer", lambda a: Tensor(a[:, 1:]).realize().pad(((0, 0), (1, 0))),
     lambda a: np.pad(a[:, 1:], ((0, 0), (1, 0))), 3),
    ("rows longer than a page (k = 2048)", lambda a: Tensor(np.tile(a, (1, 8))).realize()[:, :],
     lambda a: np.tile(a, (1, 8)), 3),
])
def test_rows_read_in_place_only_from_a_row_major_buffer(rows_in_place, name, rows, expected,
                                                         kernels):
    a, b = _operands(256, 256, 512)
    x = rows(a)
    w = Tensor(np.tile(b, (x.shape[1] // 256, 1)) / (x.shape[1] // 256)).realize()
    out = x @ w
    assert len(_kernels(out)) == kernels, name
    np.testing.assert_allclose(out.numpy(), expected(a) @ w.numpy(), rtol=1e-4, atol=1e-3)


def test_rows_in_place_in_compositions(rows_in_place):
    """A matmul of a matmul's result (read in place: the product stores it row-major), a slice
    of the product, and gradients through it, against PyTorch."""
    a, b = _operands(256, 256, 512)
    c = RNG.standard_normal((512, 256)).astype(np.float32)
    ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    tc = Tensor(c).realize()
    chained = (ta @ tb) @ tc
    loss = (chained[16:48, ::2].relu() * 0.5).sum()
    loss.backward()
    ra, rb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    rc = (ra @ rb) @ torch.tensor(c)
    (rc[16:48, ::2].relu() * 0.5).sum().backward()
    np.testing.assert_allclose(chained.numpy(), rc.detach().numpy(), rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(ta.grad.numpy(), ra.grad.numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(tb.grad.numpy(), rb.grad.numpy(), rtol=1e-4, atol=1e-3)
