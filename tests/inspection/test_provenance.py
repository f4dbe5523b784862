"""Provenance to the line and the recorded passes (issue 17 items 1-2): each line of generated
C / OpenCL / CUDA source maps to the graph nodes it computes and back, every node keeps the
user's line, the Trace keeps each pass in order, and the static renderings show both.
References are independent of the map: the text of the rendered line (the `exp2` call), the op
of the linear-program instruction the renderer named the line after, the runner's own plan.
"""
from __future__ import annotations

import re
import sys

import numpy as np

import tinylab
from tinylab import Tensor
from tinylab.engine import trace as tracing
from tinylab.inspection import build_model, to_html, to_text
from tinylab.inspection.provenance import mapped_source

BACKENDS = ("CL", "CUDA")


def _traced(build):
    """A trace of build().numpy(); the user line recorded is where `build` was written."""
    with tinylab.trace() as recorded:
        build().numpy()
    return recorded, None


def _exp_trace():
    x = Tensor(np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)).realize()
    with tinylab.trace() as recorded:
        line = sys._getframe().f_lineno + 1
        y = (x * 3).exp() * 2   # not the output: the store is the MUL's line
        np.testing.assert_allclose(y.numpy(), np.exp(x.numpy() * 3) * 2, rtol=1e-5)
    return recorded, line


def _lines_of(model, kernel, language, node_id):
    program = model["programs"][kernel["name"]]
    return [number for number, indices in enumerate(program["lines"][language])
            if any(node_id in kernel["ast_nodes"][i] for i in indices)]


def _nodes_of(model, kernel, language, number):
    program = model["programs"][kernel["name"]]
    return {n for i in program["lines"][language][number] for n in kernel["ast_nodes"][i]}


def test_exp2_line_maps_to_the_exp2_node_and_back_in_every_language():
    recorded, line = _exp_trace()
    model = build_model(recorded, backends=BACKENDS)
    kernel = next(k for k in model["kernels"] if k["kind"] == "kernel")
    nodes = {n["id"]: n for n in model["nodes"]}
    exp2 = [n["id"] for n in model["nodes"] if n["op"] == "EXP2"]
    assert len(exp2) == 1
    # the user line recorded is this test's own line
    assert nodes[exp2[0]]["line"].startswith(f"test_provenance.py:{line}  y = (x * 3).exp() * 2")
    program = model["programs"][kernel["name"]]
    assert set(program["lines"]) >= {"C", "OpenCL", "CUDA"}
    for language in ("C", "OpenCL", "CUDA"):
        source = program["sources"][language].splitlines()
        assert len(program["lines"][language]) == len(source)
        calls = [n for n, text in enumerate(source)
                 if re.search(r"\bexp2f?\(|tl_exp2_\w+\(", text) and "static inline" not in text
                 and "=" in text and re.search(r"\b(alu|val)\d+", text)]
        assert calls, language
        for number in calls:   # source -> nodes
            assert exp2[0] in _nodes_of(model, kernel, language, number), (language, source[number])
        # nodes -> source: the EXP2 node became exactly the lines that call exp2
        assert _lines_of(model, kernel, language, exp2[0]) == calls, language


def test_every_named_value_line_maps_to_a_node_of_its_instruction_op():
    x = Tensor(np.arange(20, dtype=np.float32).reshape(4, 5)).realize()
    recorded, _ = _traced(lambda: (x - x.max(1, keepdim=True)).exp().sum(1).sqrt())
    for record in recorded.kernels:
        mapped = mapped_source(record.compiled)
        assert mapped["text"] == record.source
        ast_nodes = record.ast.toposort()
        program = record.compiled.program   # the program that was compiled, with its origins
        checked = 0
        for number, text in enumerate(mapped["text"].splitlines()):
            found = re.search(r"\b(alu)(\d+)(_\d+)? = ", text)
            if not found:
                continue
            op = program.instrs[int(found.group(2))].op
            ops = {ast_nodes[i].op.name for i in mapped["lines"][number]}
            assert op in ops, (record.name, text, ops)
            checked += 1
        accumulate = [n for n, text in enumerate(mapped["text"].splitlines())
                      if re.match(r"\s*acc\d+ = ", text)]
        for number in accumulate:   # the accumulator update computes the reduce
            ops = {ast_nodes[i].op.name for i in mapped["lines"][number]}
            assert ops & {"REDUCE_SUM", "REDUCE_MAX"}, (record.name, ops)
        assert checked + len(accumulate) > 0, record.name


def test_max_lines_map_to_the_max_and_its_user_line():
    x = Tensor(np.arange(20, dtype=np.float32).reshape(4, 5)).realize()
    line = sys._getframe().f_lineno + 1
    recorded, _ = _traced(lambda: x.max(1))
    model = build_model(recorded, backends=BACKENDS)
    kernel = model["kernels"][0]
    node = next(n for n in model["nodes"] if n["op"] == "REDUCE_MAX")
    assert node["line"].startswith(f"test_provenance.py:{line}")
    source = model["programs"][kernel["name"]]["sources"]["C"].splitlines()
    lines = _lines_of(model, kernel, "C", node["id"])
    assert any(">" in source[n] and "acc" in source[n] for n in lines)   # acc = max(acc, v)
    assert any(source[n].strip().startswith("data0[") for n in lines)   # the store of the max


def test_passes_recorded_in_order_with_every_action():
    x = Tensor(np.arange(4096, dtype=np.float32).reshape(64, 64)).realize()
    recorded, _ = _traced(lambda: (x @ x).relu())
    record = recorded.kernels[0]
    assert record.opts, "the heuristic applies actions to a 64x64 matmul"
    titles = [title for title, _ in record.steps]
    actions = [f"action {i}: {opt}" for i, opt in enumerate(record.opts, 1)]
    assert titles == ["kernel AST", "plan before actions", *actions, "plan as linearized",
                      "linear program", f"source ({record.language})"]
    texts = dict(record.steps)
    assert texts["plan as linearized"] == record.passes["plan"]   # the plan the kernel ran with
    assert texts[actions[-1]] == record.compiled.plan.describe()
    assert texts["linear program"] == record.passes["linear"]
    assert texts[f"source ({record.language})"] == record.source
    steps = build_model(recorded)["programs"][record.name]["steps"]
    assert [s["title"] for s in steps] == titles
    assert steps[0]["diff"] == ""
    for before, after in zip(steps, steps[1:]):   # every diff turns one step into the next
        removed = [l[1:] for l in after["diff"].splitlines() if l.startswith("-")]
        added = [l[1:] for l in after["diff"].splitlines() if l.startswith("+")]
        assert all(l in before["text"].splitlines() for l in removed)
        assert all(l in after["text"].splitlines() for l in added)


def test_static_html_and_text_show_the_gutter_and_the_passes():
    recorded, line = _exp_trace()
    model = build_model(recorded, timings=False)
    html = to_html(model)
    assert "<script" not in html
    assert 'class="tinylab-gutter"' in html
    assert f"EXP2 ← test_provenance.py:{line}" in html
    steps = model["programs"][model["kernels"][0]["name"]]["steps"]
    assert html.count('class="tinylab-pass"') == len(steps)
    text = to_text(model, source=True)
    gutter = [l for l in text.splitlines() if "EXP2 ←" in l]
    assert gutter and all("exp2" in l.split("|", 1)[1] for l in gutter)
    assert f"passes ({len(steps)} steps)" in text


def test_static_html_shows_the_chosen_backends_source_and_marks_keywords_once():
    """`%tinygrad --backend CUDA` shows CUDA's source in the static picture (not the C that ran,
    whose passes stay in the widget); keywords are <b> and comments <i>, no <span> per token."""
    recorded, _ = _exp_trace()
    model = build_model(recorded, timings=False, backends=BACKENDS)
    ran = to_html(model)
    cuda = to_html(model, source_language="CUDA")
    assert "C source" in ran and 'class="tinylab-passes"' in ran and "__global__" not in ran
    assert "CUDA source" in cuda and "<b>__global__ void </b>" in cuda
    assert "(of the C kernel that ran)" in cuda and 'class="tinylab-passes"' not in cuda
    assert "<b>for </b>(<b>int </b>" in ran and "<span style=\"color:" not in ran.split("<svg")[0]
    assert not re.search(r"<span[^>]*>(for|int|float|void)</span>", ran)
    # as a browser reads them (a newline right after <pre> is dropped), label row i sits beside
    # source line i: the EXP2 label beside a line that calls exp2
    gutter, source = re.search(r'class="tinylab-gutter"[^>]*>(.*?)</pre>.*?<pre[^>]*>(.*?)</pre>',
                               ran, re.S).groups()
    labels = gutter.removeprefix("\n").split("\n")
    lines = re.sub(r"<[^>]+>", "", source).removeprefix("\n").split("\n")
    rows = [number for number, label in enumerate(labels) if label.startswith("EXP2")]
    assert rows and all("exp2" in lines[number] for number in rows), (labels, lines)


def test_nothing_is_recorded_without_a_trace():
    x = Tensor(np.ones((3, 3), dtype=np.float32)).realize()
    y = (x + 1).exp()
    assert y.node not in tracing.SOURCE_LINES       # no frame looked up
    y.numpy()
    with tinylab.trace() as recorded:
        z = (x + 2).exp()
        lazy = z.node
        z.numpy()
    assert lazy in tracing.SOURCE_LINES and recorded.kernels[0].steps


def test_an_untraced_step_looks_up_no_frame_and_prints_no_pass(monkeypatch):
    """The untraced path never reaches the recording code (so tracing cannot slow it)."""
    from tinylab.engine import realize

    def refuse(*_args, **_kwargs):
        raise AssertionError("recording code ran without a trace")

    x = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4)).realize()
    monkeypatch.setattr(tracing, "user_frame", refuse)
    monkeypatch.setattr(tracing, "graph_lines", refuse)
    monkeypatch.setattr(realize, "_kernel_record", refuse)
    y = ((x * 2).exp().sum(1) + x.max(1)).numpy()   # compiles and runs new kernels
    np.testing.assert_allclose(y, np.exp(x.numpy() * 2).sum(1) + x.numpy().max(1), rtol=1e-5)


def test_a_node_reused_from_an_earlier_trace_shows_the_current_line():
    """Hash-consing returns the node an earlier trace built; the current trace names its own line
    (and the static views show it as location and code)."""
    from tinylab.inspection import summary_text
    x = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4)).realize()
    with tinylab.trace():
        first = (x * 3).exp()            # the earlier "cell" builds it, realizes nothing
    line = sys._getframe().f_lineno + 2
    with tinylab.trace() as recorded:
        again = (x * 3).exp()            # the same nodes, hash-consed
        np.testing.assert_allclose((again + 1).numpy(), np.exp(x.numpy() * 3) + 1, rtol=1e-5)
    model = build_model(recorded)
    exp_node = next(n for n in model["nodes"] if n["op"] == "EXP2")
    assert exp_node["line"].startswith(f"test_provenance.py:{line}  again = (x * 3).exp()")
    assert again.node is first.node
    assert f"test_provenance.py:{line}  again = (x * 3).exp()" in summary_text(model)
