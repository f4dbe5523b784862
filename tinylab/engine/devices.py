"""The device registry: a device is a renderer (source text) plus a runtime (compile, allocate,
launch), by name. (The command `python -m tinylab.device`, tinylab/device.py, prints it.)

`Device["CPU"]` gives a DeviceSpec; `Device.DEFAULT` is the device `DEV` names, else the first
available one in preference order; `Device.status()` says of each backend whether it can run
here and if not why; `Device.state` holds the engine's caches (engine/engine_state.py). Backends are
rows of engine/backends.py; `register_backend` (tinylab.register_backend) adds one. The C backend
is made for a CPU target (`spec.target`): NULL:C renders for the one CPU_TARGET names, CPU for
one this CPU can execute.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

from .. import config
from ..caps import DeviceCaps
from ..errors import DeviceError
from ..memo import BoundedDict, Role, register
from . import backends as registry
from .backends import BACKENDS, Backend
from .engine_state import BoundedTable, EngineState

OPENING = threading.RLock()  # held while a device, its renderer, runtime or target is made


@dataclass(eq=False)
class DeviceSpec:
    name: str
    backend: Backend
    render_only: bool = False
    _renderers: dict = field(default_factory=dict)  # by target key (None off the CPU)
    _runtimes: dict = field(default_factory=dict)
    _calibrated: dict = field(default_factory=dict)  # (target key, cache dir) -> measured target
    _targets: dict = field(default_factory=dict)  # the settings target reads -> its answer
    _error: str | None = field(default=None)

    @property
    def target(self):
        """The CPUTarget this device plans, renders and compiles for (None: not a CPU backend).
        A render-only device takes the one CPU_TARGET names; a running one keeps a target this
        CPU can execute (target/cpu_target.py warns once when that differs), calibrated on
        this CPU unless TINYLAB_CALIBRATE=0 (engine/calibrate.py). Found once per value of
        the settings it depends on (every realize asks several times)."""
        if not self.backend.cpu_target:
            return None
        settings = (config.CPU_TARGET.value, config.THREADS.value, config.CALIBRATE.value,
                    config.CACHE.value)
        found = self._targets.get(settings)
        if found is None:
            found, lasting = self._find_target()
            if lasting:
                self._targets[settings] = found
        return found

    def _find_target(self):
        """(target, whether it may be kept): a preset this CPU cannot run is looked up each
        time (runnable_target warns about it, once per preset)."""
        from ..target.cpu_target import current_target, detect, runnable_target
        if self.render_only:
            return current_target(), True
        chosen = current_target()
        return self._calibrated_target(runnable_target()), chosen.executable_on(detect())

    def _calibrated_target(self, target):
        if not config.CALIBRATE.value or self.backend.make_runtime is None:
            return target
        where = (target.key, config.cache_dir())
        with OPENING:  # compile threads ask too: one calibration per CPU key
            if where not in self._calibrated:
                from .calibrate import calibrated  # measured micro-kernels, once per CPU key
                self._calibrated[where] = calibrated(
                    target, self.backend.make_renderer(target),
                    self.backend.make_runtime(target), config.cache_dir() / "calibration")
            return self._calibrated[where]

    def _made(self, made: dict, make):
        target = self.target
        key = None if target is None else target.key
        with OPENING:  # one renderer / runtime per target, whichever thread asks first
            if key not in made:
                made[key] = make() if target is None else make(target)
            return made[key]

    @property
    def renderer(self):
        return self._made(self._renderers, self.backend.make_renderer)

    @property
    def runtime(self):
        if self.render_only or self.backend.make_runtime is None:
            raise DeviceError(f"{self.name} renders source only; it cannot run kernels")
        return self._made(self._runtimes, self.backend.make_runtime)

    @property
    def allocator(self):
        if self.render_only:
            from ..runtimes.buffer import HostAllocator
            return HostAllocator()
        return self.runtime.allocator

    def check(self) -> None:
        """Raise DeviceError saying why this device cannot be used, if it cannot."""
        if self.render_only:
            _ = self.renderer
            return
        try:
            self.runtime.check()
        except DeviceError:
            raise
        except Exception as exc:  # missing package, no driver, no compiler...
            raise DeviceError(f"{self.name} is not usable here: {exc}") from exc

    @property
    def available(self) -> bool:
        try:
            self.check()
            return True
        except DeviceError:
            return False

    def describe(self) -> str:
        """What it is: the backend, the hardware its runtime opened, render-only or default-able."""
        target = self.target
        if self.render_only:
            text = f"renders {self.language} source only (DEBUG=4 shows it); runs nothing"
            return text + (f"; target {target.name} ({target.isa})" if target else "")
        text = self.backend.description
        hardware = self.runtime.describe()
        if hardware:
            text += f" on {hardware}"
        if self.backend.default_if is not None and not self.backend.default_if(self):
            text += "; usable, not chosen by default"
        return text

    @property
    def language(self) -> str:
        """The source language its renderer writes, as the registry row names it."""
        return self.backend.language

    @property
    def caps(self) -> DeviceCaps:
        """What this device can do, as the value the scheduler and planner are handed."""
        renderer = self.renderer
        return DeviceCaps(self.name, renderer.matmul_panel, renderer.matmul_pack_rows,
                          renderer.relayout_lanes, tuple(renderer.native_widths),
                          renderer.plan_family, tuple(renderer.supported_actions),
                          renderer.max_work_group, renderer.target)

    def __repr__(self):
        return f"<Device {self.name}>"


class _DeviceRegistry:
    def __init__(self):
        # name -> the device opened (its renderer, runtime and target made once)
        self._opened: dict[str, DeviceSpec] = {}
        # (CPU_TARGET, THREADS, rows) -> the entry of _caps
        self._caps_by_setting = BoundedDict(64)
        self._canonical = BoundedDict(256)  # a device name as spelled -> its canonical name
        self._canonical_rows: int = -1  # the rows_key() _canonical was spelled under
        # (DEV, CPU_TARGET, backends) -> the DEFAULT they give (one entry: the settings in force)
        self._defaults = BoundedDict(1)
        self.state = EngineState()  # what realize keeps between calls (engine/engine_state.py)
        # (CPU target keys, backend rows) -> {device name: DeviceCaps}
        self._caps = self.state.register_cache("device caps", BoundedTable(64))

    def canonicalize(self, name: str | None) -> str:
        if name is None:
            return self.DEFAULT
        if isinstance(name, DeviceSpec):
            return name.name
        rows = registry.rows_key()
        if rows != self._canonical_rows:   # a backend registered since: spell anew
            self._canonical.clear()
            self._canonical_rows = rows
        found = self._canonical.get(name) if isinstance(name, str) else None
        if found is None:
            found = self._spell(name)
            if isinstance(name, str):
                self._canonical[name] = found
        return found

    def _spell(self, name) -> str:
        text = str(name).strip().upper()
        if text.endswith(":0") and not text.startswith("NULL"):
            text = text[:-2]
        text = registry.device_aliases().get(text, text)
        if text.startswith("NULL:"):  # NULL:OPENCL -> NULL:CL, NULL:CLANG -> NULL:C
            inner = self.canonicalize(text[5:])
            text = "NULL:" + registry.render_only_names().get(inner, inner)
        return text

    def backend_of(self, name) -> str:
        """The backend a device name runs or renders with: 'NULL:OPENCL' -> 'CL', 'C' -> 'CPU'
        (an unknown name comes back canonicalized)."""
        key = self.canonicalize(name)
        return registry.render_only_aliases().get(key, key)

    def known(self) -> list[str]:
        return list(BACKENDS) + list(registry.render_only_aliases())

    def caps(self) -> dict[str, DeviceCaps]:
        """{device name: DeviceCaps} for every known device, made once per pair of CPU targets
        (the one CPU_TARGET names, the one this CPU runs): what realize hands schedule()."""
        setting = (config.CPU_TARGET.value, config.THREADS.value, registry.rows_key())
        found = self._caps_by_setting.get(setting)
        if found is not None:
            return found
        from ..target.cpu_target import current_target, runnable_target
        key = (current_target().key, runnable_target().key, registry.rows_key())
        with OPENING:
            found = self._caps.get(key)
            if found is None:
                found = self._caps[key] = {name: self[name].caps for name in self.known()}
            self._caps_by_setting[setting] = found
            return found

    def __getitem__(self, name) -> DeviceSpec:
        with OPENING:
            return self._open(self.canonicalize(name), name)

    def _open(self, key: str, name) -> DeviceSpec:
        opened = self._opened.get(key)
        if opened is not None and opened.backend is BACKENDS.get(registry.render_only_aliases()
                                                                 .get(key, key)):
            return opened  # (a row replaced since opens the device again)
        if key in BACKENDS:
            spec = DeviceSpec(key, BACKENDS[key])
        elif key in registry.render_only_aliases():
            spec = DeviceSpec(key, BACKENDS[registry.render_only_aliases()[key]],
                              render_only=True)
        else:
            raise DeviceError(f"unknown device {name!r}; known devices: {', '.join(self.known())}")
        self._opened[key] = spec
        return spec

    @property
    def DEFAULT(self) -> str:  # noqa: N802 - tinygrad's spelling
        """The device DEV names, else the best usable one; found once per DEV, CPU_TARGET and
        set of backends (every Tensor made without a device asks)."""
        key = (config.DEV.value, config.CPU_TARGET.value, id(self._opened), registry.rows_key())
        found = self._defaults.get(key)
        if found is None:
            found = self._defaults[key] = self._choose_default()   # forgets the one before
        return found

    def _choose_default(self) -> str:
        chosen = config.DEV.value
        if chosen:
            key = self.canonicalize(chosen)
            self[key].check()
            return key
        from ..target.cpu_target import current_target
        current_target()  # a misspelled CPU_TARGET raises here, not a quiet fall back to PYTHON
        for backend in sorted(BACKENDS.values(), key=lambda b: b.default_rank):
            spec = self[backend.name]
            if spec.available and (backend.default_if is None or backend.default_if(spec)):
                return backend.name
        raise DeviceError("no device is usable: " + "; ".join(
            f"{name}: {reason}" for name, _, reason in self.status()))

    def status(self) -> list[tuple[str, bool, str]]:
        """(name, usable, reason or description) for every known device."""
        rows = []
        for name in self.known():
            spec = self[name]
            try:
                spec.check()
                rows.append((name, True, spec.describe()))
            except DeviceError as exc:
                rows.append((name, False, str(exc)))
        return rows


Device = _DeviceRegistry()
register("opened devices", Device._opened, Role.LIVE)   # a reset keeps devices open
register("device caps by setting", Device._caps_by_setting, Role.CACHE, limit=64)
register("device spellings", Device._canonical, Role.CACHE, limit=256)
register("default device", Device._defaults, Role.CACHE, limit=1)


def register_backend(name: str, renderer: Callable, runtime: Callable | None = None, *,
                     description: str = "", language: str = "", lexer: str = "text",
                     aliases: tuple = (), null_alias: str | None = None,
                     peak: str | None = None, default_rank: int = 100,
                     shown: bool = False) -> Backend:
    """Add (or replace) a backend: `renderer()` makes its Renderer, `runtime()` its Runtime
    (None: render-only). `language` names its source on traces and tabs ("" -> the name in
    title case), `lexer` is the Pygments lexer that highlights it, `aliases` other spellings of
    the device name, `null_alias` ("NULL:TINY") a render-only device, `peak` the roof family
    (engine/backends.py PEAK_FAMILIES), `shown` puts its source beside every kernel's in the
    inspector. Every device listing, the inspector and the peak model read this row. Kernels
    compiled for a replaced backend are compiled again. Returns the row."""
    row = Backend(str(name).upper(), renderer, runtime, description or f"the {name} backend",
                  default_rank, language=language, lexer=lexer,
                  aliases=tuple(a.upper() for a in aliases),
                  null_alias=null_alias.upper() if null_alias else None, peak=peak, shown=shown)
    registry.check_row(row)
    replaced = BACKENDS.get(row.name)
    BACKENDS[row.name] = row
    if replaced is not None:
        Device.state.forget_devices({row.name, replaced.null_alias, row.null_alias} - {None})
    return row
