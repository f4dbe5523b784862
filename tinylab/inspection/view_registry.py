"""The inspector's views, each declared once: its name (what `panels=` lists), title, the JS panel
classes the widget builds for it and the front-end files that define them (widgets/static), its
static HTML section and its lines in the text view. The widget, its ES module (assets.py) and
static HTML all read INSPECTOR_VIEWS; a new view is its module plus one `register(View(...))`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from . import text as _text
from .html import StaticOptions, graph_section, kernels_section, to_html as _page, what_if_section
from .html_views import memory_html, roofline_html


@dataclass(frozen=True)
class View:
    """One inspector view: what the widget builds for it, and what static HTML and text show."""
    name: str                 # its key in the widget's `panels` (and %%tinygrad's choices)
    title: str
    panels: tuple = ()        # the JS panel classes the widget builds (side by side when several)
    scripts: tuple = ()       # their files: names under widgets/static, or pathlib.Paths
    html: Callable | None = None  # its static HTML section: (model, StaticOptions) -> str
    text: Callable | None = None  # its lines at the end of the text view: (model) -> list[str]

    def state(self) -> dict:
        """What the front end reads of it (JSON)."""
        return {"name": self.name, "title": self.title, "panels": list(self.panels)}


# why, provenance and passes have no static section of their own: each kernel's <details> in
# the kernels section shows its decisions, its source's provenance gutter and its passes
VIEWS = (
    View("graph", "Graph", ("GraphPanel",), ("graph_panel.js",), graph_section),
    View("kernels", "Kernels", ("KernelsPanel", "DetailsPanel"), ("kernels_panel.js",),
         kernels_section),
    View("why", "Why", ("WhyPanel",), ("why_panel.js",)),
    View("provenance", "Provenance", ("ProvenancePanel",), ("provenance.js",)),
    View("passes", "Passes", ("PassesPanel",), ("passes_panel.js",)),
    View("whatif", "What if", ("WhatIfPanel",), ("whatif_panel.js",), what_if_section),
    View("memory", "Memory", ("MemoryPanel",), ("memory_panel.js",), memory_html),
    View("roofline", "Roofline", ("RooflinePanel",), ("roofline.js",), roofline_html),
)


@dataclass
class ViewRegistry:
    """The views in the order the widget lays them out and static HTML lists them."""
    views: tuple = field(default=VIEWS)

    def register(self, view: View) -> View:
        if view.name in self.names():
            raise ValueError(f"register: an inspector view named {view.name!r} exists already")
        self.views = self.views + (view,)
        return view

    def names(self) -> tuple:
        return tuple(view.name for view in self.views)

    def state(self) -> list[dict]:
        return [view.state() for view in self.views]


INSPECTOR_VIEWS = ViewRegistry()


def to_html(model: dict, graph_engine: str = "auto", max_kernels: int = 200,
            source_language: str = "") -> str:
    """Script-free static HTML: the headline, then every view's section (html.py)."""
    sections = [view.html for view in INSPECTOR_VIEWS.views if view.html is not None]
    return _page(model, sections, StaticOptions(graph_engine, max_kernels, source_language))


def summary_text(model: dict) -> str:
    """The short text view (text.py's summary), then every view's own lines."""
    lines = [_text.summary_text(model)]
    for view in INSPECTOR_VIEWS.views:
        if view.text is not None:
            lines += view.text(model)
    return "\n".join(lines)
