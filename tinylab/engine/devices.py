"""The device registry: a device is a renderer (source text) plus a runtime (compile, allocate,
launch), by name. (The command `python -m tinylab.device`, tinylab/device.py, prints it.)

`Device["CPU"]` gives a DeviceSpec; `Device.DEFAULT` is the device `DEV` names, else the first
available one in preference order; `Device.status()` says of each backend whether it can run
here and if not why; `Device.state` holds the engine's caches (engine/state.py). Backends
register in BACKENDS below: a new one is a renderer plus a runtime plus one row. The C backend
is made for a CPU target (`spec.target`): NULL:C renders for the one CPU_TARGET names, CPU for
one this CPU can execute.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .. import config
from ..caps import DeviceCaps
from ..errors import DeviceError
from .state import EngineState


@dataclass
class Backend:
    name: str
    make_renderer: Callable
    make_runtime: Callable | None   # None: render-only
    description: str
    default_rank: int = 100         # lower is preferred for Device.DEFAULT
    default_if: Callable | None = None  # (DeviceSpec) -> may it be the default when usable?
    cpu_target: bool = False        # renderer and runtime are made for a CPUTarget


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


BACKENDS: dict[str, Backend] = {
    "CUDA": Backend("CUDA", _cuda_renderer, _cuda_runtime, "CUDA C through nvcc and pycuda", 10),
    "CL": Backend("CL", _cl_renderer, _cl_runtime, "OpenCL C through pyopencl", 20,
                  default_if=_is_gpu),  # PoCL's CPU device works, but the C backend is faster
    "CPU": Backend("CPU", _cpu_renderer, _cpu_runtime, "C compiled by the system compiler", 50,
                   cpu_target=True),
    "PYTHON": Backend("PYTHON", _python_renderer, _python_runtime,
                      "Python/numpy interpreter of the linear program", 90),
    "WEBGPU": Backend("WEBGPU", _wgsl_renderer, _webgpu_runtime,
                      "WGSL through wgpu-py (wgpu-native, naga)", 60),
    "METAL": Backend("METAL", _metal_renderer, _metal_runtime, "Metal Shading Language", 95),
}
# render-only devices: the whole pipeline up to source text, for any machine
RENDER_ONLY_ALIASES: dict[str, str] = {"NULL:C": "CPU", "NULL:CL": "CL", "NULL:CUDA": "CUDA",
                                       "NULL:WGSL": "WEBGPU", "NULL:METAL": "METAL"}
# other spellings of a device (the language's name): the one table of device names
DEVICE_ALIASES = {"GPU": "CL", "OPENCL": "CL", "CLANG": "CPU", "C": "CPU", "WGSL": "WEBGPU",
                  "MSL": "METAL"}
RENDER_ONLY_NAMES = {backend: alias[5:] for alias, backend in RENDER_ONLY_ALIASES.items()}


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
        CPU can execute (runtimes/cpu_target.py warns once when that differs), calibrated on
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
        from ..runtimes.cpu_target import current_target, detect, runnable_target
        if self.render_only:
            return current_target(), True
        chosen = current_target()
        return self._calibrated_target(runnable_target()), chosen.executable_on(detect())

    def _calibrated_target(self, target):
        if not config.CALIBRATE.value or self.backend.make_runtime is None:
            return target
        where = (target.key, config.cache_dir())
        if where not in self._calibrated:
            from .calibrate import calibrated  # measured micro-kernels, once per CPU key
            self._calibrated[where] = calibrated(
                target, self.backend.make_renderer(target), self.backend.make_runtime(target),
                config.cache_dir() / "calibration")
        return self._calibrated[where]

    def _made(self, made: dict, make):
        target = self.target
        key = None if target is None else target.key
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
            text = f"renders {self.renderer.language} source only (DEBUG=4 shows it); runs nothing"
            return text + (f"; target {target.name} ({target.isa})" if target else "")
        text = self.backend.description
        hardware = self.runtime.describe()
        if hardware:
            text += f" on {hardware}"
        if self.backend.default_if is not None and not self.backend.default_if(self):
            text += "; usable, not chosen by default"
        return text

    @property
    def caps(self) -> DeviceCaps:
        """What this device can do, as the value the scheduler and planner are handed."""
        renderer = self.renderer
        return DeviceCaps(self.name, renderer.matmul_panel, renderer.relayout_lanes,
                          tuple(renderer.native_widths),
                          "gpu" if renderer.is_gpu else "cpu", tuple(renderer.supported_actions),
                          renderer.max_work_group, renderer.target)

    def __repr__(self):
        return f"<Device {self.name}>"


class _DeviceRegistry:
    def __init__(self):
        self._opened: dict[str, DeviceSpec] = {}
        self._caps: dict = {}       # CPU target keys -> {device name: DeviceCaps}
        self._caps_by_setting: dict = {}  # (CPU_TARGET, THREADS) -> the entry of _caps
        self._canonical: dict = {}  # a device name as spelled -> its canonical name
        self._defaults: dict = {}  # (DEV, CPU_TARGET, backends) -> the DEFAULT they give
        self.state = EngineState()  # what realize keeps between calls (engine/state.py)

    def canonicalize(self, name: str | None) -> str:
        if name is None:
            return self.DEFAULT
        if isinstance(name, DeviceSpec):
            return name.name
        found = self._canonical.get(name) if isinstance(name, str) else None
        if found is None:
            found = self._spell(name)
            if isinstance(name, str) and len(self._canonical) < 256:
                self._canonical[name] = found
        return found

    def _spell(self, name) -> str:
        text = str(name).strip().upper()
        if text.endswith(":0") and not text.startswith("NULL"):
            text = text[:-2]
        text = DEVICE_ALIASES.get(text, text)
        if text.startswith("NULL:"):  # NULL:OPENCL -> NULL:CL, NULL:CLANG -> NULL:C
            inner = self.canonicalize(text[5:])
            text = "NULL:" + RENDER_ONLY_NAMES.get(inner, inner)
        return text

    def backend_of(self, name) -> str:
        """The backend a device name runs or renders with: 'NULL:OPENCL' -> 'CL', 'C' -> 'CPU'
        (an unknown name comes back canonicalized)."""
        key = self.canonicalize(name)
        return RENDER_ONLY_ALIASES.get(key, key)

    def known(self) -> list[str]:
        return list(BACKENDS) + list(RENDER_ONLY_ALIASES)

    def caps(self) -> dict[str, DeviceCaps]:
        """{device name: DeviceCaps} for every known device, made once per pair of CPU targets
        (the one CPU_TARGET names, the one this CPU runs): what realize hands schedule()."""
        setting = (config.CPU_TARGET.value, config.THREADS.value)
        found = self._caps_by_setting.get(setting)
        if found is not None:
            return found
        from ..runtimes.cpu_target import current_target, runnable_target
        key = (current_target().key, runnable_target().key)
        found = self._caps.get(key)
        if found is None:
            found = self._caps[key] = {name: self[name].caps for name in self.known()}
        self._caps_by_setting[setting] = found
        return found

    def __getitem__(self, name) -> DeviceSpec:
        key = self.canonicalize(name)
        if key in self._opened:
            return self._opened[key]
        if key in BACKENDS:
            spec = DeviceSpec(key, BACKENDS[key])
        elif key in RENDER_ONLY_ALIASES:
            spec = DeviceSpec(key, BACKENDS[RENDER_ONLY_ALIASES[key]], render_only=True)
        else:
            raise DeviceError(f"unknown device {name!r}; known devices: {', '.join(self.known())}")
        self._opened[key] = spec
        return spec

    @property
    def DEFAULT(self) -> str:  # noqa: N802 - tinygrad's spelling
        """The device DEV names, else the best usable one; found once per DEV, CPU_TARGET and
        set of backends (every Tensor made without a device asks)."""
        key = (config.DEV.value, config.CPU_TARGET.value, id(self._opened), tuple(BACKENDS),
               tuple(map(id, BACKENDS.values())))
        if key not in self._defaults:
            self._defaults = {key: self._choose_default()}  # one entry: the settings in force
        return self._defaults[key]

    def _choose_default(self) -> str:
        chosen = config.DEV.value
        if chosen:
            key = self.canonicalize(chosen)
            self[key].check()
            return key
        from ..runtimes.cpu_target import current_target
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
