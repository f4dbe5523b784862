"""BLOCK: a reduce split into cache-sized blocks that accumulate in the output buffer (and a global
block that narrows the columns one block covers). Every blocked plan must compute what numpy
computes, whatever the output buffer held before (NaN here), and the action must refuse kernels
whose stored value is not the reduce itself."""
import dataclasses

import numpy as np
import pytest

from tinylab import Device, Tensor
from tinylab.codegen import heuristic_costs
from tinylab.codegen.heuristic import choose_opts
from tinylab.codegen.linearize import linearize
from tinylab.codegen.plan import AxisKind, KernelPlan, Opt, OptError
from tinylab.engine.realize import REALIZED
from tinylab.runtimes.buffer import Buffer
from tinylab.target.cpu_target import PRESETS
from tinylab.schedule.schedule import schedule


def _kernel(fn, *arrays):
    tensors = [Tensor(a).realize() for a in arrays]
    (kernel,) = schedule([fn(*tensors).node], realized=REALIZED).kernels
    return KernelPlan.from_ast(kernel.ast)


def _run(plan: KernelPlan, inputs: list[np.ndarray], out_size: int) -> np.ndarray:
    """Compile the plan for the CPU and run it with the output buffer full of NaN."""
    device = Device["CPU"]
    program = linearize(plan)
    fn = device.runtime.load(device.runtime.compile(device.renderer.render(program))[0], plan.name)
    arrays = [np.full(out_size, np.nan, np.float32)] + [a.ravel() for a in inputs]
    buffers = [Buffer("CPU", a.size, _dtype(a), device.allocator).copyin(a) for a in arrays]
    fn(*[b.handle for b in buffers])
    return buffers[0].numpy()


def _dtype(a):
    from tinylab.dtype import dtypes
    return dtypes.from_numpy(a.dtype)


RNG = np.random.default_rng(0)
AVX512 = dataclasses.replace(PRESETS["avx512"], cores=2)  # the heuristic's choices are this target's
A = RNG.standard_normal((48, 64), dtype=np.float32)
B = RNG.standard_normal((64, 80), dtype=np.float32)

MATMUL_OPTS = {
    "block": [Opt("BLOCK", 2, 16)],
    "block 32": [Opt("BLOCK", 2, 32)],
    "tiled": [Opt("VECTORIZE", 1, 16), Opt("UPCAST", 0, 4), Opt("BLOCK", 2, 8)],
    "tiled threaded": [Opt("VECTORIZE", 1, 16), Opt("UPCAST", 0, 8), Opt("UPCAST", 1, 5),
                       Opt("BLOCK", 1, 16), Opt("THREAD", 0, 2)],
    "global and reduce blocks": [Opt("VECTORIZE", 1, 16), Opt("UPCAST", 0, 4),
                                 Opt("BLOCK", 0, 4), Opt("BLOCK", 3, 16), Opt("THREAD", 1, 2)],
    "unrolled": [Opt("BLOCK", 2, 16), Opt("UNROLL", 3, 4)],
    "padded vector": [Opt("VECTORIZE", 1, 16)],  # 80 columns -> 5 vectors
}


@pytest.mark.parametrize("name", list(MATMUL_OPTS))
def test_blocked_matmul_matches_numpy(name):
    plan = _kernel(lambda a, b: a @ b, A, B)
    opts = MATMUL_OPTS[name]
    if name == "padded vector":  # 48x70: the vector axis runs past the end, lanes masked
        b = B[:, :70].copy()
        plan = _kernel(lambda a, b: a @ b, A, b)
        blocked = plan.apply_all([Opt("VECTORIZE", 1, 16), Opt("UPCAST", 0, 4), Opt("BLOCK", 2, 16)])
        np.testing.assert_allclose(_run(blocked, [A, b], 48 * 70).reshape(48, 70), A @ b,
                                   rtol=1e-4, atol=1e-4)
        return
    blocked = plan.apply_all(opts)
    assert any(a.kind is AxisKind.BLOCK for a in blocked.axes)
    out = _run(blocked, [A, B], 48 * 80).reshape(48, 80)
    np.testing.assert_allclose(out, A @ B, rtol=1e-4, atol=1e-4)


def test_blocked_max_reduce():
    x = RNG.standard_normal((32, 256), dtype=np.float32)
    plan = _kernel(lambda t: t.max(axis=1), x).apply_all([Opt("UPCAST", 0, 4), Opt("BLOCK", 1, 64)])
    np.testing.assert_array_equal(_run(plan, [x], 32), x.max(axis=1))


def test_block_loop_runs_outside_the_output_loops_and_reads_back_partials():
    plan = _kernel(lambda a, b: a @ b, A, B).apply_all(
        [Opt("BLOCK", 1, 16), Opt("BLOCK", 3, 16), Opt("THREAD", 0, 2)])
    source = Device["CPU"].renderer.render(linearize(plan))
    lines = [line.strip() for line in source.splitlines()]
    loops = [line for line in lines if line.startswith("for (")]
    assert loops[0].startswith("for (int bidx0 = 0; bidx0 < 5;")   # columns in blocks of 16
    assert loops[1].startswith("for (int bidx1 = 0; bidx1 < 4;")   # the reduce in blocks of 16
    # one parallel region around the block loops; each block shares its rows out statically
    assert lines.index("#pragma omp parallel num_threads(2)") < lines.index(loops[0])
    pragma = lines.index("#pragma omp for schedule(static) nowait")
    assert lines[pragma + 1].startswith("for (int gidx0")            # threads inside the blocks
    assert "((bidx1<1)?0.0f:val" in source                        # first block: no partial
    assert "float* restrict data0" in source and "const float* restrict data0" not in source
    assert "inout" in linearize(plan).print().splitlines()[1]


def test_threads_take_the_steps_of_output_blocks_as_they_free_up():
    """Only an output loop blocked: every step of the thread loop writes outputs of its own, so the
    team shares each block's rows dynamically (a core slowed by other work takes fewer); with a
    reduce block too, statically (a thread keeps its rows' partial sums). Run 20 times from an
    output full of NaN: every output written, each once (numpy's answer)."""
    plan = _kernel(lambda a, b: a @ b, A, B)
    outputs_only = plan.apply_all([Opt("VECTORIZE", 1, 16), Opt("UPCAST", 0, 4),
                                   Opt("BLOCK", 0, 4), Opt("THREAD", 1, 2)])
    assert not any(a.kind is AxisKind.BLOCK and a.reduce for a in outputs_only.axes)
    both = plan.apply_all([Opt("BLOCK", 1, 16), Opt("BLOCK", 3, 16), Opt("THREAD", 0, 2)])
    for blocked, share in ((outputs_only, "dynamic"), (both, "static")):
        lines = [line.strip() for line in
                 Device["CPU"].renderer.render(linearize(blocked)).splitlines()]
        pragma = lines.index(f"#pragma omp for schedule({share}) nowait")
        assert lines[pragma + 1].startswith("for (int gidx0"), lines
        assert lines.index("#pragma omp parallel num_threads(2)") < pragma
    for _ in range(20):
        out = _run(outputs_only, [A, B], 48 * 80).reshape(48, 80)
        np.testing.assert_allclose(out, A @ B, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("fn, why", [
    (lambda a, b: (a @ b).relu(), "stores its reduce as it is"),
    (lambda a, b: a @ b * 2, "stores its reduce as it is"),
])
def test_block_refuses_a_kernel_with_work_after_the_reduce(fn, why):
    plan = _kernel(fn, A, B)
    with pytest.raises(OptError, match=why):
        plan.apply(Opt("BLOCK", 2, 16))


def test_block_amount_and_axis_checks():
    plan = _kernel(lambda a, b: a @ b, A, B)
    with pytest.raises(OptError, match="must divide"):
        plan.apply(Opt("BLOCK", 2, 24))
    with pytest.raises(OptError, match="must divide"):
        plan.apply(Opt("BLOCK", 2, 64))
    with pytest.raises(OptError, match="already blocks"):
        plan.apply_all([Opt("BLOCK", 2, 16), Opt("BLOCK", 3, 4)])
    with pytest.raises(OptError, match="reduce or global"):
        plan.apply_all([Opt("UPCAST", 0, 4), Opt("BLOCK", 3, 2)])
    with pytest.raises(OptError, match="same group"):
        plan.apply_all([Opt("BLOCK", 2, 16), Opt("SWAP", 2, 3)])


def _rowmajor(a, b):
    """matmul as broadcast MUL + SUM over row-major operands (`@` packs big ones first)."""
    return (a.unsqueeze(1) * b.T.unsqueeze(0)).sum(2)


def _block_of_b(plan: KernelPlan) -> tuple[int, int]:
    """(bytes of B one reduce block of a row-major matmul plan covers, its depth): the depth (a
    reduce BLOCK's, or the whole reduce where none) times the columns (all, or a global block's)."""
    reduce_block = [a for a in plan.axes if a.kind is AxisKind.BLOCK and a.reduce]
    depth = plan.shape[2] // reduce_block[0].size if reduce_block else plan.shape[2]
    column_block = [a for a in plan.axes if a.kind is AxisKind.BLOCK and not a.reduce]
    columns = plan.shape[1] // column_block[0].size if column_block else plan.shape[1]
    return depth * columns * 4, depth


@pytest.mark.parametrize("name", list(PRESETS))
def test_heuristic_blocks_big_matmuls_only(name):
    """Small matmuls are not blocked; big ones keep a block of B within half the target's L2
    (AVX-512's 1 MiB L2: 128 rows of a 1024-wide B; a 4096-wide B narrows its columns too),
    checked from the plan for every preset. The block is one of block_sizes deep, or the whole
    reduce where it is at most WHOLE_REDUCE deep and its columns span WHOLE_REDUCE_LINES lines."""
    target = dataclasses.replace(PRESETS[name], cores=2)
    actions = Device["CPU"].renderer.supported_actions
    small = _kernel(_rowmajor, A, B)
    assert not any(o.action == "BLOCK" for o in choose_opts(small, actions, target))
    for n in (1024, 4096):
        plan = _kernel(_rowmajor, np.zeros((n, n), np.float32), np.zeros((n, n), np.float32))
        blocked = plan.apply_all(choose_opts(plan, actions, target))
        nbytes, depth = _block_of_b(blocked)
        assert 0 < nbytes <= heuristic_costs.cache_bytes(target), blocked.opts
        if depth == n:
            columns = nbytes // (4 * depth)
            assert n <= heuristic_costs.WHOLE_REDUCE and \
                columns * 4 >= heuristic_costs.WHOLE_REDUCE_LINES * target.cache_line_bytes, blocked.opts
        else:
            assert depth in heuristic_costs.block_sizes(target), blocked.opts


def test_a_reduce_of_at_most_1024_is_left_whole_and_its_columns_narrowed():
    """AVX2's 1024^3: 64 columns (4 lines a row) hold the whole depth in half of its 512 KiB L2,
    so the reduce is not blocked (no partial sums read back); a 2048-deep reduce, or an L2 whose
    half holds fewer than 4 lines a row of the whole depth, is blocked as before. The plan gives
    numpy's answer."""
    actions = Device["CPU"].renderer.supported_actions

    def plan_of(m, k, n, **target):
        preset = dataclasses.replace(PRESETS["avx2"], cores=2, **target)
        plan = _kernel(_rowmajor, np.zeros((m, k), np.float32), np.zeros((k, n), np.float32))
        return plan.apply_all(choose_opts(plan, actions, preset))

    whole = plan_of(1024, 1024, 1024)
    assert [o.action for o in whole.opts].count("BLOCK") == 1, whole.opts
    assert _block_of_b(whole) == (1024 * 64 * 4, 1024)
    assert _block_of_b(plan_of(1024, 2048, 1024))[1] in heuristic_costs.block_sizes(PRESETS["avx2"])
    assert _block_of_b(plan_of(1024, 1024, 1024, l2_bytes=256 * 1024))[1] == 128
    a = RNG.standard_normal((1024, 1024), dtype=np.float32)
    b = RNG.standard_normal((1024, 1024), dtype=np.float32)
    plan = _kernel(_rowmajor, a, b).apply_all(whole.opts)
    out = _run(plan, [a, b], 1024 * 1024).reshape(1024, 1024)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=2e-3)


def test_blocked_matmul_through_the_engine():
    """The heuristic's BLOCK plan on a 512x768 @ 768x640 matmul, end to end."""
    a = RNG.standard_normal((512, 768), dtype=np.float32)
    b = RNG.standard_normal((768, 640), dtype=np.float32)
    plan = _kernel(_rowmajor, a, b)
    assert any(o.action == "BLOCK" for o in choose_opts(plan, ("UPCAST", "UNROLL", "THREAD",
                                                              "SWAP", "VECTORIZE", "BLOCK"),
                                                       AVX512))
    np.testing.assert_allclose((Tensor(a) @ Tensor(b)).numpy(), a @ b, rtol=1e-3, atol=1e-3)
