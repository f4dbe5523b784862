"""One syntax highlighter, Pygments (widgets/highlight.py): the inspector widget answers the front
end's request for a kernel with each source, loop IR and pass step as Pygments HTML whose text is
the recorded text, keywords marked with Pygments' classes (a saved page carries all of it); the
widget's stylesheet colours those classes; no highlighter of its own ships in the front end."""
import html
import json
import re

import numpy as np

from tinylab import Tensor, trace
from tinylab.engine.backends import shown_backends
from tinylab.inspection import build_model
from tinylab_widgets import Inspector
from tinylab_widgets.assets import all_asset_names, inspector_module, stylesheet
from tinylab_widgets.highlight import highlighted, program_html


def text_of(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def check_html(program: dict, html_of: dict) -> None:
    assert set(html_of["sources"]) == set(program["sources"])
    for language, source in program["sources"].items():
        assert text_of(html_of["sources"][language]) == source, language
    assert '<span class="k">for</span>' in html_of["sources"]["C"]
    for key, text in program["passes"].items():
        assert text_of(html_of["passes"][key]) == (text or "")
    assert [text_of(step) for step in html_of["steps"]] == [s["text"] for s in program["steps"]]


def test_the_widget_answers_a_kernel_with_pygments_html_of_its_texts(tmp_path, monkeypatch):
    """Asked by the front end per kernel shown (a custom message), and carried whole by a saved
    page, which has no Python to ask."""
    x = Tensor(np.arange(20, dtype=np.float32).reshape(4, 5)).realize()
    with trace() as recorded:
        x.softmax(1).numpy()
    inspector = Inspector(recorded)
    model = build_model(recorded, backends=shown_backends())
    assert set(inspector.data["programs"]) == set(model["programs"])
    sent = []
    monkeypatch.setattr(inspector, "send", lambda content, buffers=None: sent.append(content))
    for name, program in model["programs"].items():
        inspector._on_message(inspector, {"type": "highlight-request", "request": "r1",
                                          "program": name}, [])
        assert sent[-1]["type"] == "highlight-reply" and sent[-1]["request"] == "r1"
        check_html(program, sent[-1]["html"])
    page = tmp_path / "page.html"
    inspector.save_html(page)
    for program in model["programs"].values():
        for markup in program_html(program)["sources"].values():
            assert json.dumps(markup)[1:-1].replace("</", "<\\/") in page.read_text()


def test_loop_ir_has_a_lexer_of_its_own():
    markup = highlighted("for gidx0 in 0..16 (global)  # rows\n  acc0 = max(acc0, 2.5)", "ir")
    assert '<span class="k">for</span>' in markup and '<span class="k">global</span>' in markup
    assert '<span class="mi">16</span>' in markup or '<span class="m">16</span>' in markup
    assert '<span class="c1"># rows</span>' in markup
    assert '<span class="nf">max</span>' in markup
    assert highlighted("<b>&", "ir") == "&lt;b&gt;&amp;"   # text, never markup


def test_the_stylesheet_colours_the_classes_and_no_js_highlighter_ships():
    css = stylesheet()
    assert re.search(r"\.tinylab-widget \.tl-code \.k \{[^}]*#7c3aed", css, re.I)
    assert re.search(r"\.tinylab-widget \.tl-code \.c1 \{[^}]*#64748b", css, re.I)
    rules = css.split("tl-code", 1)[1]
    assert "\npre " not in rules and "linenos" not in rules   # nothing outside the widget
    assert not any("highlight" in name for name in all_asset_names())
    assert "highlightSource" not in inspector_module()
