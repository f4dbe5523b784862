"""Trace renderings of the matmul-as-sum and softmax examples against reviewed golden files
(tests/golden/inspection/), produced in a fresh process so kernel names are reproducible, and
checks that hold whatever the golden says: static HTML is script-free, dot output deterministic.
The process plans for the detected target whatever CPU_TARGET the suite runs under (the JSON
names the target; the 8 x 8 and 4 x 5 examples render alike on every x86 target).
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("render_examples.py")
GOLDEN_KINDS = ["summary.txt", "txt", "dot", "expanded.dot", "json", "html"]


@pytest.fixture(scope="module")
def rendered():
    env = {name: value for name, value in os.environ.items() if name != "CPU_TARGET"}
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                          timeout=300, check=True, env=env)
    return json.loads(done.stdout)


@pytest.mark.parametrize("example", ["matmul", "softmax"])
@pytest.mark.parametrize("kind", GOLDEN_KINDS)
def test_golden(rendered, golden, example, kind):
    suffix = {"json": "json", "html": "html", "dot": "dot"}.get(kind, kind)
    name = f"inspection/{example}.{suffix}" if kind not in ("summary.txt", "txt") \
        else f"inspection/{example}.{kind}"
    golden(name, rendered[example][kind])


def test_summaries_say_what_a_learner_needs(rendered):
    matmul, softmax = rendered["matmul"]["summary.txt"], rendered["softmax"]["summary.txt"]
    assert matmul.startswith("tinylab: 1 realize, 1 kernel\nc.numpy()")
    assert "MUL REDUCE_SUM" in matmul and "broadcast_reduce" not in matmul
    assert "3 kernels" in softmax and "broadcast_reduce ×2" in softmax
    assert "the reduce result is read back across the axes it reduced" in softmax


@pytest.mark.parametrize("example", ["matmul", "softmax"])
@pytest.mark.parametrize("kind", ["html", "dot.html"])
def test_static_html_is_script_free(rendered, example, kind):
    page = rendered[example][kind]
    if not page:
        pytest.skip("graphviz dot is not installed")
    assert "<script" not in page.lower()
    assert not re.search(r"\son[a-z]+=", page), "no event-handler attributes"
    assert "<style" not in page.lower(), "inline styles only (sanitizers drop <style>)"
    assert page.count("<svg") == 2 and page.count("<details") >= 2   # graph, memory timeline
    assert "<!--" not in page and ' id="' not in page


def _as_github_shows_it(page: str) -> str:
    """The text a reader sees where the page's inline styles and SVG are stripped (as GitHub's
    notebook view strips style attributes: jupyter/nbviewer#450, karolzak/ipyplot#3), with the
    <details> opened: tags dropped, entities decoded."""
    import html
    page = re.sub(r"(?s)<svg.*?</svg>", "", page)
    page = re.sub(r'\sstyle="[^"]*"', "", page)
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_static_html_reads_without_its_styles_and_pictures(rendered):
    """Every kernel's name, its cut reasons, its loop IR and its source lines are text, not
    colours or SVG: a view that drops styles and pictures still shows them."""
    text = _as_github_shows_it(rendered["softmax"]["html"])
    names = [k["name"] for k in json.loads(rendered["softmax"]["json"])["kernels"]]
    assert len(names) == 3 and all(name in text for name in names)
    assert "CUT    REDUCE_MAX[4, 1] -> EXPAND[4, 5]: broadcast_reduce" in text or \
        "REDUCE_MAX[4, 1] -> EXPAND[4, 5]: broadcast_reduce" in text
    assert "for gidx0 in 0..4 (global):" in text and "acc = acc max buf1" in text
    assert "void r_4_5(float* restrict data0, const float* restrict data1) {" in text


def test_static_html_does_not_repeat_a_kernels_text_per_pass(rendered):
    """The passes show each text once: a step equal to the loop IR (or to the step before it)
    says so instead of repeating it, and only the first kernel lists its passes."""
    page = rendered["softmax"]["html"]
    assert page.count('class="tinylab-passes"') == 1
    assert "the loop IR shown above" in page
    loop_ir = re.search(r"(?s)<div>loop IR</div><pre[^>]*>(.*?)</pre>", page).group(1)
    assert page.count(loop_ir) == 1


def test_graphviz_layout_is_cleaned(rendered):
    page = rendered["softmax"]["dot.html"]
    if not page:
        pytest.skip("graphviz dot is not installed")
    assert "graphviz version" not in page.lower() and "<title>" not in page
    assert page.count("broadcast_reduce") >= 3   # the three cut edges carry their reason
