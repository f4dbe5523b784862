"""Real-browser tests of the inspector: in JupyterLab (headless Debian Chromium via Playwright) a
`%%tinygrad` cell's widget shows the kernel source the kernel process recorded when a kernel is
clicked (highlighted by Pygments' classes in the widget's colours), and selection follows across
panels; a standalone page checks the collapsed view of a 5,000-node graph renders in under 2 s,
and a standalone training monitor draws the compiles a real monitor recorded as under way.
Screenshots go to test-artifacts/ (gitignored).
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

from tinylab import Tensor  # noqa: E402
from tinylab_widgets import TrainingMonitor  # noqa: E402
from tinylab_widgets.assets import monitor_module  # noqa: E402

pytestmark = pytest.mark.xdist_group("browser")

SETUP = """%load_ext tinylab
import json
import numpy as np
from tinylab import Tensor
from tinylab_widgets.magics import last_trace
N = 8
a = Tensor(np.arange(N * N, dtype=np.float32).reshape(N, N)).realize()
b = Tensor(np.eye(N, dtype=np.float32)).realize()
x = Tensor(np.arange(20, dtype=np.float32).reshape(4, 5)).realize()"""
MATMUL = """%%tinygrad
c = (a.reshape(N, 1, N) * b.T.reshape(1, N, N)).sum(axis=2)
c.numpy()[0, :4]"""
SOFTMAX = """%%tinygrad
x.softmax(1).numpy().shape"""


def _reference(name: str, expression: str) -> str:
    return f"open({name!r}, 'w').write({expression})"


CELLS = [SETUP, MATMUL, _reference("matmul_source.txt", "last_trace().kernels[0].source"),
         SOFTMAX, _reference("softmax.json", "json.dumps([k.name for k in last_trace().kernels])")]


def check_matmul(page, inspector, reference_source: str) -> None:
    inspector.locator(".tl-box-kernel").first.click()
    source = inspector.locator(".tl-source")
    source.wait_for(timeout=10_000)
    assert source.inner_text().strip() == reference_source.strip()
    keywords = source.locator("span.k")   # Pygments' class, arriving from the kernel on request
    keywords.first.wait_for(timeout=10_000)
    assert "for" in keywords.all_inner_texts()
    assert keywords.first.evaluate("e => getComputedStyle(e).color") == "rgb(124, 58, 237)"
    assert source.inner_text().strip() == reference_source.strip()   # the same text, coloured
    assert inspector.locator(".tl-row.tl-selected").get_attribute("data-id") == "k0"
    assert inspector.locator(".tl-box-kernel.tl-selected").count() == 1
    assert "requested" in inspector.locator(".tl-graph").inner_text()


def check_softmax(page, inspector, names: list[str]) -> None:
    assert inspector.locator(".tl-box-kernel").count() == 3
    inspector.locator(".tl-row[data-id='k1']").click()   # select in the table ...
    selected = inspector.locator(".tl-box-kernel.tl-selected")   # ... shows in the graph
    assert selected.get_attribute("data-id") == "k1"
    assert names[1] in inspector.locator(".tl-kernel-title").inner_text()
    graph_text = inspector.locator(".tl-graph").inner_text()
    assert graph_text.count("broadcast_reduce") == 3   # max -> sum, max -> out, sum -> out
    inspector.locator(".tl-tab[data-language='CUDA']").click()
    assert "__global__" in inspector.locator(".tl-source").inner_text()
    inspector.locator(".tl-decision.tl-cut").first.click()
    assert "kernel boundary" in inspector.locator(".tl-details").inner_text()
    inspector.locator(".tl-what-if-select").select_option("fuse_off")
    assert "kernels 3 → " in inspector.locator(".tl-what-if").inner_text()
    inspector.locator(".tl-box-kernel[data-id='k2'] .tl-expand").click()
    assert inspector.locator(".tl-cluster").count() == 1
    assert inspector.locator(".tl-box-op").count() >= 4


def test_inspector_in_jupyterlab(browser, lab_server):
    with lab_notebook(browser, lab_server, CELLS) as (page, root):
        reference = wait_for_file(root / "matmul_source.txt")
        names = json.loads(wait_for_file(root / "softmax.json"))
        inspectors = page.locator(".tl-inspector")
        inspectors.nth(1).wait_for(timeout=60_000)
        check_matmul(page, inspectors.nth(0), reference)
        ARTIFACTS.mkdir(exist_ok=True)
        inspectors.nth(0).scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "inspector-jupyterlab.png"))
        check_softmax(page, inspectors.nth(1), names)
        inspectors.nth(1).locator(".tl-details").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "inspector-softmax.png"))


@pytest.mark.parametrize("kernels, ops", [(500, 10), (2500, 2)])
def test_collapsed_view_of_5000_nodes_renders_fast(browser, tmp_path, kernels, ops):
    model = synthetic_model(kernels, ops)
    assert len(model["nodes"]) >= 5000
    state = inspector_state(model, ["graph", "kernels", "why"])
    with standalone(browser, tmp_path, state, name="big.html") as page:
        assert page.locator(".tl-box-kernel").count() == kernels
        render_ms = float(page.get_attribute("#tinylab-app", "data-graph-render-ms"))
        assert render_ms < 2000, f"collapsed graph of {len(model['nodes'])} nodes: {render_ms} ms"
        if kernels <= 500:   # expanding one kernel lays the graph out again
            page.locator(f".tl-box-kernel[data-id='k{kernels // 2}'] .tl-expand").click()
            assert page.locator(".tl-box-op").count() == ops


def _monitor_state_mid_compile() -> dict:
    """A real monitor's traits while it compiles 4 kernels no other test built, at 2 of 4."""
    monitor = TrainingMonitor(total_steps=3, title="demo", update_every_s=0)
    states = []
    names = ("losses", "steps", "kernels", "total_steps", "title", "finished", "work")
    monitor.observe(lambda _: states.append({n: getattr(monitor, n) for n in names}), "work")
    rng = np.random.default_rng(211)
    x = Tensor(rng.random(31, dtype=np.float32)).realize()
    with monitor.step():
        Tensor.realize(*[x * float(rng.random() + 3) - float(rng.random()) for _ in range(4)])
    monitor.finish()
    return next(state for state in states if state["work"] and state["work"][0]["done"] == 2)


def test_monitor_front_end_draws_the_compiles_under_way(browser, tmp_path):
    state = _monitor_state_mid_compile()
    assert state["work"][0]["text"].startswith("compiling 4 kernels: 2/4")
    with standalone(browser, tmp_path, state, "tinylab monitor", monitor_module(),
                    "monitor.html") as page:
        tasks = page.locator(".tl-work-task")
        assert tasks.count() == 1
        assert tasks.nth(0).inner_text().startswith("compiling 4 kernels: 2/4")
        width = tasks.nth(0).locator(".tl-progress-bar").get_attribute("style")
        assert width == "width:50.0%"
        page.screenshot(path=str(ARTIFACTS / "monitor-work.png"))
        page.evaluate("() => window.tinylabModel.set('work', [])")   # the compile ended
        assert page.locator(".tl-work-task").count() == 0
