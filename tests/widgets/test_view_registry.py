"""The inspector's views as one registry (inspection/view_registry.py): the JS default list is
the registry (the JSON its ES module carries), and a view registered here only (its panel class
in a file of this test) appears in the widget's panel list, the ES module, the static HTML, the
text view, and, drawn by headless Chromium, on a standalone page."""
import json
import re
import sys
from pathlib import Path

import pytest

from tinylab import inspection
from tinylab.inspection.view_registry import INSPECTOR_VIEWS, View
from tinylab_widgets import Inspector
from tinylab_widgets.assets import inspector_module, static_file

sys.path.insert(0, str(Path(__file__).parent))
from pages import inspector_state, standalone  # noqa: E402

TINY_JS = """// a view's whole front end: one panel counting the kernels of the selected realize
class TinyPanel {
  constructor(app) { this.app = app; this.element = h("div", { class: "tl-panel tl-tiny" }); }
  render() { this.element.textContent = `tiny view: ${this.app.data.kernels.length} kernels`; }
  update(focus) {}
}
"""


def _kernel_count(model: dict) -> int:
    return len(model["kernels"])


def _tiny(script: Path) -> View:
    return View("tiny", "Tiny", ("TinyPanel",), (script,),
                html=lambda model, options: f"<div>tiny view: {_kernel_count(model)} kernels</div>",
                text=lambda model: [f"tiny view: {_kernel_count(model)} kernels"])


@pytest.fixture
def tiny_view(monkeypatch, tmp_path):
    script = tmp_path / "tiny_panel.js"
    script.write_text(TINY_JS)
    monkeypatch.setattr(INSPECTOR_VIEWS, "views", INSPECTOR_VIEWS.views)   # restored after
    return INSPECTOR_VIEWS.register(_tiny(script))


def _module_registry(module: str) -> tuple[list, list]:
    """(VIEWS, the PANEL_CLASSES names) as the ES module declares them."""
    views = re.search(r"^const VIEWS = (.*);$", module, re.M).group(1)
    classes = re.search(r"^const PANEL_CLASSES = \{ (.*) \};$", module, re.M).group(1)
    return json.loads(views), classes.split(", ")


def test_the_js_default_list_is_the_registry():
    module = inspector_module()
    views, classes = _module_registry(module)
    assert views == INSPECTOR_VIEWS.state()
    assert [v["name"] for v in views] == ["graph", "kernels", "why", "provenance", "passes",
                                          "whatif", "memory", "roofline"]
    assert classes == [panel for view in INSPECTOR_VIEWS.views for panel in view.panels]
    assert all(re.search(rf"^class {name} \{{", module, re.M) for name in classes)
    app = static_file("inspector.js")
    # no list of its own: the default is the registry's names, each panel built by its class
    assert 'this.model.get("panels") || VIEWS.map((view) => view.name)' in app
    assert not re.search(r'\[\s*"graph"', app) and "new GraphPanel" not in app


def test_a_registered_view_appears_everywhere(tiny_view, softmax_trace):
    model = inspection.build_model(softmax_trace, timings=False)
    inspector = Inspector(model=model)
    assert inspector.panels == list(INSPECTOR_VIEWS.names()) and inspector.panels[-1] == "tiny"
    views, classes = _module_registry(inspector_module())
    assert views[-1] == {"name": "tiny", "title": "Tiny", "panels": ["TinyPanel"]}
    assert classes[-1] == "TinyPanel" and "class TinyPanel {" in inspector_module()
    line = f"tiny view: {len(model['kernels'])} kernels"
    assert f"<div>{line}</div>" in inspector.static_html
    assert inspector.static_html == inspection.to_html(model)
    assert inspector.text.splitlines()[-1] == line
    assert inspector.text == inspection.summary_text(model)
    # the static sections keep the registry's order: the new one last
    assert inspector.static_html.index(line) > inspector.static_html.index("FLOPs / byte")


def test_without_the_view_nothing_of_it_shows(softmax_trace):
    model = inspection.build_model(softmax_trace, timings=False)
    assert "tiny view" not in inspection.to_html(model) + inspection.summary_text(model)
    assert "TinyPanel" not in inspector_module()


@pytest.mark.xdist_group("browser")
def test_the_registered_view_is_drawn(tiny_view, softmax_trace, browser, tmp_path):
    model = inspection.build_model(softmax_trace, timings=False)
    state = inspector_state(model)
    assert state["panels"][-1] == "tiny"
    with standalone(browser, tmp_path, state, module=inspector_module()) as page:
        tiny = page.locator(".tl-tiny")
        tiny.wait_for(timeout=10_000)
        assert tiny.inner_text() == f"tiny view: {len(model['kernels'])} kernels"
        assert page.locator(".tl-panel").count() >= len(INSPECTOR_VIEWS.views)
    only = inspector_state(model, ["tiny", "graph"])   # a chosen list: those views only
    with standalone(browser, tmp_path, only, module=inspector_module(), name="only.html") as page:
        assert page.locator(".tl-tiny").count() == 1 and page.locator(".tl-passes").count() == 0
