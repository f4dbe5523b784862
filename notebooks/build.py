"""Build the tutorial notebooks from their jupytext twins: notebooks/py/NN_name.py (percent format,
the text you edit and review) -> notebooks/NN_name.ipynb, executed top to bottom in a fresh kernel
of this Python, widget state and timestamps stripped. `make notebooks` or
`python notebooks/build.py [00_tour ... inspector]`; tests/notebooks checks the result with nbval.
The kernels run with CPU_TARGET=avx2 (NOTEBOOK_TARGET), so the plans and sources the notebooks
print are the same on every machine that runs AVX2 code, whatever its own CPU.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
TWINS = HERE / "py"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
FORMATS = "ipynb,py//py:percent"
NOTEBOOK_TARGET = "avx2"  # the CPU target the committed outputs are planned for
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def strip(notebook) -> None:
    """Keep what GitHub, nbviewer and nbval read: text/plain, script-free text/html, streams.
    Widget views and saved widget state go (they need a live kernel or a large state blob);
    every widget here also shows itself as text/html and text/plain. Consecutive writes to one
    stream become one output (how the kernel batched them depends on timing, not on the code)."""
    notebook.metadata.pop("widgets", None)
    notebook.metadata["kernelspec"] = dict(KERNELSPEC)
    notebook.metadata["language_info"] = {"name": "python"}
    notebook.metadata.setdefault("jupytext", {})["formats"] = FORMATS
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("ExecuteTime", None)
        if cell.cell_type != "code":
            continue
        kept = []
        for output in cell.get("outputs", []):
            data = output.get("data")
            if data is not None:
                data.pop(WIDGET_VIEW, None)
                if not data:
                    continue
            last = kept[-1] if kept else None
            if (output.output_type == "stream" and last is not None
                    and last.output_type == "stream" and last.name == output.name):
                last.text += output.text
                continue
            kept.append(output)
        cell.outputs = kept


def build(name: str, timeout: int = 600) -> float:
    twin = TWINS / f"{name}.py"
    notebook = jupytext.read(twin)
    notebook.metadata["kernelspec"] = dict(KERNELSPEC)
    for index, cell in enumerate(notebook.cells):  # stable ids keep rebuilt notebooks diffable
        cell.id = hashlib.sha1(f"{name}:{index}:{cell.source}".encode()).hexdigest()[:8]
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(HERE)}})
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    strip(notebook)
    nbformat.write(notebook, HERE / f"{name}.ipynb")
    jupytext.write(notebook, twin, fmt="py:percent")  # the canonical twin (same cells)
    return seconds


def main() -> int:
    os.environ["CPU_TARGET"] = NOTEBOOK_TARGET  # inherited by the notebooks' kernels
    os.environ["TINYLAB_CALIBRATE"] = "0"  # plans from the model: the same on every machine
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook names (default: every twin)")
    args = parser.parse_args()
    names = args.names or sorted(p.stem for p in TWINS.glob("[0-9][0-9]*_*.py")) + ["inspector"]
    for name in names:
        seconds = build(name.removesuffix(".py").removesuffix(".ipynb"))
        print(f"{name}: executed in {seconds:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
