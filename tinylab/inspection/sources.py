"""A kernel's program as data: its source per language (the one it ran with, plus others rendered
for the same AST by the engine's `render_for`), its loop IR, linear program and actions.
Called by model.build_model once per distinct kernel name.
"""
from __future__ import annotations

from ..engine.devices import Device
from ..engine.realize import render_for
from . import provenance
from .passes import pass_steps

# language shown on a tab -> the device name whose renderer writes it
LANGUAGE_DEVICES = {"C": "CPU", "OpenCL": "CL", "CUDA": "CUDA", "WGSL": "WEBGPU",
                    "Metal": "METAL", "Python": "PYTHON"}
DEVICE_LANGUAGES = {device: language for language, device in LANGUAGE_DEVICES.items()}
TAB_ORDER = ("C", "OpenCL", "CUDA", "WGSL", "Metal", "Python")


def language_of(backend: str) -> str:
    """'CUDA' -> 'CUDA', 'CL'/'OpenCL' -> 'OpenCL', 'CPU'/'C' -> 'C' (device names and their
    aliases as the engine's Device table spells them; anything else comes back as given)."""
    return DEVICE_LANGUAGES.get(Device.backend_of(backend), backend)


def render_other(ast, language: str) -> str | None:
    """Source of `ast` for another backend; None for a language no device renders."""
    if language not in LANGUAGE_DEVICES:
        return None
    try:
        return render_for(ast, LANGUAGE_DEVICES[language])
    except Exception as error:  # a backend that cannot render this kernel says why, inline
        return f"/* {language} source unavailable: {type(error).__name__}: {error} */"


def program_entry(record, backends: tuple = ()) -> dict:
    """{name, language, sources {language: text}, lines {language: [[kernel AST indices] per
    line]}, aligned (C / OpenCL / CUDA rows), steps (the passes), opts} for one KernelRecord."""
    sources = {record.language: record.source}
    mapped = {}
    ran = _mapped(record.ast, record.device, record.plan)
    if isinstance(ran, dict) and ran["text"] == record.source:
        mapped[record.language] = ran
    for backend in backends:
        language = language_of(backend)
        if language not in sources and language in LANGUAGE_DEVICES:
            rendered = _mapped(record.ast, LANGUAGE_DEVICES[language])
            if isinstance(rendered, dict):
                sources[language], mapped[language] = rendered["text"], rendered
            elif rendered is None:
                rendered = render_other(record.ast, language)
            if isinstance(rendered, str):
                sources[language] = rendered
    ordered = {lang: sources[lang] for lang in TAB_ORDER if lang in sources}
    ordered.update({lang: text for lang, text in sources.items() if lang not in ordered})
    return {"name": record.name, "language": record.language, "sources": ordered,
            "lines": {lang: mapped[lang]["lines"] for lang in ordered if lang in mapped},
            "aligned": provenance.align(mapped), "steps": pass_steps(record.steps),
            "passes": dict(record.passes), "opts": [str(o) for o in record.opts]}


def _mapped(ast, device: str, plan=None) -> dict | str | None:
    """The source with its line map (provenance.mapped_source); a note saying why a backend
    cannot render this kernel; None when its renderer keeps no line map (render_other)."""
    try:
        if ast is None or not Device[device].renderer.line_maps:
            return None
        return provenance.mapped_source(ast, device, plan)
    except Exception as error:  # a backend that cannot render this kernel says why, inline
        return f"/* {language_of(device)} source unavailable: {type(error).__name__}: {error} */"
