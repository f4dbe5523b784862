"""The inspector widget: a Trace shown as the op graph collapsed by kernel, a sortable kernels
table with each kernel's source (C / OpenCL / CUDA tabs, highlighted by Pygments in highlight.py),
loop IR and actions, the fusion decisions with what-if answers, buffer lifetimes (memory), a
roofline, and what-if scenarios compiled and timed on request (run_what_if). Built from
tinylab.inspection's model; displays as the widget plus script-free text/html and a
deterministic text/plain. Used by magics.py and users.
"""
from __future__ import annotations

import copy

import anywidget
import traitlets

from tinylab.engine.backends import shown_backends
from tinylab.export import kernel_payload
from tinylab.inspection import build_model, summary_text, to_html
from tinylab.inspection.view_registry import INSPECTOR_VIEWS

from .assets import inspector_module, stylesheet
from .highlight import program_html, with_highlighting



class Inspector(anywidget.AnyWidget):
    _esm = inspector_module()
    _css = stylesheet()
    data = traitlets.Dict().tag(sync=True)
    selection = traitlets.Dict().tag(sync=True)
    panels = traitlets.List(traitlets.Unicode()).tag(sync=True)   # views shown (view_registry.py)
    source_language = traitlets.Unicode("").tag(sync=True)

    def __init__(self, trace=None, *, model: dict | None = None, backends=None,
                 panels=None, source_language: str = "", **kwargs):
        """`backends`: devices whose source is rendered beside the one that ran (None: those
        the backend registry marks shown, engine/backends.py); `panels`: the views to show
        (None: every registered one, tinylab/inspection/view_registry.py)."""
        panels = INSPECTOR_VIEWS.names() if panels is None else panels
        if model is None:
            backends = shown_backends() if backends is None else tuple(backends)
            model = build_model(trace, timings=True, backends=backends)
        # the static renderings keep measured numbers apart (nbval masks them), so the live
        # model serves them too
        self._static = (to_html(model, source_language=source_language), summary_text(model))
        self._trace = trace
        self._html: dict = {}   # program name -> its highlighted HTML, made when asked
        super().__init__(data=model, panels=list(panels), source_language=source_language,
                         **kwargs)
        self.on_msg(self._on_message)

    @classmethod
    def of_jit_step(cls, jit, **kwargs) -> Inspector:
        """The memory and kernels views of one captured TinyJit step (after its second call):
        each buffer's lifetime across the step and what the step's memory plan shared."""
        from tinylab.inspection.memory_timeline import jit_step_model
        return cls(model=jit_step_model(jit), panels=("kernels", "memory"), **kwargs)

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

    def run_what_if(self, realize: int, key: str) -> dict:
        """Re-schedule, compile and time what-if scenario `key` of realize `realize` beside the
        actual schedule; the result joins the model (saved widget state, static HTML)."""
        if self._trace is None or not 0 <= realize < len(self._trace.realizes):
            raise ValueError(f"run_what_if: realize {realize} is not in this inspector's trace "
                             f"({0 if self._trace is None else len(self._trace.realizes)} realizes)")
        from tinylab.inspection.what_if_run import run_scenario
        measured = run_scenario(self._trace.realizes[realize], key)
        data = copy.deepcopy(self.data)
        for answer in data["realizes"][realize].get("what_if", []):
            if answer["key"] == key:
                answer["measured"] = measured
        self._static = (to_html(data, source_language=self.source_language), summary_text(data))
        self.data = data
        return measured

    def highlighted(self, name: str) -> dict | None:
        """Program `name`'s texts as Pygments HTML (highlight.program_html), made once."""
        program = self.data.get("programs", {}).get(name)
        if program is not None and name not in self._html:
            self._html[name] = program_html(program)
        return self._html.get(name)

    def _on_message(self, _widget, content, _buffers) -> None:
        """The front end's requests: a kernel's highlighted texts, "run on this browser's GPU"
        (reply with the WGSL and the buffers) and "run this what-if" (reply when the model
        holds the measurement)."""
        if isinstance(content, dict) and content.get("type") == "highlight-request":
            self.send({"type": "highlight-reply", "request": content.get("request"),
                       "html": self.highlighted(str(content.get("program", "")))})
            return
        if isinstance(content, dict) and content.get("type") == "what-if-run":
            reply = {"type": "what-if-reply", "request": content.get("request")}
            try:
                reply["measured"] = self.run_what_if(int(content.get("realize", -1)),
                                                     str(content.get("key", "")))
            except Exception as error:  # noqa: BLE001 - shown to the learner beside the button
                reply["error"] = f"{type(error).__name__}: {error}"
            self.send(reply)
            return
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
        state = {"data": with_highlighting(self.data), "selection": self.selection,
                 "panels": self.panels,
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
