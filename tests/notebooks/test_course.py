"""The tutorials as one course, read from the notebooks on disk (a new one joins by existing):
00's map names every notebook, each ends with a "Next" naming the one after it and the last
points back to 00; each pins the model's plans in its first cell, says so, and stays under the
size limit; every prediction has a hint of its own and every notebook checks its claims."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
BOOKS = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]*_*.ipynb"))
PIN = "config.CALIBRATE.set_default(0)   # the plans here are the model's, the same on every machine"


def _cells(name: str, kind: str) -> list[str]:
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    return [cell.source for cell in notebook.cells if cell.cell_type == kind]


def test_the_tour_maps_every_notebook_in_order():
    table = [re.match(r"\| (\w+) \|", line) for line in _cells("00_tour", "markdown")[0].splitlines()]
    listed = [m.group(1) for m in table if m and m.group(1) != "notebook"]
    assert listed == BOOKS, f"00's map lists {listed}; the notebooks on disk are {BOOKS}"


@pytest.mark.parametrize("name", BOOKS)
def test_each_notebook_ends_with_next_and_the_last_comes_back(name):
    last = _cells(name, "markdown")[-1]
    following = BOOKS[(BOOKS.index(name) + 1) % len(BOOKS)]
    assert last.startswith("**Next:**"), f"{name}'s last cell does not start with **Next:**"
    named = re.findall(r"\d\d[a-z]?_[a-z_]+", last)
    assert named and named[0] == following, f"{name}'s Next names {named[:1]}, not {following}"


@pytest.mark.parametrize("name", BOOKS + ["inspector"])
def test_each_notebook_pins_the_models_plans_in_its_first_cell(name):
    first = _cells(name, "code")[0]
    assert first.startswith("%load_ext tinylab") and PIN in first, first


@pytest.mark.parametrize("name", BOOKS)
def test_each_notebook_is_at_most_100_kb(name):
    size = (NOTEBOOKS / f"{name}.ipynb").stat().st_size
    assert size <= 100_000, f"{name}.ipynb is {size} bytes"


def _calls(name: str, names: set) -> list[ast.Call]:
    found = []
    for source in _cells(name, "code"):
        lines = [line for line in source.splitlines() if not line.lstrip().startswith("%")]
        tree = ast.parse("\n".join(lines))
        found += [node for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Name) and node.func.id in names]
    return found


@pytest.mark.parametrize("name", BOOKS)
def test_every_prediction_has_a_hint_of_its_own(name):
    for call in _calls(name, {"check", "check_all"}):
        keywords = {k.arg for k in call.keywords}
        assert keywords & {"hint", "hints"}, f"{name}: {ast.unparse(call)[:80]} has no hint"


@pytest.mark.parametrize("name", BOOKS)
def test_every_notebook_checks_its_claims(name):
    """claim(...) (notebooks/exercises.py) or a plain assert on what the engine produced."""
    asserts = [source for source in _cells(name, "code")
               if re.search(r"^assert ", source, flags=re.M)]
    assert _calls(name, {"claim"}) or asserts, f"{name} checks none of its claims"
