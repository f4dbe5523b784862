"""The pages the browser tests open (headless Debian Chromium, conftest.py's fixtures): a standalone
page of a widget module on given traits, and a notebook run in the test's JupyterLab server. Each
fails its test on a page error. Used by test_browser*.py, test_provenance_browser.py and
test_symbolic_browser.py.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path

import nbformat

from tinylab.inspection.view_registry import INSPECTOR_VIEWS
from tinylab_widgets.standalone import standalone_page


def _any_error(error: str) -> bool:
    return True


def _widget_error(error: str) -> bool:
    """JupyterLab's own page errors are not ours; the widgets' ones name tinylab or a tl- class."""
    return "tinylab" in error or "tl-" in error


@contextmanager
def watched_page(browser, counts=_any_error, timeout_ms: int | None = None):
    """A new page; when the block ends without failing, the page errors that `counts` fail it."""
    page = browser.new_page()
    if timeout_ms is not None:
        page.set_default_timeout(timeout_ms)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield page
    finally:
        page.close()
    counted = [error for error in errors if counts(error)]
    assert not counted, counted


def inspector_state(data: dict, panels=None, selection: dict | None = None) -> dict:
    """The Inspector widget's traits for a standalone page of `data` (an inspection model);
    `panels` None: every registered view."""
    return {"data": data, "selection": selection or {}, "source_language": "",
            "panels": list(INSPECTOR_VIEWS.names() if panels is None else panels)}


@contextmanager
def standalone(browser, folder: Path, state: dict, title: str = "tinylab inspector",
               module: str | None = None, name: str = "page.html"):
    """A standalone page of `module` (the inspector's by default) on widget traits `state`,
    written to folder/name and mounted."""
    path = folder / name
    path.write_text(standalone_page(state, title, module=module))
    with watched_page(browser) as page:
        page.goto(path.as_uri())
        page.wait_for_selector("#tinylab-app[data-mount-ms]", timeout=60_000)
        yield page


@contextmanager
def lab_notebook(browser, lab_server, cells: list[str], name: str = "inspector.ipynb",
                 timeout_ms: int = 30_000):
    """(page, notebook folder) of a notebook of `cells` opened in the lab server, all its cells
    started; what the kernel writes to files there, wait_for_file reads."""
    base, token, root = lab_server
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, root / name)
    with watched_page(browser, _widget_error, timeout_ms) as page:
        _open_and_run(page, f"{base}/lab/tree/{name}?token={token}&reset")
        yield page, root


def _open_and_run(page, url: str) -> None:
    page.goto(url, timeout=90_000)
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                           " && window.jupyterapp.shell.currentWidget.sessionContext",
                           timeout=90_000)
    page.evaluate("""async () => {
        const panel = window.jupyterapp.shell.currentWidget;
        await panel.context.ready;
        await panel.sessionContext.ready;
        await window.jupyterapp.commands.execute('notebook:run-all-cells');
    }""")


def wait_for_file(path: Path, timeout_s: float = 180) -> str:
    """The text a notebook cell wrote to `path`, once it is there."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size:
            time.sleep(0.2)
            return path.read_text()
        time.sleep(0.3)
    raise AssertionError(f"the notebook did not write {path.name} in {timeout_s}s")
