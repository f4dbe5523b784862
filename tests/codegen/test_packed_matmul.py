"""`a @ b` on the CPU packs big 2-D operands into 16-column panels first (frontend/nn_ops.py
`_packed_matmul`): two copy kernels and the product, checked against numpy and PyTorch; the
heuristic tiles 16 consecutive panel rows; small, odd, batched and non-float matmuls and devices
without a panel width keep the one-kernel form."""
import dataclasses

import numpy as np
import pytest
import torch

from tinylab import Context, Device, Tensor
from tinylab.codegen.heuristic import choose_opts
from tinylab.runtimes.cpu_target import PRESETS
from tinylab.codegen.plan import KernelPlan
from tinylab.engine.realize import REALIZED
from tinylab.ir.ops import Op
from tinylab.schedule.schedule import schedule

RNG = np.random.default_rng(7)
AVX512 = dataclasses.replace(PRESETS["avx512"], cores=2)  # choices below are this target's


def _kernels(out: Tensor):
    return schedule([out.node], realized=REALIZED).kernels


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
