"""Real-browser tests of the memory, roofline and measured what-if views (headless Debian Chromium
via Playwright; the fixtures of conftest.py, the pages of pages.py): clicking the largest buffer
lights up the kernels that write and read it in the trace's schedule; the roofline draws one dot
per timed kernel; in JupyterLab a what-if "run" button gets the kernel process's measurement into
its row; and a 5,000-node trace with these panels still draws its collapsed graph in under 2 s.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import ARTIFACTS  # noqa: E402
from pages import inspector_state, lab_notebook, standalone, wait_for_file  # noqa: E402
from synthetic import synthetic_model  # noqa: E402

from tinylab import Tensor, trace  # noqa: E402
from tinylab_widgets import Inspector  # noqa: E402

pytestmark = pytest.mark.xdist_group("browser")


def _largest_new_slot(record):
    """(position of writers, positions of readers) of the largest buffer the realize made."""
    slots = {}
    for position, item in enumerate(record.schedule.items):
        for argument, slot in enumerate(item.slots):
            if slot.existing is None:
                slots.setdefault(id(slot), (slot, []))[1].append((position, argument))
    slot, uses = max(slots.values(), key=lambda entry: entry[0].nbytes)
    return ({p for p, a in uses if a == 0}, {p for p, a in uses if a > 0}), slot.nbytes


def test_memory_and_roofline_in_the_page(browser, tmp_path):
    rng = np.random.default_rng(3)
    x = Tensor(rng.standard_normal((32, 48)).astype(np.float32)).realize()
    w = Tensor(rng.standard_normal((48, 24)).astype(np.float32)).realize()
    with trace() as recorded:
        hidden = (x @ w).relu().contiguous()
        (hidden.softmax(1) * 2).sum(0).numpy()
    inspector = Inspector(recorded)
    (writers, readers), nbytes = _largest_new_slot(recorded.realizes[0])
    expected = {f"k{p}" for p in writers | readers}   # one realize: kernel ids follow positions
    timed = [k for k in recorded.kernels if k.run_s and k.flops and k.bytes_moved]
    with standalone(browser, tmp_path, inspector_state(inspector.data)) as page:
        memory = page.locator(".tl-memory")
        largest = memory.locator(".tl-memory-largest-item").first
        assert largest.inner_text().startswith(_format_bytes(nbytes))
        largest.click()
        lit = page.locator(".tl-row.tl-selected, .tl-row.tl-related")
        assert {lit.nth(i).get_attribute("data-id") for i in range(lit.count())} == expected
        boxes = page.locator(".tl-box-kernel.tl-selected, .tl-box-kernel.tl-related")
        assert {boxes.nth(i).get_attribute("data-id") for i in range(boxes.count())} == expected
        assert memory.locator(".tl-memory-row.tl-selected").count() == 1
        assert "written by" in memory.locator(".tl-memory-users").inner_text()
        assert page.locator(".tl-roof-point").count() == len(timed)
        page.locator(".tl-roof-point").first.click()
        assert page.locator(".tl-row.tl-selected").count() == 1
        percent = page.locator(".tl-row .tl-col-percent_of_peak").first.inner_text()
        assert percent.endswith(("% M", "% C"))
        ARTIFACTS.mkdir(exist_ok=True)
        memory.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "inspector-memory.png"), full_page=True)


def _format_bytes(value: float) -> str:
    """common.js formatBytes."""
    units, index = ["B", "KB", "MB", "GB"], 0
    while abs(value) >= 1024 and index < len(units) - 1:
        value, index = value / 1024, index + 1
    return (str(round(value)) if index == 0 else f"{value:.1f}") + " " + units[index]


def _format_seconds(value: float) -> str:
    """common.js formatSeconds."""
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.1f} µs"


SETUP = """import json, threading, time
import numpy as np
from tinylab import Tensor, trace
from tinylab.schedule.schedule import schedule
from tinylab_widgets import Inspector
x = Tensor(np.arange(40, dtype=np.float32).reshape(4, 10)).realize()"""
SHOW = """with trace() as recorded:
    x.softmax(1).numpy()
inspector = Inspector(recorded)
inspector"""
EXPECT = """record = recorded.realizes[0]
direct = schedule(record.outputs, record.schedule.options.with_(fuse=False),
                  realized=record.schedule.leaves)
open('expected.json', 'w').write(json.dumps(len(direct.kernels) - len(record.schedule.kernels)))

def watch():   # the run button's reply lands in inspector.data on the kernel's main thread
    for _ in range(600):
        answer = inspector.data['realizes'][0]['what_if'][0]
        if 'measured' in answer:
            open('measured.json', 'w').write(json.dumps(answer['measured']))
            return
        time.sleep(0.2)

threading.Thread(target=watch, daemon=True).start()"""


def test_what_if_run_button_in_jupyterlab(browser, lab_server):
    with lab_notebook(browser, lab_server, [SETUP, SHOW, EXPECT]) as (page, root):
        delta = json.loads(wait_for_file(root / "expected.json"))
        inspector = page.locator(".tl-inspector").first
        inspector.wait_for(timeout=60_000)
        row = inspector.locator(".tl-whatif-row[data-key='fuse_off']")
        assert row.locator(".tl-whatif-actual").inner_text() == ""
        row.locator(".tl-whatif-run").click()
        measured_row = inspector.locator(".tl-whatif-row.tl-whatif-measured[data-key='fuse_off']")
        measured_row.wait_for(timeout=120_000)
        measured = json.loads(wait_for_file(root / "measured.json"))
        assert measured["delta_kernels"] == delta
        cells = measured_row.locator("td")
        assert cells.nth(2).inner_text() == f"+{delta}"
        assert measured_row.locator(".tl-whatif-actual").inner_text() == \
            _format_seconds(measured["actual_s"])
        assert measured_row.locator(".tl-whatif-scenario").inner_text() == \
            _format_seconds(measured["scenario_s"])
        ARTIFACTS.mkdir(exist_ok=True)
        measured_row.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "inspector-what-if.png"))


def _with_memory(model: dict) -> dict:
    """Give the synthetic model a memory view: each kernel's output lives until its last reader,
    and the roofline's peaks, so every panel has something to draw."""
    kernels = model["kernels"]
    buffers = []
    for index, kernel in enumerate(kernels):
        readers = [k["id"] for k in kernels[index + 1:index + 3]]
        buffers.append({"id": f"m0.{index}", "node": kernel["output"], "label": "ADD float32[64, 64]",
                        "shape": [64, 64], "dtype": "float32", "bytes": 16384 + index,
                        "role": "intermediate", "first": index, "last": min(index + 2, len(kernels) - 1),
                        "writers": [kernel["id"]], "readers": readers, "storage": f"m0.{index % 3}",
                        "shares_with": []})
    model["realizes"][0]["memory"] = {
        "steps": len(kernels), "kernels": [k["id"] for k in kernels], "buffers": buffers,
        "bytes_without_plan": sum(b["bytes"] for b in buffers), "bytes_with_plan": 3 * 16384,
        "peak_live": 3 * 16384, "input_bytes": 16384,
        "largest": [b["id"] for b in buffers[::-1][:8]]}
    model["peaks"] = {"CPU": {"device": "CPU", "flops_per_s": 1e11, "bytes_per_s": 1e10,
                              "compute_from": "synthetic", "bandwidth_from": "synthetic"}}
    model["timings"] = True
    return model


@pytest.mark.parametrize("kernels, ops", [(500, 10), (2500, 2)])
def test_5000_nodes_with_every_panel_render_fast(browser, tmp_path, kernels, ops):
    model = _with_memory(synthetic_model(kernels, ops))
    assert len(model["nodes"]) >= 5000
    with standalone(browser, tmp_path, inspector_state(model)) as page:
        render_ms = float(page.get_attribute("#tinylab-app", "data-graph-render-ms"))
        mount_ms = float(page.get_attribute("#tinylab-app", "data-mount-ms"))
        assert render_ms < 2000, f"collapsed graph of {len(model['nodes'])} nodes: {render_ms} ms"
        assert page.locator(".tl-memory-row").count() == 60      # the 60 largest are drawn
        assert page.locator(".tl-roof-point").count() == kernels - 1   # k0 ran in 0 s
        page.locator(".tl-memory-largest-item").first.click()   # the last kernel's output
        lit = page.locator(".tl-box-kernel.tl-related")   # its writer (it has no reader)
        assert lit.count() == 1 and lit.get_attribute("data-id") == f"k{kernels - 1}"
        print(f"{kernels} kernels: graph {render_ms} ms, whole mount {mount_ms} ms")


def test_memory_of_a_tinyjit_step_in_the_page(browser, tmp_path):
    from tinylab import TinyJit

    @TinyJit
    def step(x):
        hidden = (x * 2).contiguous()
        return ((hidden + 1).contiguous() * hidden).sum(1)

    for value in range(3):
        step(Tensor(np.full((16, 32), value, dtype=np.float32)).realize()).numpy()
    inspector = Inspector.of_jit_step(step)
    launches = step.step.launches
    largest = max((b for launch in launches for b in launch.buffers[:1]), key=lambda b: b.nbytes)
    expected = {f"k{p}" for p, launch in enumerate(launches)
                if any(b is largest for b in launch.buffers)}
    with standalone(browser, tmp_path,
                    inspector_state(inspector.data, inspector.panels)) as page:
        assert page.locator(".tl-row").count() == len(launches)
        page.locator(".tl-memory-largest-item").first.click()
        lit = page.locator(".tl-row.tl-selected, .tl-row.tl-related")
        assert {lit.nth(i).get_attribute("data-id") for i in range(lit.count())} == expected


def test_monitor_lists_the_slowest_kernels_live(browser, tmp_path):
    from tinylab_widgets import TrainingMonitor
    from tinylab_widgets.assets import monitor_module
    monitor = TrainingMonitor(total_steps=1, update_every_s=0)
    x = Tensor(np.arange(1024, dtype=np.float32).reshape(32, 32)).realize()
    with monitor.step():
        (x @ x).exp().sum(1).numpy()
    monitor.finish()
    names = ("losses", "steps", "kernels", "total_steps", "title", "finished", "work")
    state = {name: getattr(monitor, name) for name in names}
    rows = sorted(monitor.kernels, key=lambda row: -row["run_s"])
    with standalone(browser, tmp_path, state, module=monitor_module()) as page:
        shown = page.locator(".tl-slow-kernel")
        assert shown.count() == min(5, len(rows))
        assert shown.first.get_attribute("data-name") == rows[0]["name"]
        assert shown.first.locator(".tl-slow-peak").inner_text() == \
            f"{rows[0]['percent_of_peak']:.1f}%"
        slower = dict(rows[-1], run_s=1.0, percent_of_peak=0.5)   # the next step, published live
        page.evaluate("(kernels) => window.tinylabModel.set('kernels', kernels)",
                      [slower] + rows[:-1])
        assert shown.first.get_attribute("data-name") == rows[-1]["name"]
        assert shown.first.locator(".tl-slow-peak").inner_text() == "0.5%"
