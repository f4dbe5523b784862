"""Inspection: a Trace as text, JSON, Graphviz DOT and static (script-free) HTML, with no Jupyter
needed. Everything goes through one model (`build_model`): nodes, kernels, fusion decisions, the
graph collapsed by kernel, what-if answers. Used by users directly and by tinylab_widgets.

    with tinylab.trace() as t: y.numpy()
    print(inspection.to_text(t)); html = inspection.to_html(t)
"""
from __future__ import annotations

import json

from ..schedule.items import ItemKind
from . import kernel_graph as _graph
from . import text as _text
from . import view_registry as _views
from .model import build_model
from .svg import dot_available, graph_svg


def _model(trace_or_model, **options) -> dict:
    if isinstance(trace_or_model, dict):
        return trace_or_model
    return build_model(trace_or_model, **options)


def summary_text(trace_or_model) -> str:
    """A few deterministic lines: kernel count, names, ops, reasons for each boundary."""
    return _views.summary_text(_model(trace_or_model, timings=False))


def to_text(trace_or_model, source: bool = False) -> str:
    """The full report (reads, cost, decisions, what-if; `source=True` adds loop IR + source)."""
    return _text.to_text(_model(trace_or_model, timings=False), source)


def to_json(trace_or_model, timings: bool = False, indent: int | None = 1) -> str:
    """The model as JSON; `timings=True` adds compile/run seconds, GFLOPS, GB/s, cache hits."""
    return json.dumps(_model(trace_or_model, timings=timings), indent=indent, sort_keys=True)


def to_dot(trace_or_model, expand: bool = False) -> str:
    """Graphviz DOT, collapsed by kernel (`expand=True`: each kernel a cluster of its ops)."""
    return _graph.to_dot(_model(trace_or_model, timings=False), expand)


def to_html(trace_or_model, graph_engine: str = "auto", source_language: str = "") -> str:
    """Script-free HTML: inline SVG graph + a <details> per kernel with highlighted source
    (`source_language`'s where the model rendered it)."""
    return _views.to_html(_model(trace_or_model, timings=False), graph_engine,
                         source_language=source_language)


def find_kernels(trace_or_model, code: str) -> dict:
    """{kernel name: the user lines that built it} for every kernel one of whose lines contains
    `code` ("self.convolution(" finds what a line of a model's forward became)."""
    from .provenance import kernel_user_lines
    model = _model(trace_or_model, timings=False, counterfactuals=False)
    found = {}
    for kernel in model["kernels"]:
        lines = kernel_user_lines(model, kernel)
        if kernel["kind"] == ItemKind.KERNEL and any(code in line for line in lines):
            found.setdefault(kernel["name"], lines)
    return found


__all__ = ["build_model", "summary_text", "to_text", "to_json", "to_dot", "to_html", "graph_svg",
           "dot_available", "find_kernels"]
