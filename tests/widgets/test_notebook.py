"""The inspector tutorial (notebooks/inspector.ipynb) executed by nbclient in a fresh kernel:
each %%tinygrad cell displays the widget + script-free text/html + text/plain, the saved widget
state carries what the front end needs without a kernel, and every text output equals the one
committed in the notebook (what nbval checks; GitHub shows these). Its kernels are planned for
CPU_TARGET=avx2, as the tutorials are (notebooks/build.py). After an intended change:
CPU_TARGET=avx2 jupyter nbconvert --to notebook --execute --inplace \
    --ExecutePreprocessor.store_widget_state=True notebooks/inspector.ipynb
"""
import copy
import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

TUTORIAL = Path(__file__).resolve().parents[2] / "notebooks" / "inspector.ipynb"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
STATE_MIME = "application/vnd.jupyter.widget-state+json"
COMPARED = ("text/plain", "text/html")
# measured numbers in the static HTML (inspection/html_views.py), masked as nbval's rule does
MEASURED = re.compile(r"(?s)<!-- measured -->.*?<!-- /measured -->"
                      r"|\bbuild: [^<\n\"]*")  # and how this run got each kernel (its build line)


@pytest.fixture(scope="module")
def executed():
    committed = nbformat.read(TUTORIAL, as_version=4)
    notebook = copy.deepcopy(committed)
    client = NotebookClient(notebook, timeout=300, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(TUTORIAL.parent)}})
    before = os.environ.get("CPU_TARGET")
    os.environ["CPU_TARGET"] = "avx2"  # inherited by the kernel: the outputs' target
    try:
        client.execute()
    finally:
        if before is None:
            del os.environ["CPU_TARGET"]
        else:
            os.environ["CPU_TARGET"] = before
    return committed, notebook


def outputs_of(cell) -> list:
    texts = []
    for output in cell.get("outputs", []):
        if output["output_type"] == "stream":
            texts.append(("stream", output["text"]))
        elif output["output_type"] == "error":
            texts.append(("error", output["ename"] + ": " + output["evalue"]))
        else:
            texts.append(tuple((mime, MEASURED.sub("", output["data"][mime])) for mime in COMPARED
                               if mime in output["data"]))
    return texts


def bundles(cell) -> list[dict]:
    return [o["data"] for o in cell["outputs"] if o["output_type"] in ("display_data",
                                                                      "execute_result")]


def test_inspector_cells_show_widget_html_and_text(executed):
    _, notebook = executed
    magic_cells = [c for c in notebook.cells if c.cell_type == "code" and "%tinygrad" in c.source]
    assert len(magic_cells) == 4
    for cell in magic_cells:
        shown = [b for b in bundles(cell) if "tinylab:" in b.get("text/plain", "")]
        assert len(shown) == 1, cell.source
        bundle = shown[0]
        assert "<svg" in bundle["text/html"] and "<script" not in bundle["text/html"]
        assert (WIDGET_MIME in bundle) == ("--static" not in cell.source)
    matmul, softmax = magic_cells[0], magic_cells[1]
    assert "1 kernel\n" in bundles(matmul)[-1]["text/plain"]
    assert "3 kernels" in bundles(softmax)[-1]["text/plain"]


def test_saved_widget_state_works_without_a_kernel(executed):
    _, notebook = executed
    states = notebook.metadata["widgets"][STATE_MIME]["state"].values()
    inspectors = [s["state"] for s in states if "data" in s["state"]]
    assert len(inspectors) == 3
    for state in inspectors:
        data = state["data"]
        assert "export default" in state["_esm"] and data["graph"]["boxes"]
        assert all(k["name"] in data["programs"] for k in data["kernels"])
        assert all("what_if" in r for r in data["realizes"])


def test_outputs_match_the_committed_notebook(executed):
    committed, notebook = executed
    for saved, fresh in zip(committed.cells, notebook.cells):
        if saved.cell_type != "code" or "nbval-ignore-output" in saved.metadata.get("tags", []):
            continue
        assert outputs_of(fresh) == outputs_of(saved), f"outputs changed in:\n{saved.source}"
