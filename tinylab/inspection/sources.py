"""A kernel's program as data, read from compile records (engine/compile_record.py): its source
per language (the one it ran with, and for other backends a display record made by the same
pipeline), line maps, the passes and actions. Called by model.build_model once per distinct kernel.
"""
from __future__ import annotations

from ..engine.backends import BACKENDS, language_devices
from ..engine.compile_record import NOT_RECORDED
from ..engine.devices import Device
from ..engine.realize import record_for
from . import provenance
from .passes import pass_steps


def language_of(backend: str) -> str:
    """'CUDA' -> 'CUDA', 'CL'/'OpenCL' -> 'OpenCL', 'CPU'/'C' -> 'C' (device names and their
    aliases, read from the backend registry, engine/backends.py; anything else comes back as
    given)."""
    row = BACKENDS.get(Device.backend_of(backend))
    return backend if row is None else row.language


def other_record(ast, language: str):
    """The compile record of `ast` for another backend's language; None for a language no device
    renders; a note (str) saying why a backend cannot compile this kernel."""
    device = language_devices().get(language)
    if device is None:
        return None
    try:
        return record_for(ast, device)
    except Exception as error:  # a backend that cannot render this kernel says why, inline
        return f"/* {language} source unavailable: {type(error).__name__}: {error} */"


def render_other(ast, language: str) -> str | None:
    """Source of `ast` for another backend; None for a language no device renders."""
    found = other_record(ast, language)
    return found if found is None or isinstance(found, str) else found.source


def program_entry(record, backends: tuple = ()) -> dict:
    """{name, language, sources {language: text}, lines {language: [[kernel AST indices] per
    line]}, aligned (C / OpenCL / CUDA rows), steps (the passes), opts, hashes} for one
    KernelRecord, all read from compile records."""
    compiled = record.compiled
    sources, mapped, hashes = {record.language: record.source}, {}, {}
    if compiled is not None:
        hashes[record.language] = compiled.compiled_hash or compiled.source_hash
        ran = provenance.mapped_source(compiled)
        if ran is not None:
            mapped[record.language] = ran
    for backend in backends:
        language = language_of(backend)
        if language in sources or language not in language_devices():
            continue
        found = other_record(record.ast, language)
        if isinstance(found, str):
            sources[language] = found
        elif found is not None:
            sources[language], hashes[language] = found.source, found.source_hash
            lines = provenance.mapped_source(found)
            if lines is not None:
                mapped[language] = lines
    ordered = {lang: sources[lang] for lang in language_devices() if lang in sources}
    ordered.update({lang: text for lang, text in sources.items() if lang not in ordered})
    passes = dict(record.passes) if record.passes else {
        "ast": NOT_RECORDED, "plan": NOT_RECORDED, "linear": NOT_RECORDED}
    steps = record.steps or [("compilation steps", NOT_RECORDED)]
    return {"name": record.name, "language": record.language, "sources": ordered,
            "lines": {lang: mapped[lang]["lines"] for lang in ordered if lang in mapped},
            "aligned": provenance.align(mapped), "steps": pass_steps(steps),
            "passes": passes, "opts": [str(o) for o in record.opts], "source_hashes": hashes,
            "launch": compiled.launch if compiled is not None else None,
            "settings": dict(compiled.settings) if compiled is not None else None}
