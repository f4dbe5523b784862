"""The compile stages as pure functions (engine/compile_record.py): plan -> linearize -> render each
hand on a frozen value (KernelPlan, LinearProgram, RenderedKernel) that nothing downstream writes;
the partial-sum split (codegen/partial_sums.py) is the plan stage's last step, so the plan BEAM
times, the plan the record prints and the plan linearize builds are one. Checked against numpy
(float64) and against the stages run again by hand."""
import dataclasses

import numpy as np
import pytest

from tinylab import Tensor
from tinylab.codegen import beam
from tinylab.codegen.linearize import linearize
from tinylab.codegen.partial_sums import plan_partial_sums
from tinylab.codegen.plan import KernelPlan, Opt
from tinylab.engine import compile_record as pipeline
from tinylab.engine.devices import Device
from tinylab.engine.realize import REALIZED
from tinylab.schedule.schedule import schedule
from tinylab.target.build_facts import RenderedKernel

RNG = np.random.default_rng(7)


def _long_sum():
    """A row sum of 2 x 65536 float32: past LONG_CHAIN additions per accumulator however the
    heuristic tiles it."""
    data = RNG.standard_normal((2, 1 << 16)).astype(np.float32) + 1
    x = Tensor(data).realize()
    (kernel,) = schedule([x.sum(axis=1).node], realized=REALIZED).kernels
    return kernel.ast, data


@pytest.mark.parametrize("device", ["CPU", "CL", "PYTHON"])
def test_each_stage_hands_on_a_frozen_value(device, monkeypatch):
    ast, _ = _long_sum()
    seen = {}
    real_linearize = pipeline.linearize

    def spy_linearize(plan, *args, **kwargs):
        seen["plan"] = plan
        seen["program"] = real_linearize(plan, *args, **kwargs)
        return seen["program"]
    monkeypatch.setattr(pipeline, "linearize", spy_linearize)
    record = pipeline.compile_record(device, ast, False, 0)
    plan, program = seen["plan"], seen["program"]
    assert plan is record.linearized and program is record.program
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.threads = 4
    with pytest.raises(dataclasses.FrozenInstanceError):
        program.launch = None
    with pytest.raises(dataclasses.FrozenInstanceError):
        program.params[0].size = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.facts.threads = 2
    assert isinstance(plan.axes, tuple) and isinstance(program.instrs, tuple)
    for _, step in record.plans:   # every plan the stage made is frozen too
        with pytest.raises(dataclasses.FrozenInstanceError):
            step.opts = ()
    kernel = Device[device].renderer.render_kernel(program)   # rendering again: the same value
    assert isinstance(kernel, RenderedKernel) and kernel.source == record.source
    assert kernel.facts == record.facts
    again = linearize(plan, program.name, origins=True,
                      fold_launch=Device[device].renderer.fold_launch)
    assert again == program                     # linearize wrote nothing into the plan


def test_an_action_gives_a_new_frozen_plan():
    ast, _ = _long_sum()
    plan = KernelPlan.from_ast(ast)
    upcast = plan.apply(Opt("UPCAST", 0, 2))
    assert plan.opts == () and upcast.opts == (Opt("UPCAST", 0, 2),)
    with pytest.raises(dataclasses.FrozenInstanceError):
        upcast.axes = ()
    draft = plan.copy()   # a copy is the one thing built in place, then frozen
    draft.threads = 2
    assert draft.frozen().threads == 2 and plan.threads == 1


def test_the_partial_sum_split_is_part_of_the_recorded_plan():
    ast, data = _long_sum()
    record = pipeline.compile_record("CPU", ast, False, 0)
    finished = record.linearized
    assert finished.partials_planned and finished.partial_axis is not None
    assert finished == plan_partial_sums(record.plan)          # the same step, the same plan
    assert plan_partial_sums(finished) is finished              # a finished plan stays as it is
    assert finished.name == record.plan.name == record.program.name   # the kernel keeps its name
    printed = dict(record.steps())["plan as linearized"]
    assert "partial sums restart in" in printed
    assert "partial sums" not in record.plan_text(record.plan)  # the chosen plan, before the step
    got = Tensor(data).sum(axis=1).numpy()
    want = data.astype(np.float64).sum(axis=1)
    assert np.abs(got - want).max() / np.abs(want).max() < 1e-6


def test_beam_times_the_plan_with_its_partial_sums(tmp_path, monkeypatch):
    ast, _ = _long_sum()
    timed = []
    real = beam.linearize
    monkeypatch.setattr(beam, "linearize",
                        lambda plan, *a, **k: timed.append(plan) or real(plan, *a, **k))
    plan = KernelPlan.from_ast(ast)
    beam.beam_search(plan, Device["CPU"], width=1, cache_dir=tmp_path, rounds=1)
    candidates = timed[1:]   # the first builds the buffers from the plain plan
    assert candidates and all(p.partials_planned for p in candidates)
    assert any(p.partial_axis is not None for p in candidates)
