"""The OpenCL runtime (pyopencl): opens the first device that builds a probe kernel, GPUs first
(PoCL's CPU device on a machine without a GPU), builds OpenCL C into a program binary (cached on
disk by source and device), launches over work-groups derived from the kernel's loops and times
it with events.

Takes source text and buffers; knows nothing of the IR. A missing package, driver or device, a
failed build (with the build log) and an allocation the device refuses raise errors saying why.
"""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from ..errors import CompileError, DeviceError
from .base import Program, device_scalar
from .buffer import Allocator
from .compile_cache import cached_build, key_of
from ..target.launch import require_dims
from .open_once import OpenOnce

INSTALL = "pip install 'tinylab[opencl]' (pyopencl, plus pocl-binary-distribution as a CPU driver)"


def import_pyopencl():
    try:
        import pyopencl
    except ImportError as exc:
        raise DeviceError(f"pyopencl is not installed: {INSTALL}") from exc
    return pyopencl


def _devices(cl) -> list:
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:
        raise DeviceError(f"no OpenCL driver found ({exc}): install your GPU vendor's OpenCL "
                          f"driver, or {INSTALL}") from exc
    found = []
    for platform in platforms:
        try:
            found += platform.get_devices()
        except cl.Error:  # a platform with no devices raises DEVICE_NOT_FOUND
            continue
    if not found:
        names = ", ".join(p.name for p in platforms) or "none"
        raise DeviceError(f"OpenCL driver(s) found ({names}) but no device")
    return found


# built once per device before choosing it: a driver may list a device it cannot build for (the
# PoCL in pyopencl's wheel, LLVM 14, names a CPU newer than Zen 3 'generic' and fails every build)
PROBE = "__kernel void probe(__global float* x) { x[get_global_id(0)] += 1.0f; }"


def _label(device) -> str:
    return f"{device.name.strip()} ({device.platform.name.strip()})"


def _probe_error(cl, device) -> str | None:
    """None if PROBE builds on `device`, else the first line of why not."""
    try:
        cl.Program(cl.Context([device]), PROBE).build()
    except cl.Error as exc:
        lines = str(exc).strip().splitlines()
        return lines[0] if lines else type(exc).__name__
    return None


def choose_device(devices: list, is_gpu, probe_error):
    """The first device, GPUs first, on which the probe kernel builds; a DeviceError naming every
    device and why it failed when none does. `is_gpu(device)` and `probe_error(device)` (None or
    a reason) are passed in, so the choice is testable without a driver."""
    failures = []
    for device in sorted(devices, key=lambda d: not is_gpu(d)):  # stable: driver order kept
        error = probe_error(device)
        if error is None:
            return device
        failures.append(f"{_label(device)}: {error}")
    raise DeviceError("no OpenCL device builds a kernel; tried " + "; ".join(failures)
                      + f". Install a working driver (Debian: pocl-opencl-icd), or {INSTALL}")


def _open():
    cl = import_pyopencl()
    device = choose_device(_devices(cl), lambda d: bool(d.type & cl.device_type.GPU),
                           lambda d: _probe_error(cl, d))
    context = cl.Context([device])
    queue = cl.CommandQueue(context, device,
                            properties=cl.command_queue_properties.PROFILING_ENABLE)
    return cl, device, context, queue


class OpenCLRuntime(OpenOnce):
    """open() gives (pyopencl, device, context, queue), opened once."""
    name = "CL"

    def __init__(self, cache_dir: Path | None = None, use_cache: bool = True):
        self.cache_dir, self.use_cache = cache_dir, use_cache
        self.allocator = CLAllocator(self)
        self._build_lock = threading.Lock()  # the engine compiles from threads; builds take turns

    def open_driver(self):
        return _open()

    @property
    def is_gpu(self) -> bool:
        cl, device, _, _ = self.open()
        return bool(device.type & cl.device_type.GPU)

    def describe(self) -> str:
        cl, device, _, _ = self.open()
        kind = "GPU" if self.is_gpu else "CPU" if device.type & cl.device_type.CPU else "other"
        return f"{device.name.strip()} ({kind}, {device.platform.name.strip()})"

    def compile(self, source: str) -> tuple[Path, bool]:
        """(program binary for `source` on this device, True if it came from the disk cache)."""
        cl, device, context, _ = self.open()
        key = key_of(source, device.name, device.driver_version, device.platform.version)

        def build(out: Path) -> None:
            try:
                with self._build_lock:
                    program = cl.Program(context, source).build()
            except cl.Error as exc:
                raise CompileError(f"OpenCL build failed on {device.name.strip()}", source,
                                   str(exc)) from None
            out.write_bytes(program.get_info(cl.program_info.BINARIES)[0])

        return cached_build(self.cache_dir, key, build, ".clbin", self.use_cache)

    def load(self, binary: Path, name: str):
        cl, device, context, queue = self.open()
        with self._build_lock:
            program = cl.Program(context, [device], [binary.read_bytes()]).build()
            kernel = cl.Kernel(program, name)
        return CLProgram(name, kernel, queue)


class CLProgram(Program):
    """A built kernel. Call with buffer handles and the kernel's loops; returns seconds taken."""

    def __init__(self, name: str, kernel, queue):
        self.name, self.kernel, self.queue = name, kernel, queue

    def __call__(self, *handles, dims=None, wait: bool = True, scalars=(),
                 **launch) -> float:
        dims = require_dims(self.name, dims)  # as the renderer folded it (the record shows it)
        ints = [device_scalar(v) for v in scalars]  # symbolic sizes, by value after the buffers
        event = self.kernel(self.queue, dims.global_size, dims.block, *handles, *ints)
        if not wait:
            return 0.0
        event.wait()
        return (event.profile.end - event.profile.start) * 1e-9


class CLAllocator(Allocator):
    """Device buffers (`cl.Buffer`); copies go through host memory."""

    def __init__(self, runtime: OpenCLRuntime):
        self.runtime = runtime

    def alloc(self, nbytes: int):
        cl, device, context, _ = self.runtime.open()
        limit = min(device.max_mem_alloc_size, device.global_mem_size)
        where = f"CL ({device.name.strip()})"
        if nbytes > limit:
            raise MemoryError(f"cannot allocate {nbytes / 2**20:.1f} MiB on {where}: it allows "
                              f"at most {limit / 2**20:.1f} MiB in one buffer")
        try:
            return cl.Buffer(context, cl.mem_flags.READ_WRITE, nbytes)
        except cl.Error as exc:
            raise MemoryError(f"cannot allocate {nbytes / 2**20:.1f} MiB on {where}: {exc}") \
                from exc

    def copyin(self, handle, data: memoryview) -> None:
        cl, _, _, queue = self.runtime.open()
        cl.enqueue_copy(queue, handle, np.frombuffer(data, dtype=np.uint8), is_blocking=True)

    def copyout(self, handle, out: memoryview) -> None:
        cl, _, _, queue = self.runtime.open()
        cl.enqueue_copy(queue, np.frombuffer(out, dtype=np.uint8), handle, is_blocking=True)
