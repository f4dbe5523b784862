"""How the C renderer writes vector code, checked on kernels from real graphs: broadcasts the
compiler folds into a load, lane-invariant work done once instead of once per lane, and a padded
vector over a sliding-window view kept as one masked load. Each plan's output is checked against
numpy too, so the text checks never bless a wrong kernel."""
import re

import numpy as np

from tinylab import Device, Tensor
from tinylab.codegen.linearize import linearize
from tinylab.codegen.plan import KernelPlan, Opt
from tinylab.engine.realize import REALIZED
from tinylab.renderers.c import CRenderer
from tinylab.target.cpu_target import PRESETS
from tinylab.runtimes.buffer import Buffer
from tinylab.schedule.fusion import SchedulerOptions
from tinylab.schedule.schedule import schedule

RNG = np.random.default_rng(0)
LANES = Device["CPU"].target.lanes_of(4)  # one vector register of float32 on this CPU
# text checks of 16-lane vectors render for the AVX-512 preset, whatever this CPU is; the code
# that runs is rendered for this CPU
AVX512 = CRenderer(PRESETS["avx512"])


def _biggest_kernel(out: Tensor, **options) -> KernelPlan:
    kernels = schedule([out.node], SchedulerOptions(**options), realized=REALIZED).kernels
    plans = [KernelPlan.from_ast(k.ast) for k in kernels]
    return max(plans, key=lambda p: int(np.prod(p.shape)))


def _source_and_run(plan: KernelPlan, inputs: list[np.ndarray], out_size: int):
    from tinylab.dtype import dtypes
    device = Device["CPU"]
    program = linearize(plan)
    source = device.renderer.render(program)
    fn = device.runtime.load(device.runtime.compile(source)[0], plan.name)
    arrays = [np.zeros(out_size, np.float32)] + [a.ravel() for a in inputs]
    buffers = [Buffer("CPU", a.size, dtypes.from_numpy(a.dtype), device.allocator).copyin(a)
               for a in arrays]
    fn(*[b.handle for b in buffers])
    return source, buffers[0].numpy()


def test_broadcast_is_a_subtraction_of_zero():
    a = RNG.standard_normal((32, 32), dtype=np.float32)
    b = RNG.standard_normal((32, 32), dtype=np.float32)
    plan = _biggest_kernel(Tensor(a).realize() @ Tensor(b).realize())
    plan = plan.apply_all([Opt("VECTORIZE", 1, LANES), Opt("UPCAST", 0, 4)])
    source, out = _source_and_run(plan, [a, b], 32 * 32)
    np.testing.assert_allclose(out.reshape(32, 32), a @ b, rtol=1e-4, atol=1e-4)
    assert f"-(float{LANES}){{}})*" in source and f"(float{LANES}){{}}+val" not in source


def _source_and_compare(plan: KernelPlan, opts: list, renderer=None) -> str:
    """The optimized plan's C source (for `renderer`, default this CPU's), after checking it
    computes what the plain plan computes on the same random buffers on this CPU (the plain
    plan is checked against PyTorch by the parity suites)."""
    from tinylab.codegen.beam import _Timer
    timer = _Timer(Device["CPU"], plan)
    optimized = plan.apply_all(opts)
    np.testing.assert_allclose(timer.output(optimized), timer.output(plan), rtol=1e-4,
                               atol=1e-4)
    return (renderer or Device["CPU"].renderer).render(linearize(optimized))


def test_lane_invariant_work_is_done_once():
    """A conv reading relu(x + bias) inside its reduce (the scheduler's recompute limit off, so
    the relu is fused): the relu does not depend on the output-channel lanes, so it is scalar
    code, not one copy per lane."""
    tx, tb, tw = (Tensor(RNG.standard_normal(s, dtype=np.float32)).realize()
                  for s in ((2, 4, 6, 6), (4, 1, 1), (16, 4, 3, 3)))
    plan = _biggest_kernel((tx + tb).relu().conv2d(tw), recompute_limit=0)
    assert len(plan.loads) == 3  # x, bias, weights: the relu is computed in the conv's loop
    source = _source_and_compare(plan, [Opt("VECTORIZE", 1, LANES)])
    assert f"_{LANES - 1} = " not in source  # no per-lane copies (alu<n>_0, alu<n>_1, ...)
    assert "(0.0f<alu" in source


def test_padded_vector_over_windows_stays_one_masked_load():
    """A conv weight gradient vectorized over kx (5 lanes used of 8, or of two 4-lane vectors
    where registers are 4 lanes wide): the dead lanes would
    index outside the window view (div/mod noise); they continue the live lanes' step instead,
    so the load is one masked vector load."""
    tx = Tensor(RNG.standard_normal((2, 3, 9, 9), dtype=np.float32)).realize()
    tg = Tensor(RNG.standard_normal((2, 4, 5, 5), dtype=np.float32)).realize()
    tw = Tensor(RNG.standard_normal((4, 3, 5, 5), dtype=np.float32), requires_grad=True)
    (tx.conv2d(tw) * tg).sum().backward()
    plan = _biggest_kernel(tw.grad)
    assert plan.shape == (4, 3, 5, 5, 2, 5, 5)
    source = _source_and_compare(plan, [Opt("VECTORIZE", 3, min(8, LANES))])
    assert "tl_maskload" in source and "%" not in source.split("void ")[-1]


def test_lane_invariant_load_in_bounds_needs_no_guard():
    """A conv input gradient vectorized over output columns: each weight is one scalar for all
    lanes, whose lanes are valid or not. Its index never leaves the weight buffer, so it is read
    unguarded (no OR of the lanes' conditions) and the lane mask alone zeroes the invalid
    lanes."""
    tx = Tensor(RNG.standard_normal((2, 32, 24, 24), dtype=np.float32), requires_grad=True)
    tw = Tensor(RNG.standard_normal((32, 32, 5, 5), dtype=np.float32)).realize()
    tg = Tensor(RNG.standard_normal((2, 32, 20, 20), dtype=np.float32)).realize()
    (tx.conv2d(tw) * tg).sum().backward()
    plan = _biggest_kernel(tx.grad)
    assert plan.shape == (2, 32, 24, 24, 5, 5, 32)  # conv2 of the CNN, batch 2
    source = _source_and_compare(plan, [Opt("VECTORIZE", 3, LANES)])
    ones = [line for line in source.splitlines() if " one" in line and "= " in line]
    assert ones and all("?" not in line for line in ones)


def _threefry_reference(count: np.ndarray, half: int, seed: int, key: int) -> np.ndarray:
    """Threefry-2x32 (20 rounds) in numpy uint32 arithmetic, as Random123 specifies it."""
    rotations = (13, 15, 26, 6, 17, 29, 16, 24)
    k0, k1 = np.uint32(seed), np.uint32(key)
    keys = (k0, k1, k0 ^ k1 ^ np.uint32(0x1BD11BDA))
    x0, x1 = count + k0, count + np.uint32(half) + k1
    for block in range(5):
        for r in rotations[4 * (block % 2):4 * (block % 2) + 4]:
            x0 = x0 + x1
            x1 = ((x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))) ^ x0
        x0 = x0 + keys[(block + 1) % 3]
        x1 = x1 + keys[(block + 2) % 3] + np.uint32(block + 1)
    return np.concatenate([x0, x1])


def test_random_bits_stay_uint32_vectors():
    """Threefry over 16 lanes: the counters come from lane-varying masks (arange as binary
    digits), then ~200 uint32 adds, shifts and xors. As one uint16 vector per value it is a
    tenth of the text of 16 scalar copies (and compiles that much faster)."""
    from tinylab.dtype import dtypes
    Tensor.manual_seed(5)
    n = 998
    plan = _biggest_kernel(Tensor._random_bits(n, "CPU"))
    plan = plan.apply_all([Opt("VECTORIZE", 0, 16)])
    device = Device["CPU"]
    pinned = AVX512.render(linearize(plan))
    # no per-lane scalar copies (alu7_0 ... alu7_15); values every lane shares (the key schedule
    # from the seed and the call's key) are one scalar each
    assert "uint16 alu" in pinned and not re.search(r"unsigned int alu\d+_\d+ =", pinned)
    source = device.renderer.render(linearize(plan))
    fn = device.runtime.load(device.runtime.compile(source)[0], plan.name)
    key = 1  # the first draw after manual_seed: the call counter is 1
    out, counter = (Buffer("CPU", size, dtypes.uint32, device.allocator).copyin(
        np.array(value, np.uint32)) for size, value in ((n, [0] * n), (1, [key])))
    fn(out.handle, counter.handle)
    half = (n + 1) // 2
    expected = _threefry_reference(np.arange(half, dtype=np.uint32), half, 5, key)[:n]
    np.testing.assert_array_equal(out.numpy(), expected)


def test_lane_varying_condition_is_one_vector_mask():
    """arange built from padded constants: each lane's digit is `valid ? 2^k : 0`. The validity
    is one int16 mask (a vector compare), so the sum stays a vector."""
    plan = _biggest_kernel(Tensor.arange(1000) * 3)
    source = _source_and_compare(plan, [Opt("VECTORIZE", 0, 16)], AVX512)
    assert "int16 alu" in source and "_15 = " not in source


def test_float_to_uint32_cast_stays_per_lane():
    """Out of range, C's scalar and vector float -> uint32 conversions differ: lane by lane."""
    values = np.linspace(0, 4e9, 64, dtype=np.float32)
    plan = _biggest_kernel(Tensor(values).realize().cast("uint32") + 1)
    source = _source_and_compare(plan, [Opt("VECTORIZE", 0, 16)])
    assert "__builtin_convertvector" not in source


def test_lane_mask_keeps_the_tighter_of_two_bounds_on_one_index():
    """A lane whose validity says `ridx0 < 2 && ridx0 < 3` (the gradient of a padded, strided
    max pool) took the bound it saw last, 3, and read a window that was not there: the input
    gradient had inf/NaN where PyTorch has 0."""
    import torch
    x = RNG.standard_normal((2, 4, 7, 6)).astype(np.float32)
    weight = RNG.standard_normal((2, 4, 4, 3)).astype(np.float32)
    ours = Tensor(x, requires_grad=True)
    (ours.max_pool2d(3, stride=2, padding=1) * Tensor(weight)).sum().backward()
    theirs = torch.tensor(x, requires_grad=True)
    (torch.nn.functional.max_pool2d(theirs, 3, stride=2, padding=1) *
     torch.tensor(weight)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=1e-6)


def test_tile_vectors_are_held_in_registers_for_each_preset():
    """A matmul register tile reads each column vector once per row of the tile: the renderer
    pins it to a register (an empty asm with the target's vector-register constraint) so the
    compiler does not fold the load into every FMA; a load read once (the row's broadcast) and
    an elementwise kernel's loads (no reduce loop) are left alone. The kernel that runs (this
    CPU's renderer) still matches numpy."""
    import dataclasses
    from tinylab.renderers.c import register_constraint
    from tinylab.target.cpu_target import GENERIC
    a = RNG.standard_normal((32, 48), dtype=np.float32)
    b = RNG.standard_normal((48, 64), dtype=np.float32)
    plan = _biggest_kernel(Tensor(a).realize() @ Tensor(b).realize())
    tile = plan.apply_all([Opt("VECTORIZE", 1, 4), Opt("UPCAST", 0, 4)])
    targets = {**PRESETS, "riscv": dataclasses.replace(GENERIC, arch="riscv64")}
    expected = {"avx512": "v", "avx2": "x", "sse4": "x", "neon": "w", "riscv": None}
    for name, constraint in expected.items():
        target = targets[name]
        assert register_constraint(target) == constraint, name
        source = CRenderer(target).render(linearize(tile))
        pins = [line for line in source.splitlines() if "__asm__" in line]
        if constraint is None:
            assert not pins, name
            continue
        assert len(pins) == 1 and f'"+{constraint}"(val' in pins[0], (name, pins)
        pinned = pins[0].split("(val")[1].split(")")[0]
        assert source.count(f"val{pinned})") + source.count(f"*val{pinned}") >= 4, name
    source, out = _source_and_run(tile, [a, b], 32 * 64)
    np.testing.assert_allclose(out.reshape(32, 64), a @ b, rtol=1e-4, atol=1e-4)
    assert "__asm__" in source or register_constraint(Device["CPU"].target) is None
    x = RNG.standard_normal(1024, dtype=np.float32)
    elementwise = _biggest_kernel(Tensor(x).realize() * Tensor(x).realize() + 1)
    text = AVX512.render(linearize(elementwise.apply_all([Opt("VECTORIZE", 0, 16)])))
    assert "__asm__" not in text
