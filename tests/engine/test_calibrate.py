"""Calibration (engine/calibrate.py): the fastest measured micro-kernel is kept per CPU key and
read back, a new CPU key measures again, no timing falls back to the model, and the heuristic
plans from the measured tile. A fake clock decides the winner: nothing is compiled here except
in the test that runs a measured plan against numpy."""
import dataclasses

import numpy as np
import pytest

from tinylab import Device
from tinylab.codegen.heuristic import choose_opts
from tinylab.codegen.linearize import linearize
from tinylab.codegen.plan import Action, AxisKind
from tinylab.engine import calibrate
from tinylab.runtimes.buffer import Buffer
from tinylab.target.cpu_target import PRESETS
from tinylab.dtype import dtypes

AVX2 = dataclasses.replace(PRESETS["avx2"], model="Test CPU A", cores=2)
ACTIONS = list(Action)


class FakeRuntime:
    def __init__(self, version="cc 1.0"):
        self._version = version

    def version(self):
        if self._version is None:
            raise OSError("no compiler")
        return self._version


class FakeRenderer:
    supported_actions = ACTIONS


class FakeClock:
    """Seconds per candidate from a table (others 1 s); records what it was asked to time."""

    def __init__(self, table, others=1.0):
        self.table, self.asked, self.others = table, [], others

    def __call__(self, candidate, run):
        self.asked.append(candidate)
        return self.table.get(candidate, self.others)


@pytest.fixture(autouse=True)
def fresh():
    calibrate.forget()
    yield
    calibrate.forget()


def test_candidate_tiles_fit_the_registers():
    assert {(6, 2), (4, 3)} <= set(calibrate.candidate_tiles(PRESETS["avx2"]))
    assert (14, 2) in calibrate.candidate_tiles(PRESETS["avx512"])
    for preset in PRESETS.values():
        for rows, vectors in calibrate.candidate_tiles(preset):
            assert rows * vectors + vectors + 1 <= preset.vector_registers


def test_winner_is_kept_and_read_back_from_the_cache(tmp_path):
    clock = FakeClock({(4, 3, 0): 0.5, (4, 3, 256): 0.4})
    first = calibrate.calibrated(AVX2, FakeRenderer(), FakeRuntime(), tmp_path, clock)
    assert first.micro_kernel == (4, 3, 256)
    assert "4x24 block 256" in first.measured and "4x24 block 256" in first.describe()
    assert () in clock.asked and (6, 2, 0) in clock.asked  # the model's plan is a candidate
    assert len(list(tmp_path.glob("*.json"))) == 1
    calibrate.forget()  # a new process: the file answers, nothing is timed
    again = FakeClock({(6, 2, 0): 0.1})
    second = calibrate.calibrated(AVX2, FakeRenderer(), FakeRuntime(), tmp_path, again)
    assert second.micro_kernel == (4, 3, 256) and again.asked == []
    assert second.key == first.key


def test_a_new_cpu_key_calibrates_again(tmp_path):
    calibrate.calibrated(AVX2, FakeRenderer(), FakeRuntime(), tmp_path,
                         FakeClock({(6, 2, 0): 0.5}))
    other = dataclasses.replace(AVX2, model="Test CPU B")
    clock = FakeClock({(4, 3, 0): 0.5})
    assert calibrate.calibrated(other, FakeRenderer(), FakeRuntime(), tmp_path,
                                clock).micro_kernel[:2] == (4, 3)
    assert clock.asked  # measured, not read from A's file
    compiler = FakeClock({(14, 1, 0): 0.5})  # another compiler is another key too
    assert calibrate.calibrated(AVX2, FakeRenderer(), FakeRuntime("cc 2.0"), tmp_path,
                                compiler).micro_kernel[:2] == (14, 1)
    assert len(list(tmp_path.glob("*.json"))) == 3


def test_the_model_wins_when_it_is_fastest(tmp_path):
    chosen = calibrate.calibrated(AVX2, FakeRenderer(), FakeRuntime(), tmp_path,
                                  FakeClock({(): 0.1}))
    assert chosen.micro_kernel == () and "micro-kernel model" in chosen.measured


def test_timing_impossible_falls_back_to_the_model(tmp_path):
    def broken(candidate, run):
        raise RuntimeError("no clock")
    chosen = calibrate.calibrated(AVX2, FakeRenderer(), FakeRuntime(), tmp_path, broken)
    assert chosen.micro_kernel == () and "not timed" in chosen.measured
    assert choose_opts(_matmul(), ACTIONS, chosen) == choose_opts(_matmul(), ACTIONS, AVX2)
    no_compiler = calibrate.calibrated(AVX2, FakeRenderer(), FakeRuntime(None), tmp_path)
    assert no_compiler.micro_kernel == () and "no C compiler" in no_compiler.measured


def test_budget_stops_the_search(tmp_path):
    clock = FakeClock({})
    calibrate.calibrated(AVX2, FakeRenderer(), FakeRuntime(), tmp_path, clock, budget_s=0)
    assert clock.asked == [()]


def _matmul():
    return calibrate.matmul_plan(6)


def test_heuristic_plans_from_the_measured_tile():
    plan = _matmul()  # 240 x 384 x 2048
    for tile, rows, columns in (((6, 2, 0), 6, 16), ((4, 3, 0), 4, 24), ((14, 1, 0), 12, 8)):
        planned = plan.apply_all(choose_opts(plan, ACTIONS, dataclasses.replace(AVX2,
                                                                                micro_kernel=tile)))
        upcast = [a for a in planned.axes if a.kind is AxisKind.UPCAST]
        vector = planned.vector_axis
        assert vector.size == 8 and not vector.reduce
        by_origin = {a.origin: a.size for a in upcast}
        assert by_origin.get(0) == rows  # the largest divisor of 240 at most the measured rows
        assert by_origin.get(vector.origin, 1) * vector.size == columns


def test_a_measured_plan_computes_the_product():
    device = Device["CPU"]
    target = dataclasses.replace(device.target, micro_kernel=(4, 3, 128), cores=1)
    plan = calibrate.matmul_plan(4)
    plan = plan.apply_all(choose_opts(plan, [a for a in ACTIONS if a != Action.THREAD], target))
    program = linearize(plan, plan.name)
    fn = device.runtime.load(device.runtime.compile(device.renderer.render(program))[0],
                             plan.name)
    rng = np.random.default_rng(0)
    m, k, n = plan.shape[0], calibrate.DEPTH, calibrate.COLUMNS
    x = rng.standard_normal((m, k), dtype=np.float32)
    w = rng.standard_normal((k, n), dtype=np.float32)
    arrays = [np.full(m * n, np.nan, np.float32), x.ravel(), w.ravel()]
    buffers = [Buffer("CPU", a.size, dtypes.float32, device.allocator).copyin(a) for a in arrays]
    fn(*[b.handle for b in buffers])
    np.testing.assert_allclose(buffers[0].numpy().reshape(m, n), x.astype(np.float64) @ w,
                               rtol=1e-3, atol=1e-2)


def test_a_near_tie_goes_to_the_bigger_tile(tmp_path):
    rows = {c: calibrate.matmul_plan(c[0]).shape[0] for c in [(6, 2, 0), (2, 4, 0)]}
    # the 2x4 tile measured 2% faster (noise on a busy machine): the 6x2 tile is kept
    clock = FakeClock({(6, 2, 0): rows[6, 2, 0] / 1.0, (2, 4, 0): rows[2, 4, 0] / 1.02},
                      others=1e6)
    assert calibrate.calibrated(AVX2, FakeRenderer(), FakeRuntime(), tmp_path,
                                clock).micro_kernel[:2] == (6, 2)


@pytest.mark.parametrize("faster", [(6, 2, 0), (6, 2, 128)])
def test_a_near_tie_of_one_tile_goes_to_the_first_timed_whichever_is_faster(tmp_path, faster):
    """Reduce blocks of the winning tile within noise of each other: the same choice every run
    (the tile as first timed, without a block of its own), not the one that happened to win."""
    rows = calibrate.matmul_plan(6).shape[0]
    table = {(6, 2, 0): rows, (6, 2, 128): rows, (6, 2, 256): rows * 1.2}
    table[faster] = rows / 1.03  # 3% faster: within TIE
    clock = FakeClock(table, others=1e6)
    chosen = calibrate.calibrated(AVX2, FakeRenderer(), FakeRuntime(), tmp_path, clock)
    assert (6, 2, 128) in clock.asked and (6, 2, 256) in clock.asked
    assert chosen.micro_kernel == (6, 2, 0)


def test_a_reduce_block_that_wins_beyond_noise_is_kept(tmp_path):
    rows = calibrate.matmul_plan(6).shape[0]
    clock = FakeClock({(6, 2, 0): rows, (6, 2, 128): rows / 1.2}, others=1e6)
    chosen = calibrate.calibrated(AVX2, FakeRenderer(), FakeRuntime(), tmp_path, clock)
    assert chosen.micro_kernel == (6, 2, 128)


def test_a_packed_panel_of_two_vectors_takes_the_measured_rows():
    """A packed AVX2 matmul (panels of 16 floats: two 8-lane vectors per row) with a measured
    6x16 tile: both vectors of the panel and the most rows up to 6 that divide the panel."""
    from tinylab.engine.realize import REALIZED
    from tinylab.schedule.schedule import schedule
    from tinylab import Tensor
    from tinylab.codegen.plan import KernelPlan
    a = Tensor(np.ones((512, 512), np.float32)).realize()
    from tinylab.caps import DeviceCaps
    caps = {a.device: DeviceCaps(a.device, panel_width=16)}
    sched = schedule([(a @ a).node], realized=REALIZED, caps=caps)
    plan = KernelPlan.from_ast(sched.kernels[-1].ast)
    target = dataclasses.replace(AVX2, micro_kernel=(6, 2, 0))
    planned = plan.apply_all(choose_opts(plan, ACTIONS, target))
    upcast = {a.origin: a.size for a in planned.axes if a.kind is AxisKind.UPCAST}
    vector = planned.vector_axis
    assert vector.size == 8 and upcast.get(vector.origin) == 2
    assert sorted(upcast.values()) == [2, 4]  # 6 does not divide the 16-row panel: 4 rows


def test_progress_is_shown_while_it_runs(tmp_path):
    from tinylab.engine import progress
    events = []
    progress.add_listener(events.append)
    try:
        calibrate.calibrated(AVX2, FakeRenderer(), FakeRuntime(), tmp_path, FakeClock({}))
    finally:
        progress.remove_listener(events.append)
    mine = [e for e in events if e.kind == "calibrate"]
    assert mine[0].done == 0 and mine[-1].finished and mine[-1].done == len(mine) - 2
    assert "timing micro-kernels of Test CPU A" in mine[1].describe()


def test_calibration_leaves_the_roofs_where_they_were(tmp_path, monkeypatch):
    """The roofs are the machine's: a calibrated target reads the same best-ever file as the model's
    (python -m tinylab.device runs calibrated, the notebooks not; both show one figure per roof),
    while a different machine or ISA keeps its own."""
    from tinylab.engine import peak
    monkeypatch.setattr(peak.config, "cache_dir", lambda: tmp_path)
    plain = dataclasses.replace(PRESETS["avx2"], cores=2)
    timed = dataclasses.replace(plain, micro_kernel=(2, 4, 512), measured="micro-kernel 2x32")
    path = peak._cache_path(type("Spec", (), {"name": "CPU", "target": timed})())
    assert timed.key != plain.key and timed.machine_key == plain.machine_key == plain.key
    assert path == tmp_path / "peak" / f"CPU-{plain.key}-best-v{peak.CACHE_VERSION}.json"
    assert dataclasses.replace(plain, cores=1).machine_key != plain.machine_key
    assert PRESETS["sse4"].machine_key != PRESETS["avx2"].machine_key
