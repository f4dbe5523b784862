"""The inspector widget: a Trace shown as the op graph collapsed by kernel, a sortable kernels
table with each kernel's source (C / OpenCL / CUDA tabs), loop IR and actions, and the fusion
decisions with what-if answers. Built from tinylab.inspection's model; displays as the widget
plus script-free text/html and a deterministic text/plain. Used by magics.py and by users.
"""
from __future__ import annotations

import anywidget
import traitlets

from tinylab.inspection import build_model, summary_text, to_html

from .assets import inspector_module, stylesheet

PANELS = ("graph", "kernels", "why")
OTHER_BACKENDS = ("CPU", "CL", "CUDA")   # tabs rendered besides the source that ran


class Inspector(anywidget.AnyWidget):
    _esm = inspector_module()
    _css = stylesheet()
    data = traitlets.Dict().tag(sync=True)
    selection = traitlets.Dict().tag(sync=True)
    panels = traitlets.List(traitlets.Unicode(), default_value=list(PANELS)).tag(sync=True)
    source_language = traitlets.Unicode("").tag(sync=True)

    def __init__(self, trace=None, *, model: dict | None = None, backends=OTHER_BACKENDS,
                 panels=PANELS, source_language: str = "", **kwargs):
        if model is None:
            model = build_model(trace, timings=True, backends=tuple(backends))
        # the static renderings read no timings, so the live model serves them too
        self._static = (to_html(model), summary_text(model))
        super().__init__(data=model, panels=list(panels), source_language=source_language,
                         **kwargs)

    @property
    def static_html(self) -> str:
        return self._static[0]

    @property
    def text(self) -> str:
        return self._static[1]

    def select(self, kind: str, identifier: str) -> None:
        """Select a kernel ('k0'), node ('n3') or decision ('d2') in every panel."""
        self.selection = {"kind": kind, "id": identifier}

    def save_html(self, path) -> None:
        """Write the inspector as one interactive HTML file (works offline, no Jupyter)."""
        from .standalone import standalone_page
        state = {"data": self.data, "selection": self.selection, "panels": self.panels,
                 "source_language": self.source_language}
        with open(path, "w", encoding="utf-8") as file:
            file.write(standalone_page(state))

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        data = dict(data or {})
        data["text/html"] = self.static_html
        data["text/plain"] = self.text
        return data, metadata


def static_bundle(trace) -> dict:
    """text/html + text/plain only (no widget): what `%%tinygrad --static` displays."""
    model = build_model(trace, timings=False)
    return {"text/html": to_html(model), "text/plain": summary_text(model)}
