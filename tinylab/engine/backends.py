"""The backend registry: one row per backend says everything the rest of tinylab knows of it
(name, other spellings, its render-only NULL alias, source language and highlighting lexer,
renderer and runtime factories, peak family, default rank). engine/devices.py opens devices from
it; inspection, the widgets, `python -m tinylab.device` and engine/peak.py derive their tables
from it. `tinylab.register_backend` (engine/devices.py) adds a row.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from .. import config
from ..errors import DeviceError
from ..memo import Memo, Role, register

PEAK_FAMILIES = (None, "cpu", "opencl", "cuda")  # how engine/peak.py finds a device's roofs


@dataclass(eq=False)
class Backend:
    name: str
    make_renderer: Callable
    make_runtime: Callable | None   # None: render-only
    description: str
    default_rank: int = 100         # lower is preferred for Device.DEFAULT
    default_if: Callable | None = None  # (DeviceSpec) -> may it be the default when usable?
    cpu_target: bool = False        # renderer and runtime are made for a CPUTarget
    language: str = ""              # its source language as traces and tabs name it ("OpenCL");
    #                                 "" gives the name in title case ("TINY" -> "Tiny")
    lexer: str = "text"             # the Pygments lexer that highlights that language
    aliases: tuple = ()             # other spellings of the device name ("OPENCL", "GPU")
    null_alias: str | None = None   # its render-only device ("NULL:CL"), if any
    peak: str | None = None         # peak family (PEAK_FAMILIES): None, no roofs known; "cpu"
    #                                 goes with cpu_target
    shown: bool = False             # the inspector renders its source beside the one that ran
    tab_rank: int = 100             # where its source tab sits among the languages

    def __post_init__(self):
        self.language = self.language or self.name.title()
        if self.peak not in PEAK_FAMILIES:
            raise DeviceError(f"backend {self.name}: peak family {self.peak!r} is not one of "
                              f"{PEAK_FAMILIES}")
        if (self.peak == "cpu") != self.cpu_target:
            raise DeviceError(f"backend {self.name}: the cpu peak family is for a backend made "
                              "for a CPU target, and only for one")


def _cpu_renderer(target=None):
    from ..renderers.c import CRenderer
    return CRenderer(target)


def _cpu_runtime(target=None):
    from ..runtimes.cpu import CPURuntime
    return CPURuntime(config.CC.value, config.cache_dir() / "cpu", config.COMPILER_CACHE_ON,
                      target)


def _python_renderer():
    from ..renderers.python import PythonRenderer
    return PythonRenderer()


def _python_runtime():
    from ..runtimes.python import PythonRuntime
    return PythonRuntime()


def _cl_renderer():
    from ..renderers.opencl import OpenCLRenderer
    return OpenCLRenderer()


def _cl_runtime():
    from ..runtimes.opencl import OpenCLRuntime
    return OpenCLRuntime(config.cache_dir() / "opencl", config.COMPILER_CACHE_ON)


def _cuda_renderer():
    from ..renderers.cuda import CUDARenderer
    return CUDARenderer()


def _cuda_runtime():
    from ..runtimes.cuda import CUDARuntime
    return CUDARuntime(config.cache_dir() / "cuda", config.COMPILER_CACHE_ON)


def _wgsl_renderer():
    from ..renderers.wgsl import WGSLRenderer
    return WGSLRenderer()


def _webgpu_runtime():
    from ..runtimes.webgpu import WebGPURuntime
    return WebGPURuntime(config.cache_dir() / "webgpu", config.COMPILER_CACHE_ON)


def _metal_renderer():
    from ..renderers.metal import MetalRenderer
    return MetalRenderer()


def _metal_runtime():
    raise DeviceError("tinylab has no Metal runtime (Metal runs on macOS only); NULL:METAL "
                      "renders Metal Shading Language anywhere")


def _is_gpu(spec) -> bool:
    return spec.runtime.is_gpu


class Rows(dict):
    """The backend rows by name: a dict that counts its changes, so that rows_key() (asked
    several times per realize) is one integer, not a tuple built from every row."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.version = 0

    def _changed(self, result=None):
        self.version += 1
        return result

    def __setitem__(self, name, row):
        self._changed(super().__setitem__(name, row))

    def __delitem__(self, name):
        self._changed(super().__delitem__(name))

    def pop(self, *args):
        return self._changed(super().pop(*args))

    def popitem(self):
        return self._changed(super().popitem())

    def setdefault(self, name, row=None):
        return self._changed(super().setdefault(name, row))

    def update(self, *args, **kwargs):
        self._changed(super().update(*args, **kwargs))

    def clear(self):
        self._changed(super().clear())

    def __ior__(self, other):
        self.update(other)
        return self


BACKENDS: Rows = register("backends", Rows({
    "CUDA": Backend("CUDA", _cuda_renderer, _cuda_runtime, "CUDA C through nvcc and pycuda", 10,
                    language="CUDA", lexer="cuda", null_alias="NULL:CUDA", peak="cuda",
                    shown=True, tab_rank=3),
    "CL": Backend("CL", _cl_renderer, _cl_runtime, "OpenCL C through pyopencl", 20,
                  default_if=_is_gpu,  # PoCL's CPU device works, but the C backend is faster
                  language="OpenCL", lexer="opencl", aliases=("GPU", "OPENCL"),
                  null_alias="NULL:CL", peak="opencl", shown=True, tab_rank=2),
    "CPU": Backend("CPU", _cpu_renderer, _cpu_runtime, "C compiled by the system compiler", 50,
                   cpu_target=True, language="C", lexer="c", aliases=("CLANG", "C"),
                   null_alias="NULL:C", peak="cpu", shown=True, tab_rank=1),
    "PYTHON": Backend("PYTHON", _python_renderer, _python_runtime,
                      "Python/numpy interpreter of the linear program", 90,
                      language="Python", lexer="python", tab_rank=6),
    "WEBGPU": Backend("WEBGPU", _wgsl_renderer, _webgpu_runtime,
                      "WGSL through wgpu-py (wgpu-native, naga)", 60, language="WGSL",
                      lexer="wgsl", aliases=("WGSL",), null_alias="NULL:WGSL", shown=True,
                      tab_rank=4),
    "METAL": Backend("METAL", _metal_renderer, _metal_runtime, "Metal Shading Language", 95,
                     language="Metal", lexer="cpp", aliases=("MSL",), null_alias="NULL:METAL",
                     shown=True, tab_rank=5),
}), Role.ROWS)   # reset() keeps every row: built-in and registered backends alike


def check_row(backend: Backend) -> None:
    """Raise DeviceError if `backend` would clash with the registry: a badly spelled name, a
    spelling or NULL alias another backend owns. (Two backends may write one language: its
    tab shows the first one's source.)"""
    name = backend.name
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", name or "") or name == "NULL":
        raise DeviceError(f"a backend name is upper case letters, digits and _ (not NULL): "
                          f"{name!r}")
    if not callable(backend.make_renderer):
        raise DeviceError(f"backend {name}: its renderer must be a class or factory")
    if backend.make_runtime is not None and not callable(backend.make_runtime):
        raise DeviceError(f"backend {name}: its runtime must be a class, factory or None")
    if backend.null_alias is not None and backend.null_alias != f"NULL:{backend.null_alias[5:]}":
        raise DeviceError(f"backend {name}: a render-only alias starts with NULL: "
                          f"({backend.null_alias!r})")
    others = [row for key, row in BACKENDS.items() if key != name]
    taken = {spelling: row.name for row in others
             for spelling in (row.name, *row.aliases, row.null_alias) if spelling}
    for spelling in (name, *backend.aliases, backend.null_alias):
        if spelling in taken:
            raise DeviceError(f"backend {name}: {spelling!r} already names {taken[spelling]}")


# --- tables derived from the rows (made again whenever a row changes) ---------------------------

_DERIVED = Memo("backend tables", 16)   # "key" -> rows_key(), then each derived table


def rows_key() -> int:
    """Changes whenever a row is added, replaced or removed (caches of derived facts key on it)."""
    return BACKENDS.version


def _derived() -> dict:
    key = rows_key()
    if _DERIVED.get("key") != key:
        rows = list(BACKENDS.values())
        _DERIVED.clear()
        _DERIVED.update(
            key=key,
            aliases={alias: row.name for row in rows for alias in row.aliases},
            render_only={row.null_alias: row.name for row in rows if row.null_alias},
            languages={})
        for row in sorted(rows, key=lambda r: r.tab_rank):  # stable: ties in registry order
            _DERIVED["languages"].setdefault(row.language, row.name)
        _DERIVED["render_only_names"] = {name: alias[5:]
                                         for alias, name in _DERIVED["render_only"].items()}
    return _DERIVED


def device_aliases() -> dict[str, str]:
    """Other spelling -> backend name ("OPENCL" -> "CL")."""
    return _derived()["aliases"]


def render_only_aliases() -> dict[str, str]:
    """Render-only device -> the backend it renders with ("NULL:C" -> "CPU")."""
    return _derived()["render_only"]


def render_only_names() -> dict[str, str]:
    """Backend name -> what follows NULL: in its render-only device ("CPU" -> "C")."""
    return _derived()["render_only_names"]


def language_devices() -> dict[str, str]:
    """Source language -> the backend whose renderer writes it, in tab order ("OpenCL" -> "CL")."""
    return _derived()["languages"]


def lexer_of(language: str) -> str:
    """The Pygments lexer name for a language ("text" for one no backend writes)."""
    backend = language_devices().get(language)
    return BACKENDS[backend].lexer if backend is not None else "text"


def shown_backends() -> tuple[str, ...]:
    """The backends whose source the inspector renders beside the one that ran."""
    return tuple(name for name, row in BACKENDS.items() if row.shown)
