"""The widgets' front-end files, read from package data (widgets/static, installed as
tinylab_widgets/static) and joined into one ES module per widget: the vendored dagre layout, the
shared helpers, then the widget's own files (the inspector's: each registered view's, then the
registry as JSON). Used by inspector.py and monitor.py as `_esm`/`_css`.
"""
from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path

from tinylab.inspection.view_registry import INSPECTOR_VIEWS

VENDOR = ("vendor/dagre.min.js",)
SHARED_PARTS = ("common.js", "layout.js")   # before the views' own files
APP_PART = "inspector.js"                   # after them: builds the panels the registry names
MONITOR_PARTS = ("common.js", "monitor_peak.js", "monitor.js")
STYLESHEET = "inspector.css"


def static_file(name: str) -> str:
    """The text of widgets/static/<name> as installed (importlib.resources, not the tree)."""
    return (resources.files("tinylab_widgets") / "static" / name).read_text(encoding="utf-8")


def _text_of(script) -> str:
    """A view's front-end file: a name under widgets/static, or a pathlib.Path anywhere."""
    return script.read_text(encoding="utf-8") if isinstance(script, Path) else static_file(script)


def _join(names) -> str:
    return "\n".join(f"// ---- {name} ----\n{_text_of(name)}" for name in names)


def inspector_module(views=None) -> str:
    """The inspector's ES module for `views` (default: every registered view,
    tinylab/inspection/view_registry.py): shared helpers, each view's files, then the registry as JSON
    (VIEWS: name, title, panel classes) with PANEL_CLASSES naming each class, then the app."""
    return _inspector_module(tuple(INSPECTOR_VIEWS.views if views is None else views))


@cache
def _inspector_module(views: tuple) -> str:
    from tinylab.export import runner_script   # the WebGPU runner the exported pages use too
    scripts = dict.fromkeys(script for view in views for script in view.scripts)
    classes = ", ".join(dict.fromkeys(panel for view in views for panel in view.panels))
    registry = (f"const VIEWS = {json.dumps([view.state() for view in views])};\n"
                f"const PANEL_CLASSES = {{ {classes} }};\n")
    return (_join(VENDOR) + "\n// ---- tinylab/export/runner.js ----\n" + runner_script() + "\n"
            + _join(SHARED_PARTS + tuple(scripts)) + "\n// ---- the registered views "
            "(tinylab/inspection/view_registry.py) ----\n" + registry + _join((APP_PART,)))


@cache
def monitor_module() -> str:
    return _join(MONITOR_PARTS)


@cache
def stylesheet() -> str:
    """inspector.css, then the rules for Pygments' token classes (highlight.py)."""
    from .highlight import stylesheet_rules
    return static_file(STYLESHEET) + "\n" + stylesheet_rules() + "\n"


def all_asset_names() -> list[str]:
    """Every file the widgets load, plus the vendored library's licence kept beside it."""
    views = tuple(s for view in INSPECTOR_VIEWS.views for s in view.scripts if isinstance(s, str))
    return sorted(set(VENDOR + SHARED_PARTS + views + (APP_PART,) + MONITOR_PARTS)
                  | {STYLESHEET, "vendor/dagre.LICENSE"})
