"""A widget as one self-contained interactive HTML page (no Jupyter, no network): the same ES
module and CSS, driven by a small in-page stand-in for the widget model. `standalone_page(...)`
is used by `Inspector.save_html` and by the browser tests (a JS-level check at 5,000 nodes).
"""
from __future__ import annotations

import json

from .assets import inspector_module, stylesheet

MODEL_SHIM = """
const listeners = {};
const model = {
  get: (key) => state[key],
  set: (key, value) => { state[key] = value; (listeners["change:" + key] || []).forEach((f) => f()); },
  on: (event, callback) => { (listeners[event] = listeners[event] || []).push(callback); },
  off: (event, callback) => { listeners[event] = (listeners[event] || []).filter((f) => f !== callback); },
  save_changes: () => {}, send: () => {},
};
window.tinylabModel = model;
const started = performance.now();
render({ model, el: document.getElementById("tinylab-app") });
document.getElementById("tinylab-app").dataset.mountMs = (performance.now() - started).toFixed(1);
"""


def _script_safe(text: str) -> str:
    return text.replace("</script", "<\\/script")


def standalone_page(state: dict, title: str = "tinylab inspector",
                    module: str | None = None, css: str | None = None) -> str:
    """HTML running the widget module on `state` (the widget's traits: data, panels, ...)."""
    module = module if module is not None else inspector_module()
    css = css if css is not None else stylesheet()
    state_json = json.dumps(state).replace("</", "<\\/")
    return (f"<!doctype html>\n<html><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{css}</style></head>\n<body>\n<div id='tinylab-app'></div>\n"
            f"<script type='module'>\n{_script_safe(module)}\nconst state = {state_json};\n"
            f"{MODEL_SHIM}</script>\n</body></html>\n")
