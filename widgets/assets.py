"""The widgets' front-end files, read from package data (widgets/static, installed as
tinylab_widgets/static) and joined into one ES module per widget: the vendored dagre layout, the
shared helpers, then the widget's own files. Used by inspector.py and monitor.py as `_esm`/`_css`.
"""
from __future__ import annotations

from functools import cache
from importlib import resources

VENDOR = ("vendor/dagre.min.js",)
INSPECTOR_PARTS = ("common.js", "layout.js", "graph_panel.js", "kernels_panel.js",
                   "why_panel.js", "memory_panel.js", "roofline.js", "whatif_panel.js",
                   "provenance.js", "passes_panel.js", "inspector.js")
MONITOR_PARTS = ("common.js", "monitor_peak.js", "monitor.js")
STYLESHEET = "inspector.css"


def static_file(name: str) -> str:
    """The text of widgets/static/<name> as installed (importlib.resources, not the tree)."""
    return (resources.files("tinylab_widgets") / "static" / name).read_text(encoding="utf-8")


def _join(names) -> str:
    return "\n".join(f"// ---- {name} ----\n{static_file(name)}" for name in names)


@cache
def inspector_module() -> str:
    from tinylab.export import runner_script   # the WebGPU runner the exported pages use too
    return (_join(VENDOR) + "\n// ---- tinylab/export/runner.js ----\n" + runner_script() + "\n"
            + _join(INSPECTOR_PARTS))


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
    return sorted(set(VENDOR + INSPECTOR_PARTS + MONITOR_PARTS)
                  | {STYLESHEET, "vendor/dagre.LICENSE"})
