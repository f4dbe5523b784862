"""What the inspector shows is what ran (issue 28): over a corpus of kernels (a CNN train step,
softmax, long reduces that partial sums split, a BLOCKed matmul, a symbolic kernel, GPU renders),
every displayed plan has the loops, in order and with their extents, of the source compiled, the
displayed source is byte-identical to it (hashes), and a traced run renders each kernel once.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import tinylab
from tinylab import Context, Tensor, Variable, nn
from tinylab.engine import compile_record as pipeline
from tinylab.engine.compile_record import source_hash
from tinylab.engine.realize import record_for
from tinylab.inspection import build_model
from tinylab.renderers.cstyle import CStyleRenderer
from tinylab.schedule.schedule import schedule

PLAN_LOOP = re.compile(r"^\s*for (\w+) in 0\.\.(\S+) \((\w+)\):$", re.M)
C_LOOP = re.compile(r"\bfor \((?:int|long long|long|unsigned) (\w+) = 0; \1 < ([^;]+);")
# a vector value's loop over its lanes (evenly spaced lanes stored or read, a fold into one value):
# part of one vector operation in C, not a loop of the plan ("lane" is reserved, renderers/c.py)
PLAN_FOR = re.compile(r"\bfor \((?!int lane = )")
SYMBOL = re.compile(r"<(\w+)\[[^\]]*\](?:=\d+)?>")
GPU_KINDS = ("global", "local", "group")   # work-items and work-groups: no loop in GPU source


def plan_loops(text: str) -> list[tuple[str, str, str]]:
    """(name, extent, kind) of each `for` line of a printed plan; `<i[1-64]>` reads `i`."""
    return [(name, SYMBOL.sub(r"\1", extent), kind) for name, extent, kind in PLAN_LOOP.findall(text)]


def source_loops(source: str) -> list[tuple[str, str]]:
    return [(name, extent.strip()) for name, extent in C_LOOP.findall(source) if name != "lane"]


def check_program(program: dict, compiled) -> None:
    """A model program entry against the compile record its kernel ran from: the plan shown
    has the compiled loops, in order, with their extents; the source shown is the one compiled."""
    shown = plan_loops(program["passes"]["plan"])
    assert [name for name, _, _ in shown] == [name for name, _, _ in compiled.program.loops]
    language = program["language"]
    assert source_hash(program["sources"][language]) == compiled.compiled_hash
    assert program["source_hashes"][language] == compiled.compiled_hash
    if language == "C":  # the kernel's own loops: not a helper's lane loop (no masked store
        # or vector sqrt on SSE4: they loop over the lanes) declared before the kernel
        body = compiled.source[re.search(r"^void ", compiled.source, re.M).start():]
        assert [(n, e) for n, e, _ in shown] == source_loops(body), program["name"]
        assert len(shown) == len(PLAN_FOR.findall(body)), program["name"]


def _traced_programs(run) -> list:
    """Run under a trace; check every distinct kernel's program entry; the kernel records."""
    with tinylab.trace() as recorded:
        run()
    model = build_model(recorded, timings=False, counterfactuals=False)
    first = {}
    for record in recorded.kernels:
        first.setdefault(record.name, record)
    for name, record in first.items():
        check_program(model["programs"][name], record.compiled)
    assert first
    return recorded.kernels


def test_a_long_reduce_split_by_partial_sums_shows_the_loops_it_compiled():
    x = Tensor.rand(64, 65536).realize()
    kernels = _traced_programs(lambda: x.sum(axis=1).numpy())
    reduce = next(k for k in kernels if k.name.startswith("r_"))
    loops = plan_loops(reduce.passes["plan"])
    assert [kind for _, _, kind in loops].count("reduce") == 2, reduce.passes["plan"]
    assert len(source_loops(reduce.source)) == len(loops)
    np.testing.assert_allclose(x.sum(axis=1).numpy(), x.numpy().sum(axis=1), rtol=1e-4)


def test_softmax_and_a_cnn_train_step_show_what_they_compiled():
    a = Tensor.rand(30, 20).realize()
    _traced_programs(lambda: ((a @ a.T).relu().sum(axis=0).softmax()).numpy())
    conv = nn.Conv2d(2, 4, 3)
    optimizer = nn.optim.SGD(nn.state.get_parameters(conv), lr=0.01)
    image = Tensor.rand(4, 2, 8, 8).realize()

    def step():
        optimizer.zero_grad()
        conv(image).relu().mean().backward()
        optimizer.step()
    with Tensor.train():
        _traced_programs(step)


def test_a_blocked_matmul_and_a_symbolic_kernel_compile_what_their_record_shows():
    from tinylab.engine.realize import REALIZED, compile_kernel
    a = Tensor.rand(768, 768).realize()
    kernels = schedule([(a @ a).node], realized=REALIZED).kernels
    blocked = 0
    for item in kernels:
        runner = compile_kernel("CPU", item.ast)
        record = runner.record
        shown = plan_loops(record.passes()["plan"])
        assert [(n, str(e)) for n, e, _ in record.program.loops] == [(n, e) for n, e, _ in shown]
        assert len(shown) == len(PLAN_FOR.findall(runner.source))
        assert record.compiled_hash == source_hash(runner.source)
        blocked += any(kind == "block" for _, _, kind in shown)
    assert blocked, "a 768x768 matmul blocks its reduce on this target"
    assert record.settings["chosen_by"] and record.launch["loops"]
    i = Variable("i", 1, 64).bind(5)
    x = Tensor.rand(64, 8).realize()
    (symbolic,) = _traced_programs(lambda: x[:i].sum(axis=0).numpy())
    assert source_loops(symbolic.source) == [("ridx0", "i")]


@pytest.mark.parametrize("device", ["NULL:CL", "NULL:CUDA"])
def test_gpu_renders_are_display_records_of_the_same_pipeline(device):
    x = Tensor.rand(64, 65536).realize()
    (item,) = [k for k in schedule([x.sum(axis=1).node], realized={}).kernels]
    record = record_for(item.ast, device)
    shown = plan_loops(record.passes()["plan"])
    assert [(n, str(e), k) for n, e, k in record.program.loops] == shown
    assert [k for _, _, k in shown].count("reduce") >= 1
    serial = [(name, extent) for name, extent, kind in shown if kind not in GPU_KINDS]
    names = {name for name, _, _ in shown}   # a group reduce's own fold loop (part<n>) aside
    assert [loop for loop in source_loops(record.source) if loop[0] in names] == serial
    assert record_for(item.ast, device) is record      # made once
    assert record.source_hash == source_hash(record.source) and record.compiled_hash is None


def test_a_traced_run_renders_each_kernel_once(monkeypatch):
    """Compiling, tracing, the model (its passes, provenance, other backends) and a second
    build_model render each (kernel, backend) once: views read records."""
    counts: dict = {}
    original = CStyleRenderer.render_kernel

    def counting(renderer, program):
        key = (type(renderer).__name__, program.name, len(program.instrs))
        counts[key] = counts.get(key, 0) + 1
        return original(renderer, program)
    monkeypatch.setattr(CStyleRenderer, "render_kernel", counting)
    monkeypatch.setattr(CStyleRenderer, "render", lambda *a: pytest.fail("rendered again"))
    x = Tensor(np.arange(48, dtype=np.float32).reshape(6, 8) / 7).realize()
    with Context(NOOPT=0), tinylab.trace() as recorded:
        (x.exp().sum(axis=1) * 3).softmax().numpy()
    model = build_model(recorded, backends=("CL", "CUDA"))
    build_model(recorded, backends=("CL", "CUDA"))
    assert model["programs"] and counts
    assert max(counts.values()) == 1, counts
    assert len({renderer for renderer, _, _ in counts}) == 3   # C, OpenCL, CUDA


def test_a_record_without_a_stage_says_so():
    from tinylab.inspection.sources import program_entry
    x = Tensor(np.arange(6, dtype=np.float32)).realize()
    with tinylab.trace() as recorded:
        (x * 2).numpy()
    (record,) = recorded.kernels
    record.passes, record.steps, record.compiled = {}, [], None
    entry = program_entry(record)
    assert entry["passes"]["plan"] == pipeline.NOT_RECORDED
    assert entry["steps"][0]["text"] == pipeline.NOT_RECORDED
    assert entry["sources"]["C"] == record.source


@pytest.mark.parametrize("device", ["CL", "WEBGPU"])
def test_a_gpu_launch_is_the_launch_its_record_shows(device, launch_dims):
    """The runtime launches the LaunchDims the renderer folded once and the record keeps (no
    second folding at launch), and to_text shows those dimensions."""
    if not tinylab.Device[device].available:
        pytest.skip(f"{device} does not run here")
    from tinylab.inspection.text import to_text
    seen = launch_dims
    data = np.random.default_rng(1).random((48, 300), dtype=np.float32)
    x = Tensor(data, device=device).realize()
    seen.clear()
    with tinylab.trace() as recorded:
        got = x.sum(axis=1).numpy()
    np.testing.assert_allclose(got, data.sum(axis=1), rtol=1e-5)
    (kernel,) = recorded.kernels
    record = kernel.compiled
    assert seen == [record.program.launch] and seen[0] is record.program.launch
    launch = record.launch
    outputs = [size for _, size, kind in record.program.loops if kind == "global"]
    assert int(np.prod(launch["grid"])) == int(np.prod(outputs))   # a work-group per output run
    assert launch["global_size"] == [g * b for g, b in zip(launch["grid"], launch["block"])]
    shown = "x".join(map(str, launch["grid"]))
    assert f"launch: grid {shown} work-groups" in to_text(build_model(recorded, timings=False,
                                                                      counterfactuals=False),
                                                          source=True)


def test_a_cpu_record_has_no_gpu_launch():
    x = Tensor.rand(8, 8).realize()
    with tinylab.trace() as recorded:
        (x + 1).numpy()
    launch = recorded.kernels[0].compiled.launch
    assert launch["grid"] is None and launch["loops"]
