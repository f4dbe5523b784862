"""The order of a kernel's reduce loops and the rows of its register tile (codegen/heuristic.py
order_reduce, _tile_candidates), and how the C renderer loads a vector whose lanes share one
condition. A conv's input gradient sums over output channels and window taps: vectorized along
the input's columns (the output gradient loaded as vectors, the weights broadcast) the channel
loop runs innermost; vectorized along input channels (weights relaid channel-last, the output
gradient broadcast) the taps do, and the tile's rows come from the batch, whose rows share the
weights' vector. A tile of one vector per row spreads its rows over two axes where one would
leave the other no room (8 x 1 rows on AVX2's 12 accumulators). Checked for each preset's plan
(whatever this CPU is) and, for this CPU's plan, against PyTorch."""
import numpy as np
import pytest
import torch

from tinylab import Device, Tensor
from tinylab.caps import DeviceCaps
from tinylab.codegen.heuristic import _lines_per_step, choose_opts, order_reduce
from tinylab.codegen.linearize import linearize
from tinylab.codegen.plan import Action, AxisKind, KernelPlan, Opt
from tinylab.engine.realize import REALIZED
from tinylab.renderers.c import CRenderer
from tinylab.schedule.schedule import schedule
from tinylab.target.cpu_target import PRESETS

from plan_runner import run_plan

RNG = np.random.default_rng(5)
PRESET_NAMES = ("sse4", "avx2", "avx512")


def _input_gradient(n=32, c=32, size=10, o=64, k=3):
    x = Tensor(RNG.standard_normal((n, c, size, size), dtype=np.float32), requires_grad=True)
    w = Tensor(RNG.standard_normal((o, c, k, k), dtype=np.float32), requires_grad=True)
    g = RNG.standard_normal((n, o, size - k + 1, size - k + 1), dtype=np.float32)
    (x.conv2d(w) * Tensor(g)).sum().backward()
    return x, w, g


def _conv_plan(node, lanes=None) -> KernelPlan:
    """The biggest kernel with three reduce axes (a conv's sum) of `node`'s schedule, its
    weights relaid for `lanes` when given."""
    caps = {"CPU": DeviceCaps("CPU", relayout_lanes=lanes)} if lanes else None
    plans = [KernelPlan.from_ast(k.ast) for k in
             schedule([node], realized=REALIZED, caps=caps).kernels]
    convs = [p for p in plans if p.n_reduce == 3]
    assert convs, [p.shape for p in plans]
    return max(convs, key=lambda p: int(np.prod(p.shape)))


def _reduce_sizes(plan: KernelPlan) -> list[int]:
    return [a.size for a in plan.axes if a.kind is AxisKind.REDUCE]


def _planned(base: KernelPlan, preset: str) -> KernelPlan:
    target = PRESETS[preset]
    return base.apply_all(choose_opts(base, CRenderer(target).supported_actions, target))


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_columns_vectorized_input_gradient_sums_channels_innermost(preset):
    """Not relaid (no caps): the columns are the vector, the weights a broadcast per input
    channel row; the weights' channel stride is 1, so the channel loop goes inside."""
    x, _, _ = _input_gradient()
    plan = _planned(_conv_plan(x.grad.node), preset)
    assert plan.vector_axis.origin == 3  # the input's columns
    assert _reduce_sizes(plan) == [3, 3, 64], plan.opts  # taps, then the 64 channels inside


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_relaid_input_gradient_sums_taps_innermost_over_batch_rows(preset):
    """Relaid: input channels are the vector and the output gradient is broadcast per image
    row; the taps read neighbouring values, so they go inside, the channel loop outside. The
    tile's rows are images: the weights' vector, padded per tap, is the same for every image
    and loads once, where rows of columns would each load it under their own mask."""
    x, _, _ = _input_gradient()
    lanes = PRESETS[preset].lanes_of(4)
    plan = _planned(_conv_plan(x.grad.node, lanes), preset)
    assert plan.vector_axis.origin == 1  # input channels
    assert _reduce_sizes(plan) == [64, 3, 3], plan.opts  # channels outside, taps inside
    rows = {a.origin for a in plan.axes if a.kind is AxisKind.UPCAST} - {1}
    assert rows == {0}, plan.opts  # the batch


def test_order_follows_the_cache_lines_each_step_touches():
    """A loop whose step moves every load to a new line runs outermost; ties keep the order
    the kernel had (a forward conv: input channels, then taps)."""
    x, w, _ = _input_gradient()
    target = PRESETS["avx2"]
    relaid = _conv_plan(x.grad.node, 8).apply(Opt(Action.VECTORIZE, 1, 8))
    lines = [(_lines_per_step(relaid, a.origin, target.cache_line_bytes), a.size)
             for a in relaid.axes if a.kind is AxisKind.REDUCE]
    assert max(lines)[1] == 64, lines  # each channel step: a new line of every load
    forward = _conv_plan((x.detach().conv2d(w.detach())).node)
    planned = _planned(forward, "avx2")
    assert _reduce_sizes(planned) == [32, 3, 3] and \
        not [o for o in planned.opts if o.action is Action.SWAP]
    assert order_reduce(forward, target).opts == forward.opts  # nothing to reorder unplanned


@pytest.mark.parametrize("relaid", [False, True])
def test_this_cpus_plan_computes_the_input_gradient(relaid):
    """This CPU's plan of each kind, compiled and run, against PyTorch."""
    device = Device["CPU"]
    target = device.target
    x, w, g = _input_gradient()
    base = _conv_plan(x.grad.node, target.lanes_of(4) if relaid else None)
    plan = base.apply_all(choose_opts(base, device.renderer.supported_actions, target))
    assert any(o.action is Action.SWAP for o in plan.opts) == relaid
    w_np = w.numpy()
    weights = w_np.transpose(2, 3, 0, 1) if relaid else w_np.transpose(1, 2, 3, 0)
    got = run_plan(plan, {g.size: g, weights.size: np.ascontiguousarray(weights)})
    expected = torch.nn.grad.conv2d_input(x.shape, torch.tensor(w_np), torch.tensor(g))
    np.testing.assert_allclose(got.reshape(x.shape), expected.numpy(), rtol=1e-4, atol=2e-3)


@pytest.mark.parametrize("preset", ["avx2", "avx512"])
def test_a_vector_whose_lanes_share_one_condition_loads_unmasked(preset):
    """The relaid weights' vector is padded per tap, the same for every lane, and always inside
    its buffer: one plain vector load zeroed by that condition, not a masked load."""
    x, _, _ = _input_gradient()
    target = PRESETS[preset]
    plan = _planned(_conv_plan(x.grad.node, target.lanes_of(4)), preset)
    text = CRenderer(target).render(linearize(plan, plan.name))
    assert "maskload" not in text and "_u*)(data" in text


@pytest.mark.parametrize("preset, rows", [("avx2", {1: 4, 0: 2}), ("sse4", {1: 4, 3: 2}),
                                          ("avx512", None)])
def test_one_vector_rows_spread_over_two_axes(preset, rows):
    """A forward conv vectorized along its 8 columns has one vector per tile row: 8 output
    channel rows x 1 would read 9 values per 8 FMAs, 4 channels x 2 images read 6 (AVX2 keeps
    12 accumulators; SSE's 4 lanes make the columns two vectors, its second axis). With 24
    (AVX-512) 8 rows still leave the second axis room, and the plan is the model's as before.
    This CPU's plan of it computes PyTorch's conv."""
    x = Tensor(RNG.standard_normal((32, 32, 10, 10), dtype=np.float32)).realize()
    w = Tensor(RNG.standard_normal((64, 32, 3, 3), dtype=np.float32)).realize()
    base = _conv_plan(x.conv2d(w).node)
    plan = _planned(base, preset)
    upcast = {a.origin: a.size for a in plan.axes if a.kind is AxisKind.UPCAST}
    if rows is not None:
        assert plan.vector_axis.origin == 3 and upcast == rows, plan.opts
    else:
        assert max(upcast.values()) == 8 and len(upcast) == 2, plan.opts
    device = Device["CPU"]
    mine = base.apply_all(choose_opts(base, device.renderer.supported_actions, device.target))
    weights = w.numpy().transpose(1, 2, 3, 0)  # the forward's copy: output channels last
    got = run_plan(mine, {x.numpy().size: x.numpy(), weights.size: weights})
    expected = torch.nn.functional.conv2d(torch.tensor(x.numpy()), torch.tensor(w.numpy()))
    np.testing.assert_allclose(got.reshape(expected.shape), expected.numpy(), rtol=1e-4,
                               atol=2e-3)
