"""The register tile of a conv's input gradient (codegen/heuristic_tile.py _selected_rows): the
gradient pads the product of the output gradient and the weights, so each weight broadcast is
masked lane by lane, one more vector op per tile row; the weights' axis takes at most
SELECTED_ROWS rows and the batch takes the rest of the budget. Checked for every preset's plan
(whatever this CPU is) and, for this CPU's plan, against PyTorch's gradient."""
import numpy as np
import pytest

from tinylab import Tensor
from tinylab.codegen import heuristic, heuristic_tile
from tinylab.codegen.heuristic import choose_opts
from tinylab.codegen.heuristic_tile import SELECTED_ROWS, _selected_rows
from tinylab.codegen.plan import Action, AxisKind, KernelPlan
from tinylab.engine.realize import REALIZED
from tinylab.renderers.c import CRenderer
from tinylab.schedule.schedule import schedule
from tinylab.target.cpu_target import PRESETS

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 16, 12, 12)).astype(np.float32)
W = RNG.standard_normal((16, 16, 3, 3)).astype(np.float32)


def _input_gradient():
    x, w = Tensor(X, requires_grad=True), Tensor(W, requires_grad=True)
    x.conv2d(w).square().sum().backward()
    return x


def _input_gradient_plan() -> KernelPlan:
    kernels = schedule([_input_gradient().grad.node], realized=REALIZED).kernels
    plans = [KernelPlan.from_ast(k.ast) for k in kernels]
    conv = [p for p in plans if p.has_reduce and p.n_reduce == 3]
    assert conv, [p.shape for p in plans]
    return max(conv, key=lambda p: int(np.prod(p.shape)))


def _rows(plan: KernelPlan, selected: bool) -> list[int]:
    """Upcast amounts of the tile axes whose rows are (or are not) masked broadcasts."""
    base = KernelPlan.from_ast(plan.ast)
    vectorized = base.apply_all([o for o in plan.opts if o.action is Action.VECTORIZE])
    origins = {a.origin for i, a in enumerate(vectorized.axes)
               if a.kind is AxisKind.GLOBAL and _selected_rows(vectorized, i)}
    return [a.size for a in plan.axes if a.kind is AxisKind.UPCAST and
            a.origin != plan.vector_axis.origin and (a.origin in origins) == selected]


@pytest.mark.parametrize("preset", ["avx512", "avx2", "sse4"])
def test_weight_rows_of_an_input_gradient_tile_stay_few(preset, monkeypatch):
    target = PRESETS[preset]
    base = _input_gradient_plan()
    actions = CRenderer(target).supported_actions
    plan = base.apply_all(choose_opts(base, actions, target))
    assert plan.vector_axis is not None
    selected, others = _rows(plan, True), _rows(plan, False)
    assert selected and max(selected) <= SELECTED_ROWS, plan.opts
    assert others, plan.opts  # the batch takes the budget the weights leave
    # without the cap the weights' axis takes the biggest tile: the rule is what chose this
    # (on 12 accumulators spreading one-vector rows over two axes keeps them few too: off here)
    monkeypatch.setattr(heuristic_tile, "SELECTED_ROWS", 8)
    monkeypatch.setattr(heuristic_tile, "_spread_rows", lambda *args: False)
    uncapped = base.apply_all(choose_opts(base, actions, target))
    assert max(_rows(uncapped, True)) > SELECTED_ROWS


def test_the_input_gradient_matches_pytorch():
    import torch
    ours = _input_gradient().grad.numpy()
    x, w = torch.tensor(X, requires_grad=True), torch.tensor(W)
    torch.nn.functional.conv2d(x, w).square().sum().backward()
    np.testing.assert_allclose(ours, x.grad.numpy(), rtol=1e-4, atol=1e-3)


def test_a_forward_conv_has_no_selected_rows():
    """The forward conv pads nothing it multiplies: no axis is capped."""
    x, w = Tensor(X), Tensor(W)
    kernels = schedule([x.conv2d(w, padding=1).node], realized=REALIZED).kernels
    plan = max((KernelPlan.from_ast(k.ast) for k in kernels), key=lambda p: int(np.prod(p.shape)))
    target = PRESETS["avx512"]
    vectorized = heuristic.vectorize(plan, target)
    assert not any(_selected_rows(vectorized, i) for i in range(len(vectorized.axes)))
