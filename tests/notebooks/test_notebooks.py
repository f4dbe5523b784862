"""The tutorial notebooks (notebooks/NN_*.ipynb): each runs top to bottom under strict nbval in a
fresh kernel of this Python and reproduces its committed outputs (sanitized by
notebooks/nbval_sanitize.cfg); each has a jupytext twin in notebooks/py/ with the same cells; the
committed files carry no widget state. After an intended change: `make notebooks`.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
NOTEBOOK_TARGET = re.search(r'NOTEBOOK_TARGET = "(\w+)"',
                            (NOTEBOOKS / "build.py").read_text()).group(1)
SANITIZE = NOTEBOOKS / "nbval_sanitize.cfg"
TUTORIALS = sorted(p.stem for p in (NOTEBOOKS / "py").glob("[0-9][0-9]*_*.py"))  # on disk
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
MAX_BYTES = 100_000     # small enough to review as a diff and to open on GitHub
NBVAL_TIMEOUT_S = 900


def _read(name: str):
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


@pytest.mark.parametrize("name", TUTORIALS)
def test_notebook_reproduces_its_committed_outputs(name):
    """Strict nbval (every output compared) in a subprocess, so each notebook gets a clean
    kernel and this test process stays free of its state."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
               "--nbval", "--nbval-current-env", "--nbval-sanitize-with", str(SANITIZE),
               "--nbval-cell-timeout", "600", str(NOTEBOOKS / f"{name}.ipynb")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DEBUG"))}
    env["CPU_TARGET"] = NOTEBOOK_TARGET  # the target notebooks/build.py built them for
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env,
                          timeout=NBVAL_TIMEOUT_S)
    report = (done.stdout + done.stderr)[-8000:]
    assert done.returncode == 0, f"nbval failed for {name}.ipynb (make notebooks rebuilds " \
                                 f"it after an intended change):\n{report}"


@pytest.mark.parametrize("name", TUTORIALS)
def test_twin_has_the_same_cells(name):
    jupytext = pytest.importorskip("jupytext")
    twin = jupytext.read(NOTEBOOKS / "py" / f"{name}.py")
    notebook = _read(name)

    def cells(nb):
        return [(c.cell_type, c.source.strip(), tuple(c.metadata.get("tags", ())))
                for c in nb.cells]
    assert cells(twin) == cells(notebook), \
        f"notebooks/py/{name}.py and {name}.ipynb differ: run `make notebooks`"


@pytest.mark.parametrize("name", TUTORIALS)
def test_committed_notebook_is_clean_and_executed(name):
    path = NOTEBOOKS / f"{name}.ipynb"
    assert path.stat().st_size < MAX_BYTES, f"{name}.ipynb is {path.stat().st_size} bytes"
    notebook = _read(name)
    assert "widgets" not in notebook.metadata, "saved widget state: strip it (make notebooks)"
    assert notebook.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code[0].source.startswith("%load_ext tinylab"), "each notebook loads the extension"
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), \
        "run top to bottom once, in order"
    for cell in code:
        for output in cell.outputs:
            assert output.output_type != "error", f"error output in:\n{cell.source}"
            data = output.get("data", {})
            assert WIDGET_VIEW not in data, "widget views need a live kernel: strip them"
            assert "<script" not in data.get("text/html", ""), "static HTML must be script-free"
    ignored = [c for c in code if "nbval-ignore-output" in c.metadata.get("tags", ())]
    for cell in ignored:   # only measurements, what is drawn from them, the CPU detected, and
        # code another compiler generated for this CPU (Inductor's C++ has its vector width)
        assert re.search(r"(?i)time|perf_counter|interleaved|measured_on|device_peak|"
                         r"print_step_kernels|run_plan|BEAM|bandwidth|detect\(\)|calibrat|"
                         r"inductor_code",
                         cell.source), f"ignore-output tag on a cell without timings:\n{cell.source}"


def test_every_tutorial_has_its_twin_and_nothing_else():
    found = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]*_*.ipynb"))
    assert found == TUTORIALS and len(TUTORIALS) >= 11


def test_sanitize_rules_parse_and_leave_reasons_alone():
    rules = re.findall(r"^regex: (.*)$\n^replace: (.*)$", SANITIZE.read_text(), flags=re.M)
    assert len(rules) >= 6
    text = ("*** CPU       5 r_4_8n2     arg  2 mem   0.00 GB tm      4.11us/     0.06ms "
            "(     0.02 GFLOPS    0.04 GB/s)\nCUT    REDUCE_MAX[4, 1] -> EXPAND[4, 5]: "
            "broadcast_reduce\n%0 = BUFFER <b13>")
    for regex, replace in rules:
        text = re.sub(regex, replace, text)
    assert "4.11" not in text and "n2" not in text and "<b13>" not in text
    assert "broadcast_reduce" in text and "REDUCE_MAX[4, 1] -> EXPAND[4, 5]" in text


def test_exercise_checks_say_right_wrong_and_unanswered(capsys):
    sys.path.insert(0, str(NOTEBOOKS))
    try:
        from exercises import check, check_all
    finally:
        sys.path.remove(str(NOTEBOOKS))
    check("kernels", ..., 3)
    check("kernels", 3, 3, "two broadcast_reduce cuts")
    check("kernels", 2, 3)
    check("shape", [2, 4], (2, 4))
    check_all({"a": 1}, {"a": 1, "b": 2})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("[ ] kernels")
    assert lines[1].startswith("[x] kernels: 3 is right")
    assert lines[2].startswith("[!] kernels: you said 2, which is not")
    assert "3" not in lines[2] and lines[3].startswith("    hint:")   # no answer on a first try
    assert lines[5].startswith("[x] shape")
    assert lines[-1] == "1/2 right"


def test_binder_environment_files():
    binder = ROOT / "binder"
    requirements = (binder / "requirements.txt").read_text()
    assert re.search(r"^-e \.\[[a-z,]*lab", requirements, flags=re.M), "installs this project"
    assert re.search(r"^torch==[\d.]+\+cpu$", requirements, flags=re.M), "PyTorch's CPU build"
    assert re.search(r"^--find-links https://download\.pytorch\.org/whl/cpu/", requirements,
                     flags=re.M), "from PyTorch's CPU wheels"
    assert (binder / "runtime.txt").read_text().strip() == "python-3.11"
    apt = (binder / "apt.txt").read_text().split()
    assert "gcc" in apt and "graphviz" in apt
    post_build = binder / "postBuild"
    assert os.access(post_build, os.X_OK), "postBuild must be executable"
    assert "set -euo pipefail" in post_build.read_text()
    readme = (ROOT / "README.md").read_text()
    assert "mybinder.org/badge_logo.svg" in readme and "notebooks/00_tour.ipynb" in readme



def test_inspector_tutorial_is_built_and_stripped():
    """notebooks/inspector.ipynb is built by notebooks/build.py from its twin like the others
    (tests/widgets/test_notebook.py executes it and checks the live widget state)."""
    jupytext = pytest.importorskip("jupytext")
    path = NOTEBOOKS / "inspector.ipynb"
    assert path.stat().st_size < 300_000, f"inspector.ipynb is {path.stat().st_size} bytes"
    notebook = _read("inspector")
    assert "widgets" not in notebook.metadata, "saved widget state: rebuild with build.py"
    twin = jupytext.read(NOTEBOOKS / "py" / "inspector.py")
    assert [c.source.strip() for c in twin.cells] == [c.source.strip() for c in notebook.cells]
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            assert WIDGET_VIEW not in output.get("data", {})
