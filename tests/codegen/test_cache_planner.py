"""The planner's register tiles and cache blocks for packed matmuls (schedule/packing.py) and
relaid conv weight gradients (schedule/relayout.py), for each x86 preset and L2 sizes from
256 KiB to 2 MiB: the tile keeps enough accumulators, each block fits the cache level it is
for (a reduce of at most 1024 may stay whole, its columns narrowed), a bigger L2 never gets a
smaller block; and plans made for each L2 compute what numpy computes (compiled for this CPU's
target with its L2 replaced)."""
import dataclasses

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from tinylab import Device, Tensor
from tinylab.caps import DeviceCaps
from tinylab.codegen.heuristic import choose_opts
from tinylab.codegen.heuristic_costs import WHOLE_REDUCE, WHOLE_REDUCE_LINES, accumulator_budget
from tinylab.codegen.panels import matmul_panel
from tinylab.codegen.plan import Action, AxisKind, KernelPlan
from tinylab.dtype import dtypes
from tinylab.engine.realize import REALIZED
from tinylab.ir import node as ir
from tinylab.ir.ops import Op
from tinylab.target.cpu_target import KIB, MIB, PRESETS
from tinylab.schedule.schedule import schedule

from plan_runner import run_plan

L2_SIZES = (256 * KIB, 512 * KIB, 1 * MIB, 2 * MIB)
PRESET_NAMES = ("sse4", "avx2", "avx512")
RNG = np.random.default_rng(30)


def _target(preset: str, l2: int, **fields):
    return dataclasses.replace(PRESETS[preset], cores=2, l2_bytes=l2, **fields)


def _packed_matmul(m, n, k, panel) -> KernelPlan:
    """The product kernel of x(m, k) @ w(k, n) after packing into `panel`-wide panels."""
    x = ir.buffer(object(), (m, k), dtypes.float32, "CPU")
    w = ir.buffer(object(), (k, n), dtypes.float32, "CPU")
    product = ir.alu(Op.MUL, ir.expand(ir.reshape(x, (m, 1, k)), (m, n, k)),
                     ir.expand(ir.reshape(ir.permute(w, (1, 0)), (1, n, k)), (m, n, k)))
    out = ir.reshape(ir.reduce(Op.REDUCE_SUM, product, (2,)), (m, n))
    kernels = schedule([out], caps={"CPU": DeviceCaps("CPU", panel_width=panel)}).kernels
    assert len(kernels) == 3  # two panel copies, then the product
    return KernelPlan.from_ast(kernels[-1].ast)


def _accumulators(plan: KernelPlan) -> int:
    total = 1
    for axis in plan.axes:
        if axis.kind is AxisKind.UPCAST:
            total *= axis.size
    return total


def _reduce_block(plan: KernelPlan, origin: int) -> int | None:
    return next((a.mult for a in plan.axes if a.kind is AxisKind.BLOCK and a.origin == origin),
                None)


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("shape", ((1024, 1024, 1024), (512, 4096, 4096)))
def test_packed_matmul_blocks_fit_every_l2(preset, shape):
    m, n, k = shape
    previous = 0
    for l2 in L2_SIZES:
        target = _target(preset, l2)
        panel = matmul_panel(target)
        plan = _packed_matmul(m, n, k, panel)
        plan = plan.apply_all(choose_opts(plan, list(Action), target))
        # FMA latency x 2 pipes: at least 8 independent sums, and room for the operands
        assert 8 <= _accumulators(plan) <= accumulator_budget(target), (l2, plan.opts)
        depth = _reduce_block(plan, 4) or k  # the packed kernel: (m/p, n/p, p, p, k)
        columns = (_reduce_block(plan, 1) or n // panel) * panel
        assert depth * columns * 4 <= l2 // 2, (l2, depth, columns)  # w's block: half the L2
        if depth == k:  # the reduce left whole (heuristic.block): its columns span 4 lines
            assert k <= WHOLE_REDUCE, (l2, plan.opts)
            assert columns * 4 >= WHOLE_REDUCE_LINES * target.cache_line_bytes, (l2, columns)
        else:
            assert depth * 2 * target.lanes_of(4) * 4 <= target.l1d_bytes  # a tile's slab: L1d
        assert depth * columns >= previous, (l2, depth, columns)
        previous = depth * columns


@pytest.mark.parametrize("measured", [(2, 4, 0), (4, 3, 0), (6, 2, 0)])
def test_a_measured_tile_wider_than_the_panel_keeps_its_accumulators(measured):
    """AVX2 packs into 16-float panels (two 8-lane vectors); a tile measured with more vectors
    per row (2x32 timed fastest on row-major operands) takes more rows instead, not 2x16."""
    target = _target("avx2", 512 * KIB, micro_kernel=measured)
    plan = _packed_matmul(1024, 1024, 1024, matmul_panel(target))
    plan = plan.apply_all(choose_opts(plan, list(Action), target))
    upcast = sorted(a.size for a in plan.axes if a.kind is AxisKind.UPCAST)
    assert plan.vector_axis.size == 8 and upcast == [2, 4]  # 4 rows x 2 vectors


@pytest.mark.parametrize("shape", [(2048, 1024, 512), (1024, 1024, 1024), (768, 384, 192)])
def test_a_measured_tile_takes_its_rows_from_the_rows_panel(shape):
    """A matmul taller than wide reads fewer bytes of columns than of rows, so the fewest bytes
    per tile row pointed at the panels of columns: 4 panels x 2 vectors x 1 row loads a vector
    per accumulator (2048x512 @ 512x1024, CPU_TARGET=avx2, AMD Zen 4: 18.1 ms; 4 rows of one
    rows panel x 2 vectors: 11.3 ms). The tile's rows are those that read broadcasts."""
    m, n, k = shape
    target = _target("avx2", 1 * MIB, micro_kernel=(2, 4, 0))
    panel = matmul_panel(target)
    plan = _packed_matmul(m, n, k, panel)
    plan = plan.apply_all(choose_opts(plan, list(Action), target))
    rows_axis = 2  # the packed kernel: (m/p, n/p, p rows, p columns, k)
    upcast = {a.origin: a.size for a in plan.axes if a.kind is AxisKind.UPCAST}
    assert upcast == {rows_axis: 4, 3: 2}, plan.opts  # 4 rows x 2 vectors of 8 lanes


def test_a_tall_matmul_on_this_cpu_computes_the_product():
    x = RNG.standard_normal((512, 128), dtype=np.float32)
    w = RNG.standard_normal((128, 256), dtype=np.float32)
    np.testing.assert_allclose((Tensor(x) @ Tensor(w)).numpy(), x.astype(np.float64) @ w,
                               rtol=1e-4, atol=1e-3)


def _weight_gradient_plan(batch: int, lanes: int) -> tuple[KernelPlan, object]:
    """The relaid weight-gradient kernel of conv2 (32 -> 32 channels, 5x5, 24x24 input)."""
    x = Tensor(RNG.standard_normal((batch, 32, 24, 24), dtype=np.float32)).realize()
    w = Tensor(RNG.standard_normal((32, 32, 5, 5), dtype=np.float32)).realize()
    g = Tensor(RNG.standard_normal((batch, 32, 20, 20), dtype=np.float32)).realize()
    (grad,) = (x.conv2d(w) * g).sum().gradient(w)
    caps = {"CPU": DeviceCaps("CPU", relayout_lanes=lanes)}
    sched = schedule([grad.node], realized=REALIZED, caps=caps)
    assert any(d.reason.value == "relayout" for d in sched.decisions), "no relaid copy"
    plans = [KernelPlan.from_ast(item.ast) for item in sched.kernels]
    (plan,) = [p for p in plans if p.shape[:4] == (32, 32, 5, 5) and p.has_reduce]
    return plan, (x, w, g)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_conv_weight_gradient_batch_block_fits_every_l2(preset):
    """One step of the batch reads a whole image (24 x 24 x 32 floats, 72 KiB) for every output
    tile: the batch block keeps the images of one block in half the L2, and grows with it."""
    image = 24 * 24 * 32 * 4
    chosen = []
    for l2 in L2_SIZES:
        target = _target(preset, l2)
        plan, _ = _weight_gradient_plan(16, target.lanes_of(4))
        plan = plan.apply_all(choose_opts(plan, list(Action), target))
        fitting = [d for d in (8, 4, 2) if d * image <= l2 // 2]  # divisors of the batch 16
        assert _reduce_block(plan, 4) == (fitting or [2])[0], (l2, plan.opts)  # else the least
        chosen.append(_reduce_block(plan, 4))
    assert chosen == sorted(chosen) and len(set(chosen)) > 1  # more L2, deeper blocks


@pytest.mark.parametrize("l2", L2_SIZES)
def test_plans_for_each_l2_compute_the_product(l2):
    target = dataclasses.replace(Device["CPU"].target, l2_bytes=l2)
    m, n, k = 512, 256, 384  # each operand and the output of a different size
    panel = matmul_panel(target)
    plan = _packed_matmul(m, n, k, panel)
    plan = plan.apply_all(choose_opts(plan, Device["CPU"].renderer.supported_actions, target))
    x = RNG.standard_normal((m, k), dtype=np.float32)
    w = RNG.standard_normal((k, n), dtype=np.float32)
    rows = x.reshape(m // panel, panel, k).transpose(0, 2, 1)
    columns = w.reshape(k, n // panel, panel).transpose(1, 0, 2)
    got = run_plan(plan, {rows.size: rows, columns.size: columns})
    np.testing.assert_allclose(got.reshape(m, n), x.astype(np.float64) @ w, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("l2", L2_SIZES)
def test_plans_for_each_l2_compute_the_weight_gradient(l2):
    target = dataclasses.replace(Device["CPU"].target, l2_bytes=l2)
    plan, (x, _, g) = _weight_gradient_plan(16, target.lanes_of(4))
    plan = plan.apply_all(choose_opts(plan, Device["CPU"].renderer.supported_actions, target))
    x_np, g_np = x.numpy(), g.numpy()
    channel_last = x_np.transpose(0, 2, 3, 1)  # the relaid copy: (batch, 24, 24, channels)
    got = run_plan(plan, {channel_last.size: channel_last, g_np.size: g_np})
    windows = sliding_window_view(x_np.astype(np.float64), (5, 5), axis=(2, 3))  # b c y x ky kx
    expected = np.einsum("boyx,bcyxij->ocij", g_np.astype(np.float64), windows)
    np.testing.assert_allclose(got.reshape(32, 32, 5, 5), expected, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_transposing_copy_reads_a_run_of_each_row(preset):
    """x.T.contiguous() (and a matmul's rows panel copy): the store is contiguous along the
    load's rows, so the planner upcasts the load's contiguous axis by the preset's lanes (4, 8,
    16): each step reads a run of every row instead of one element a row apart."""
    target = _target(preset, 1 * MIB)
    x = ir.buffer(object(), (256, 128), dtypes.float32, "CPU")  # 128 KiB: more than L1d
    (kernel,) = schedule([ir.contiguous(ir.permute(x, (1, 0)))]).kernels
    plan = KernelPlan.from_ast(kernel.ast)
    opts = choose_opts(plan, (Action.UPCAST, Action.VECTORIZE, Action.THREAD), target)
    upcasts = [o for o in opts if o.action == Action.UPCAST]
    lanes = target.lanes_of(4)
    assert [o.amount for o in upcasts] == [lanes], opts
    planned = plan.apply_all(opts)
    (tile,) = planned.axes_of(AxisKind.UPCAST)
    assert planned.axes[tile].size == lanes
    rows = [a for a in planned.axes if a.kind is AxisKind.GLOBAL and a.size == 256]
    assert rows, planned.axes  # the store's contiguous axis (the load's rows) stays a loop


PAD = ((1, 3), (0, 0))


@pytest.mark.parametrize("shape, chain, reference", [
    ((160, 96), lambda t: t.T.contiguous() * 2, lambda a: a.T * 2),
    ((120, 96), lambda t: t.pad(PAD).T[3:].contiguous(), lambda a: np.pad(a, PAD).T[3:]),
    ((3, 64, 96), lambda t: t.permute(0, 2, 1).reshape(3 * 96, 64)[5:250] + 1,
     lambda a: a.transpose(0, 2, 1).reshape(3 * 96, 64)[5:250] + 1),
])
def test_transposing_copies_match_numpy(shape, chain, reference):
    """Transposes bigger than L1d in composition, run on this CPU and compared with numpy: the
    first two are tiled (plain; after a pad, then a slice), the third (batched, reshaped across
    the batch, sliced) reads no axis contiguously and is left as it was."""
    x = RNG.standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(chain(Tensor(x)).numpy(), reference(x))
