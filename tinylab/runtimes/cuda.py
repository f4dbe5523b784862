"""The CUDA runtime (pycuda): compiles CUDA C with nvcc into a cubin for the GPU's architecture
(cached on disk by source and compiler), loads it with the driver, launches blocks x threads
derived from the kernel's loops and times the launch with events.

Takes source text and buffers; knows nothing of the IR. `nvcc_compile` works without a GPU (the
tests compile every rendered kernel to PTX with it). Missing pieces raise saying what to install.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from .. import config
from ..errors import CompileError, CompilerNotFoundError, DeviceError
from .base import Program, device_scalar
from .buffer import Allocator
from .compile_cache import cached_build, key_of
from ..target.launch import require_dims
from .open_once import OpenOnce

INSTALL = "pip install 'tinylab[cuda]' (pycuda; it needs the NVIDIA driver and the CUDA toolkit)"


NVCC_PLACES = ("/usr/local/cuda/bin/nvcc",)  # looked at when nvcc is not on PATH


def find_nvcc() -> str:
    path = shutil.which("nvcc") or next((p for p in NVCC_PLACES if Path(p).exists()), None)
    if path is None:
        raise CompilerNotFoundError("nvcc not found: install the CUDA toolkit (https://developer."
                                    "nvidia.com/cuda-downloads) or put its bin/ on PATH")
    return path


def nvcc_compile(source: str, arch: str, output: str = "cubin", optimize: bool = True) -> bytes:
    """`source` compiled by nvcc for `arch` (e.g. "sm_80") to "cubin" or "ptx" bytes
    (`optimize=False`: no device optimization, a quicker check that the source compiles)."""
    nvcc = find_nvcc()
    with tempfile.TemporaryDirectory() as folder:
        src, out = Path(folder) / "kernel.cu", Path(folder) / f"kernel.{output}"
        src.write_text(source)
        level = ["-O3"] if optimize else ["-Xcicc", "-O0"]
        cmd = [nvcc, f"--{output}", f"-arch={arch}", *level, "-o", str(out), str(src)]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                                env=config.child_environment())
        if result.returncode != 0:
            raise CompileError(f"nvcc failed for {arch} (exit status {result.returncode})", source,
                               result.stderr or result.stdout)
        return out.read_bytes()


def _open_driver():
    try:
        import pycuda.driver as cuda
    except ImportError as exc:
        raise DeviceError(f"pycuda is not installed: {INSTALL}") from exc
    try:
        cuda.init()
        count = cuda.Device.count()
    except Exception as exc:  # noqa: BLE001 - pycuda raises its own types and OSError
        raise DeviceError(f"no NVIDIA driver could be opened ({exc}): install the NVIDIA "
                          f"driver") from exc
    if count == 0:
        raise DeviceError("the NVIDIA driver is loaded but there is no CUDA device")
    device = cuda.Device(0)
    return cuda, device, device.make_context()


class CUDARuntime(OpenOnce):
    """open() gives (pycuda.driver, device, context), opened once; the context stays current."""
    name = "CUDA"

    def __init__(self, cache_dir: Path | None = None, use_cache: bool = True):
        self.cache_dir, self.use_cache = cache_dir, use_cache
        self.allocator = CUDAAllocator(self)

    def open_driver(self):
        return _open_driver()

    def opened(self, handles) -> None:
        import atexit
        atexit.register(handles[2].pop)

    is_gpu = True

    @property
    def arch(self) -> str:
        major, minor = self.open()[1].compute_capability()
        return f"sm_{major}{minor}"

    def describe(self) -> str:
        return f"{self.open()[1].name()} ({self.arch})"

    def compile(self, source: str) -> tuple[Path, bool]:
        nvcc = find_nvcc()
        key = key_of(source, self.arch, nvcc, "cubin")
        return cached_build(self.cache_dir, key,
                            lambda out: out.write_bytes(nvcc_compile(source, self.arch)),
                            ".cubin", self.use_cache)

    def load(self, cubin: Path, name: str):
        cuda, _, context = self.open()
        pushed = cuda.Context.get_current() is None  # the engine loads from worker threads
        if pushed:
            context.push()
        try:
            module = cuda.module_from_buffer(cubin.read_bytes())
            return CUDAProgram(name, module, module.get_function(name))
        finally:
            if pushed:
                cuda.Context.pop()


class CUDAProgram(Program):
    """A loaded kernel. Call with device allocations and the kernel's loops; returns seconds."""

    def __init__(self, name: str, module, function):
        self.name, self.module, self.function = name, module, function

    def __call__(self, *handles, dims=None, wait: bool = True, scalars=(),
                 **launch) -> float:
        dims = require_dims(self.name, dims)  # as the renderer folded it (the record shows it)
        ints = [device_scalar(v) for v in scalars]  # symbolic sizes, by value after the buffers
        seconds = self.function(*handles, *ints, grid=dims.grid, block=dims.block,
                                time_kernel=wait)
        return seconds or 0.0


class CUDAAllocator(Allocator):
    def __init__(self, runtime: CUDARuntime):
        self.runtime = runtime

    def alloc(self, nbytes: int):
        cuda, device, _ = self.runtime.open()
        try:
            return cuda.mem_alloc(nbytes)
        except cuda.MemoryError as exc:
            free, total = cuda.mem_get_info()
            raise MemoryError(f"cannot allocate {nbytes / 2**20:.1f} MiB on CUDA "
                              f"({device.name()}): {free / 2**20:.1f} of {total / 2**20:.1f} MiB "
                              f"free") from exc

    def free(self, handle, nbytes: int) -> None:
        handle.free()

    def copyin(self, handle, data: memoryview) -> None:
        self.runtime.open()[0].memcpy_htod(handle, np.frombuffer(data, dtype=np.uint8))

    def copyout(self, handle, out: memoryview) -> None:
        self.runtime.open()[0].memcpy_dtoh(np.frombuffer(out, dtype=np.uint8), handle)
