"""The inspection model against the Trace and the scheduler it came from: kernels, decisions and
cut links match the schedule; what-if answers match re-scheduling by hand and the fusion facts in
REFERENCE.md; JSON round-trips; timings appear only when asked; static output is deterministic.
"""
import json
import subprocess
import sys

import numpy as np
import pytest

import tinylab
from tinylab import Context, Tensor, inspection
from tinylab.inspection.model import build_model, forced_code
from tinylab.ir.ops import Op
from tinylab.schedule.fusion import SchedulerOptions
from tinylab.schedule.schedule import schedule


def traced(build):
    x = Tensor(np.arange(20, dtype=np.float32).reshape(4, 5)).realize()
    y = Tensor(np.ones((5, 4), dtype=np.float32)).realize()
    with Context(DEV="CPU"), tinylab.trace() as recorded:
        build(x, y).numpy()
    return recorded


@pytest.fixture(scope="module")
def softmax():
    return traced(lambda x, y: x.softmax(1))


def test_kernels_and_decisions_match_the_schedule(softmax):
    model = build_model(softmax)
    record = softmax.realizes[0]
    assert [k["name"] for k in model["kernels"]] == [k.name for k in softmax.kernels]
    assert len(model["kernels"]) == len(record.schedule.kernels) == 3
    assert len(model["decisions"]) == len(record.schedule.decisions)
    for kernel, item in zip(model["kernels"], record.schedule.items):
        assert len(kernel["fused"]) == len([n for n in item.fused if n.op is not Op.CONST])
        assert kernel["flops"] == softmax.kernels[kernel["position"]].flops
    assert model["realizes"][0]["forced_code"].startswith("build(x, y).numpy()")


def test_cut_links_are_the_reads_of_other_kernels_outputs(softmax):
    model = build_model(softmax)
    items = softmax.realizes[0].schedule.items
    expected = sum(1 for item in items for read in item.reads
                   if any(other.output is read for other in items))
    cuts = [link for link in model["graph"]["links"]
            if link["cut"] and link["reason"] != "requested"]
    assert len(cuts) == expected == 3
    assert {link["reason"] for link in cuts} == {"broadcast_reduce"}


def test_what_if_matches_rescheduling_by_hand(softmax):
    record = softmax.realizes[0]
    answers = {a["key"]: a for a in build_model(softmax)["realizes"][0]["what_if"]}
    by_hand = schedule(record.outputs, SchedulerOptions(fuse=False),
                       realized=record.schedule.leaves)
    assert answers["fuse_off"]["kernels"] == len(by_hand.kernels) > 3
    assert answers["fuse_off"]["delta_bytes"] > 0
    assert answers["fuse_off"]["new_cut_count"] > 0


def test_what_if_tells_the_recompute_story():
    # REFERENCE.md: `t = (x+1).exp(); t + t.T` is 1 kernel (cheap producer recomputed)
    recorded = traced(lambda x, y: (lambda t: t + t.T)((x[:, :4] + 1).exp()))
    model = build_model(recorded)
    assert len(model["kernels"]) == 1
    answers = {a["key"]: a for a in model["realizes"][0]["what_if"]}
    assert answers["no_recompute"]["kernels"] == 2
    assert answers["no_fuse_after_reduce"]["delta_kernels"] == 0


def test_reduce_materialized_when_read_transposed():
    # REFERENCE.md: `m = x @ y; m + m.T` is 2 kernels
    recorded = traced(lambda x, y: (lambda m: m + m.T)(x @ y))
    model = build_model(recorded)
    assert len(model["kernels"]) == 2
    assert any(not d["merged"] and d["reason"] != "requested" for d in model["decisions"])


def test_json_round_trips_and_timings_only_when_asked(softmax):
    plain = json.loads(inspection.to_json(softmax))
    assert plain == json.loads(json.dumps(build_model(softmax, timings=False)))
    assert all("run_s" not in k for k in plain["kernels"])
    timed = build_model(softmax, timings=True)
    assert all(k["run_s"] is not None and "cache_hit" in k for k in timed["kernels"])


def test_static_renderings_are_deterministic(softmax):
    assert inspection.to_html(softmax) == inspection.to_html(softmax)
    assert inspection.summary_text(softmax) == inspection.summary_text(softmax)
    assert inspection.to_dot(softmax, expand=True) == inspection.to_dot(softmax, expand=True)


def test_nodes_carry_the_user_line_that_built_them(softmax):
    model = build_model(softmax)
    lines = {n["op"]: n["line"] for n in model["nodes"] if n["line"]}
    assert "x.softmax(1)" in lines["REDUCE_MAX"]


def test_other_backends_are_rendered_as_tabs(softmax):
    model = build_model(softmax, backends=("CL", "CUDA"))
    program = next(iter(model["programs"].values()))
    assert list(program["sources"])[:1] == ["C"]
    assert "__global__" in program["sources"]["CUDA"]
    assert "__kernel" in program["sources"]["OpenCL"]


def test_backends_without_line_maps_are_rendered_as_tabs_too(softmax):
    """The Python renderer keeps no line map: its tab is render_for's source, whole; WGSL (a C
    family renderer) comes with its line map."""
    from tinylab.engine.realize import render_for
    model = build_model(softmax, backends=("WEBGPU", "PYTHON"))
    record = softmax.kernels[0]
    program = model["programs"][record.name]
    assert list(program["sources"]) == ["C", "WGSL", "Python"]
    assert "@compute" in program["sources"]["WGSL"]
    assert program["sources"]["WGSL"] == render_for(record.ast, "WEBGPU")
    assert program["sources"]["Python"] == render_for(record.ast, "PYTHON")
    assert set(program["lines"]) == {"C", "WGSL"}


@pytest.mark.parametrize("forced, expected", [
    ("train.py:12  y.numpy()", "y.numpy()  (train.py:12)"),
    ("1234567.py:3  c.numpy()", "c.numpy()  (line 3)"),        # an ipykernel cell file
    ("<ipython-input-4-abc>:2  c.item()", "c.item()  (line 2)"),
    ("%tinygrad  x.softmax(1)", "x.softmax(1)  (%tinygrad)"),
    ("?", "?"),
])
def test_forced_code(forced, expected):
    assert forced_code(forced) == expected


def test_large_kernels_are_traced_without_printing_exponential_trees():
    with Context(DEV="CPU"), tinylab.trace() as first:
        Tensor.rand(3, 3).numpy()
    with Context(DEV="CPU"), tinylab.trace() as second:
        Tensor.rand(3, 3).numpy()
    plans = [k.passes["plan"] for k in first.kernels]
    assert any(plan.startswith("(loop IR not printed") for plan in plans)
    assert all(k.compile_s == 0.0 and k.cache_hit for k in second.kernels)


def test_inspection_imports_nothing_from_jupyter():
    code = ("import sys, tinylab, tinylab.inspection; bad = [m for m in sys.modules if m.split('.')[0]"
            " in ('IPython', 'ipywidgets', 'anywidget', 'tinylab_widgets', 'traitlets')];"
            " assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
