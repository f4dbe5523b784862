"""The WebGPU runtime (wgpu-py: wgpu-native with the naga WGSL compiler): opens the best adapter
(a real GPU, else a software one such as Mesa's lavapipe), validates WGSL into a shader module,
builds a compute pipeline whose bindings it reads from the source's `@binding` lines, launches
over the flat work-group count of the kernel's loops and times it with timestamp queries.

Takes source text and buffers; knows nothing of the IR. A missing package or adapter, a shader
naga rejects (with its message) and an allocation past the device's limits raise errors saying why.
"""
from __future__ import annotations

import os
import re
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..errors import CompileError, DeviceError
from .base import Program
from .buffer import Allocator
from .compile_cache import cached_build, key_of
from ..target.launch import require_dims
from .open_once import OpenOnce

INSTALL = "pip install 'tinylab[webgpu]' (wgpu), plus a Vulkan, Metal or D3D12 driver " \
          "(on Debian without a GPU: apt-get install mesa-vulkan-drivers)"
BINDING = re.compile(r"@binding\((\d+)\) var<storage, (read|read_write)>")
LIMITS = ("max-storage-buffers-per-shader-stage", "max-storage-buffer-binding-size",
          "max-buffer-size", "max-compute-workgroup-storage-size")


def import_wgpu():
    try:
        import wgpu
    except ImportError as exc:
        raise DeviceError(f"wgpu is not installed: {INSTALL}") from exc
    return wgpu


@contextmanager
def _quiet_stderr():
    """Mute file descriptor 2 while the adapter opens: the Vulkan loader probes for a Wayland
    display and libwayland prints "XDG_RUNTIME_DIR is invalid" on machines without one. wgpu's
    own errors arrive as Python exceptions, not on stderr."""
    try:
        saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    except OSError:
        yield
        return
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _open():
    wgpu = import_wgpu()
    try:
        with _quiet_stderr():
            adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as exc:  # noqa: BLE001 - wgpu-native says why in its message
        raise DeviceError(f"no WebGPU adapter ({exc}): {INSTALL}") from exc
    if adapter is None:
        raise DeviceError(f"no WebGPU adapter: {INSTALL}")
    features = [f for f in ("timestamp-query",) if f in adapter.features]
    limits = {name: adapter.limits[name] for name in LIMITS if name in adapter.limits}
    device = adapter.request_device_sync(required_features=features, required_limits=limits)
    return wgpu, adapter, device


def bindings(source: str) -> list[tuple[int, bool]]:
    """(binding, writable) for each storage buffer the WGSL source declares."""
    return [(int(index), access == "read_write") for index, access in BINDING.findall(source)]


class WebGPURuntime(OpenOnce):
    """open() gives (wgpu, adapter, device), opened once."""
    name = "WEBGPU"

    def __init__(self, cache_dir: Path | None = None, use_cache: bool = True):
        self.cache_dir, self.use_cache = cache_dir, use_cache
        self.allocator = WebGPUAllocator(self)
        self._lock = threading.Lock()  # the engine compiles from threads; the device takes turns

    def open_driver(self):
        return _open()

    @property
    def is_gpu(self) -> bool:
        _, adapter, _ = self.open()
        return adapter.info.get("adapter_type", "") not in ("CPU", "cpu", "Unknown")

    def describe(self) -> str:
        _, adapter, _ = self.open()
        info = adapter.info
        kind = "GPU" if self.is_gpu else "software"
        return f"{info.get('device', '?')} ({kind}, {info.get('backend_type', '?')})"

    def compile(self, source: str) -> tuple[Path, bool]:
        """(the validated WGSL source, True if it came from the disk cache). naga validates;
        pipelines are built in memory by `load` (WebGPU has no portable binary)."""
        _, adapter, device = self.open()
        key = key_of(source, str(adapter.info.get("device")), str(adapter.info.get("description")))

        def build(out: Path) -> None:
            self.shader_module(source)
            out.write_text(source)

        return cached_build(self.cache_dir, key, build, ".wgsl", self.use_cache)

    def shader_module(self, source: str):
        """The shader module for `source`; naga's complaint as a CompileError."""
        _, adapter, device = self.open()
        try:
            with self._lock:
                return device.create_shader_module(code=source)
        except Exception as exc:  # noqa: BLE001 - GPUValidationError with naga's report
            raise CompileError(f"WGSL rejected by naga ({adapter.info.get('device', '?')})",
                               source, str(exc)) from None

    def load(self, path: Path, name: str):
        wgpu, _, device = self.open()
        source = path.read_text()
        if not self.use_cache:  # a private build: read now, so it need not stay on disk
            path.unlink(missing_ok=True)
        module = self.shader_module(source)
        entries = [{"binding": index, "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": wgpu.BufferBindingType.storage if writable
                               else wgpu.BufferBindingType.read_only_storage}}
                   for index, writable in bindings(source)]
        try:
            with self._lock:
                layout = device.create_bind_group_layout(entries=entries)
                pipeline = device.create_compute_pipeline(
                    layout=device.create_pipeline_layout(bind_group_layouts=[layout]),
                    compute={"module": module, "entry_point": name})
        except Exception as exc:  # noqa: BLE001 - too many buffers, workgroup too large...
            raise CompileError(f"WebGPU pipeline for {name} failed", source, str(exc)) from None
        return WebGPUProgram(self, name, pipeline, layout, [i for i, _ in bindings(source)])


class WebGPUProgram(Program):
    """A compute pipeline. Call with buffer handles and the kernel's loops; returns seconds."""

    def __init__(self, runtime: WebGPURuntime, name: str, pipeline, layout, binding_ids):
        self.runtime, self.name = runtime, name
        self.pipeline, self.layout, self.binding_ids = pipeline, layout, binding_ids

    def __call__(self, *handles, dims=None, wait: bool = True, scalars=(),
                 **launch) -> float:
        wgpu, _, device = self.runtime.open()
        dispatch = require_dims(self.name, dims).groups  # as the renderer folded it
        if scalars:  # symbolic sizes: the i32 array bound after the buffers
            handles = handles + (device.create_buffer_with_data(
                data=np.asarray(scalars, np.int32).tobytes(), usage=wgpu.BufferUsage.STORAGE),)
        group = device.create_bind_group(layout=self.layout, entries=[
            {"binding": i, "resource": {"buffer": handles[i]}} for i in self.binding_ids])
        timed = wait and "timestamp-query" in device.features
        queries = device.create_query_set(type=wgpu.QueryType.timestamp, count=2) if timed \
            else None
        encoder = device.create_command_encoder()
        writes = {"query_set": queries, "beginning_of_pass_write_index": 0,
                  "end_of_pass_write_index": 1} if timed else None
        compute = encoder.begin_compute_pass(timestamp_writes=writes)
        compute.set_pipeline(self.pipeline)
        compute.set_bind_group(0, group)
        compute.dispatch_workgroups(*dispatch)
        compute.end()
        if timed:
            stamps = device.create_buffer(size=16, usage=wgpu.BufferUsage.QUERY_RESOLVE
                                          | wgpu.BufferUsage.COPY_SRC)
            encoder.resolve_query_set(queries, 0, 2, stamps, 0)
        start = time.perf_counter()
        device.queue.submit([encoder.finish()])
        if not wait:
            return 0.0
        if timed:
            begin, end = np.frombuffer(device.queue.read_buffer(stamps), np.uint64)
            return float(end - begin) * 1e-9
        device.queue.on_submitted_work_done_sync()
        return time.perf_counter() - start


class WebGPUAllocator(Allocator):
    """Storage buffers, sized up to whole 4-byte words (WGSL reads memory as 32-bit words)."""

    def __init__(self, runtime: WebGPURuntime):
        self.runtime = runtime

    def alloc(self, nbytes: int):
        wgpu, adapter, device = self.runtime.open()
        size = max(4, -(-nbytes // 4) * 4)
        limit = min(device.limits["max-buffer-size"],
                    device.limits["max-storage-buffer-binding-size"])
        where = f"WEBGPU ({adapter.info.get('device', '?')})"
        if size > limit:
            raise MemoryError(f"cannot allocate {nbytes / 2**20:.1f} MiB on {where}: it binds "
                              f"at most {limit / 2**20:.1f} MiB in one buffer")
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        try:
            return device.create_buffer(size=size, usage=usage)
        except Exception as exc:  # noqa: BLE001 - out of memory
            raise MemoryError(f"cannot allocate {nbytes / 2**20:.1f} MiB on {where}: {exc}") \
                from exc

    def copyin(self, handle, data: memoryview) -> None:
        _, _, device = self.runtime.open()
        raw = np.frombuffer(data, dtype=np.uint8)
        if raw.size % 4:
            raw = np.concatenate([raw, np.zeros(4 - raw.size % 4, np.uint8)])
        device.queue.write_buffer(handle, 0, raw)

    def copyout(self, handle, out: memoryview) -> None:
        _, _, device = self.runtime.open()
        target = np.frombuffer(out, dtype=np.uint8)
        data = device.queue.read_buffer(handle, 0, max(4, -(-target.size // 4) * 4))
        target[:] = np.frombuffer(data, dtype=np.uint8)[:target.size]
