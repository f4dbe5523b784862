"""The inspector widget: a Trace shown as the op graph collapsed by kernel, a sortable kernels
table with each kernel's source (C / OpenCL / CUDA tabs), loop IR and actions, and the fusion
decisions with what-if answers. Built from tinylab.inspection's model; displays as the widget
plus script-free text/html and a deterministic text/plain. Used by magics.py and by users.
"""
from __future__ import annotations

import anywidget
import traitlets

from tinylab.export import kernel_payload
from tinylab.inspection import build_model, summary_text, to_html

from .assets import inspector_module, stylesheet

PANELS = ("graph", "kernels", "why", "provenance", "passes")
# tabs rendered besides the source that ran
OTHER_BACKENDS = ("CPU", "CL", "CUDA", "WEBGPU", "METAL")


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
        self._trace = trace
        super().__init__(data=model, panels=list(panels), source_language=source_language,
                         **kwargs)
        self.on_msg(self._on_message)

    @property
    def static_html(self) -> str:
        return self._static[0]

    @property
    def text(self) -> str:
        return self._static[1]

    def kernel_record(self, kernel_id: str):
        """The Trace's KernelRecord behind kernel `kernel_id` ('k0') of the model, or None."""
        entry = next((k for k in self.data.get("kernels", []) if k["id"] == kernel_id), None)
        if self._trace is None or entry is None:
            return None
        records = self._trace.realizes[entry["realize"]].kernels
        return next((r for r in records if r.schedule_index == entry["position"]), None)

    def _on_message(self, _widget, content, _buffers) -> None:
        """The front end's "run on this browser's GPU": reply with the WGSL and the buffers."""
        if not isinstance(content, dict) or content.get("type") != "webgpu-request":
            return
        reply, data = kernel_payload(self.kernel_record(content.get("kernel", "")))
        reply.update(type="webgpu-reply", request=content.get("request"))
        self.send(reply, data)

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
