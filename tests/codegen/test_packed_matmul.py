"""`a @ b` on the CPU packs big 2-D operands into 16-column panels first (schedule/packing.py, a
graph rewrite inside schedule(), before its one cut): two copy kernels and the product, checked against numpy
and PyTorch; the heuristic tiles 16 consecutive panel rows; small, odd, batched and non-float
matmuls and devices without a panel width keep the one-kernel form. The frontend builds the same
graph for every device; packing is a recorded decision, and the what-if switches it off."""
import dataclasses

import numpy as np
import pytest
import torch

from tinylab import Context, Device, Tensor, trace
from tinylab.codegen.heuristic import choose_opts
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
