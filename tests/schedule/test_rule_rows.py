"""A fusion rule added as one row, here only: "never fuse into a kernel whose output has more than
LIMIT elements". The cut happens (kernel counts against fuse=False and the plain schedule), the
decisions carry the row's reason and sentence (schedule, inspection model and text), the what-if
switch turns it off, and the cut schedule computes what numpy does."""
from enum import Enum
from types import SimpleNamespace

import numpy as np
import pytest

from tinylab import Tensor
from tinylab.engine.realize import REALIZED
from tinylab.inspection.what_if import what_if
from tinylab.inspection.what_if_run import prepare_schedule, run_prepared
from tinylab.ir.node import prod
from tinylab.ir.ops import MOVEMENT, Op
from tinylab.schedule.fusion import SchedulerOptions
from tinylab.schedule.fusion_rules import FUSION_RULES, FusionRule, Scenario
from tinylab.schedule.schedule import schedule
from tinylab.inspection.text import summary_text
from tinylab.inspection.model import build_model

LIMIT = 100


class RowReason(str, Enum):
    BIG_OUTPUT = "big_output"


def _big_outputs(step) -> dict:
    """In every kernel whose output has more than LIMIT elements, each fused op gets a buffer."""
    found = {}
    for out, region in step.regions.items():
        if prod(out.shape) <= LIMIT:
            continue
        for node in region.nodes:
            if node is not region.root and node.op not in MOVEMENT and node.op is not Op.DETACH:
                found[node] = f"the kernel's output has {prod(out.shape)} > {LIMIT} elements"
    return found


BIG_OUTPUT = FusionRule(RowReason.BIG_OUTPUT, "nothing is fused into a kernel with a big output",
                        check=_big_outputs, switch="big_output", scenario=Scenario(
                            "no_big_output", "big outputs fused", "the big-output rule off"))


@pytest.fixture
def big_output_rule(monkeypatch):
    monkeypatch.setattr(FUSION_RULES, "rows", FUSION_RULES.rows + (BIG_OUTPUT,))


def _inputs(n):
    rng = np.random.default_rng(0)
    hosts = [rng.standard_normal((n, n)).astype(np.float32) for _ in range(2)]
    return hosts, [Tensor(h).realize() for h in hosts]


def _chain(x, y):
    return ((x + y) * 2).relu().exp()


def test_the_row_cuts_explains_and_switches_off(big_output_rule):
    (xh, yh), (x, y) = _inputs(16)   # 256 elements > LIMIT
    out = _chain(x, y).node
    cut = schedule([out], realized=REALIZED)
    plain = schedule([out], SchedulerOptions(rules_off=frozenset({"big_output"})),
                     realized=REALIZED)
    unfused = schedule([out], SchedulerOptions(fuse=False), realized=REALIZED)
    assert len(plain.kernels) == 1
    assert len(cut.kernels) == len(unfused.kernels) >= 4   # one kernel per op, as fuse=False
    mine = [d for d in cut.decisions if d.reason is RowReason.BIG_OUTPUT]
    assert len({d.producer for d in mine}) == len(cut.kernels) - 1   # each kernel but the last
    assert not any(d.merged for d in mine)
    assert all("> 100 elements" in d.describe() for d in mine)
    assert FUSION_RULES.explanation("big_output") == BIG_OUTPUT.explanation
    # the what-if the row offers: switched off, back to one kernel
    record = SimpleNamespace(schedule=cut, outputs=[out])
    answers = {a["key"]: a for a in what_if(record, {})}
    assert list(answers)[:5] == ["fuse_off", "no_fuse_after_reduce", "no_fuse_into_reduce",
                                 "no_recompute", "no_big_output"]
    off = answers["no_big_output"]
    assert off["kernels"] == 1 and off["delta_kernels"] == 1 - len(cut.kernels)
    # the cut schedule computes the same numbers
    items, buffers = prepare_schedule(cut, {})
    run_prepared(items, buffers)
    got = buffers[id(cut.outputs[out])].numpy().reshape(16, 16)
    np.testing.assert_allclose(got, np.exp(np.maximum((xh + yh) * 2, 0)), rtol=1e-5)


def test_small_outputs_are_untouched(big_output_rule):
    _, (x, y) = _inputs(8)   # 64 elements <= LIMIT
    assert len(schedule([_chain(x, y).node], realized=REALIZED).kernels) == 1


def test_the_inspector_explains_the_new_reason(big_output_rule):
    import tinylab
    _, (x, y) = _inputs(16)
    # the schedule cache off: a schedule cut before the rule was added is not reused
    with tinylab.Context(DEV="CPU", SCHEDULE_CACHE=0), tinylab.trace() as recorded:
        _chain(x, y).numpy()
    model = build_model(recorded, timings=False)
    reasons = {d["reason"]: d["explanation"] for d in model["decisions"] if not d["merged"]}
    assert reasons["big_output"] == BIG_OUTPUT.explanation
    assert f"big_output: {BIG_OUTPUT.explanation}" in summary_text(model)


def test_every_reason_has_one_row():
    from tinylab.schedule.fusion import Reason
    assert sorted(row.reason.value for row in FUSION_RULES.rows) == sorted(r.value for r in Reason)
