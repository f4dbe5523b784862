"""Real-browser tests of the Provenance and Passes panels (Playwright + Debian Chromium; the
fixtures of conftest.py, the pages of pages.py): on a page made from a real trace, clicking a
line of OpenCL source lights exactly the graph nodes the kernel process mapped it to and lists
their user lines; clicking a user line lights the source lines it became; the arrow keys step
through the passes, each step showing the text the Trace recorded.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import ARTIFACTS  # noqa: E402
from pages import inspector_state, standalone  # noqa: E402

import tinylab  # noqa: E402
from tinylab import Tensor  # noqa: E402
from tinylab.inspection import build_model  # noqa: E402

pytestmark = pytest.mark.xdist_group("browser")
PANELS = ["graph", "kernels", "why", "provenance", "passes"]


def _softmax_model() -> dict:
    x = Tensor(np.arange(20, dtype=np.float32).reshape(4, 5) / 7).realize()
    with tinylab.trace() as recorded:
        probabilities = x.softmax(1)
        np.testing.assert_allclose(probabilities.numpy().sum(1), np.ones(4), rtol=1e-5)
    return build_model(recorded, backends=("CL", "CUDA"))


def _open(browser, tmp_path, model: dict, kernel: str):
    """The page of `model` with kernel `kernel` selected."""
    state = inspector_state(model, PANELS, {"kind": "kernel", "id": kernel})
    return standalone(browser, tmp_path, state, name="provenance.html")


def _expected(model: dict, kernel: dict, language: str, number: int) -> list[str]:
    program = model["programs"][kernel["name"]]
    ids = {n for i in program["lines"][language][number] for n in kernel["ast_nodes"][i]}
    return sorted(ids, key=lambda i: int(i[1:]))


def test_click_a_source_line_lights_its_nodes_and_user_lines(browser, tmp_path):
    model = _softmax_model()
    kernel = next(k for k in model["kernels"] if "EXP2" in k["ops"])
    nodes = {n["id"]: n for n in model["nodes"]}
    with _open(browser, tmp_path, model, kernel["id"]) as page:
        line = page.locator(".tl-prov-mapped[data-language='OpenCL']", has_text="exp2(").first
        number = int(line.get_attribute("data-line"))
        expected = _expected(model, kernel, "OpenCL", number)
        assert "EXP2" in {nodes[i]["op"] for i in expected}
        line.click()
        panel = page.locator(".tl-provenance")
        assert panel.get_attribute("data-nodes").split() == expected
        lit = page.locator(".tl-box.tl-prov-hit")
        assert sorted(lit.nth(i).get_attribute("data-ref") for i in range(lit.count())) == \
            sorted(expected)   # the kernel was expanded so its ops are drawn
        shown = page.locator(".tl-prov-user")
        users = [shown.nth(i).get_attribute("data-line") for i in range(shown.count())]
        assert users == sorted({nodes[i]["line"] for i in expected}) and users
        assert "probabilities = x.softmax(1)" in users[0]
        # the same nodes' lines are lit in C and CUDA too
        for language in ("C", "CUDA"):
            hits = page.locator(f".tl-prov-line.tl-prov-hit[data-language='{language}']")
            assert hits.count() >= 1
            assert any("exp2" in hits.nth(i).inner_text() for i in range(hits.count()))
        ARTIFACTS.mkdir(exist_ok=True)
        panel.screenshot(path=str(ARTIFACTS / "provenance.png"))
        # a user line -> every source line of the nodes it built
        page.locator(".tl-prov-user").first.click()
        built = {n["id"] for n in model["nodes"] if n["line"] == users[0]}
        assert set(panel.get_attribute("data-nodes").split()) == built
        hits = page.locator(".tl-prov-line.tl-prov-hit[data-language='OpenCL']")
        want = [n for n, indices in enumerate(model["programs"][kernel["name"]]["lines"]["OpenCL"])
                if set(_expected(model, kernel, "OpenCL", n)) & built]
        assert sorted(int(hits.nth(i).get_attribute("data-line")) for i in range(hits.count())) \
            == want
        # a node in the graph -> its lines
        exp2 = next(i for i in expected if nodes[i]["op"] == "EXP2")
        page.locator(f".tl-box[data-ref='{exp2}']").click()
        assert panel.get_attribute("data-nodes").split() == [exp2]
        hits = page.locator(".tl-prov-line.tl-prov-hit[data-language='CUDA']")
        assert hits.count() >= 1 and all("exp2f(" in hits.nth(i).inner_text()
                                         for i in range(hits.count()))


def test_arrow_keys_step_through_the_passes(browser, tmp_path):
    model = _softmax_model()
    kernel = next(k for k in model["kernels"] if k["opts"])
    steps = model["programs"][kernel["name"]]["steps"]
    assert len(steps) == 5 + len(kernel["opts"])   # AST, plan, actions, as linearized, linear, source
    with _open(browser, tmp_path, model, kernel["id"]) as page:
        panel = page.locator(".tl-passes")
        panel.focus()
        for index, step in enumerate(steps):
            assert panel.get_attribute("data-step") == str(index)
            assert page.locator(".tl-pass-title").inner_text() == \
                f"step {index + 1} of {len(steps)}: {step['title']}"
            assert page.locator(".tl-pass-step-text").inner_text().strip() == step["text"].strip()
            if index:
                diff = page.locator(".tl-pass-diff").inner_text().strip()
                assert diff == (step["diff"].strip() or "(no change)")   # as linearized: often none
            page.keyboard.press("ArrowRight")
        assert panel.get_attribute("data-step") == str(len(steps) - 1)   # stops at the end
        page.keyboard.press("ArrowLeft")
        assert panel.get_attribute("data-step") == str(len(steps) - 2)
        page.locator(".tl-pass-prev").click()
        assert panel.get_attribute("data-step") == str(len(steps) - 3)
        panel.screenshot(path=str(ARTIFACTS / "passes.png"))
