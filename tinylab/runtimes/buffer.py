"""Device memory: `Buffer` (size, dtype, device, allocated on first use) over an `Allocator`.

Runtimes provide allocators; host memory is a numpy array (64-byte aligned), device memory is
whatever the runtime allocates. The engine creates Buffers for schedule slots, the frontend for
tensors made from data. Buffers count themselves so tests can check nothing leaks.
"""
from __future__ import annotations

import ctypes
import weakref

import numpy as np

from ..dtype import DType
from ..errors import TinylabError
from ..memo import Role, register


class Allocator:
    """Allocate / free / copy raw bytes on one device. Subclasses override the four methods."""

    def alloc(self, nbytes: int):
        raise NotImplementedError

    def free(self, handle, nbytes: int) -> None:
        pass

    def copyin(self, handle, data: memoryview) -> None:
        raise NotImplementedError

    def copyout(self, handle, out: memoryview) -> None:
        raise NotImplementedError


class HostAllocator(Allocator):
    """Host memory as 64-byte-aligned numpy byte arrays (CPU and PYTHON devices)."""
    ALIGN = 64

    CHECKED = 1 << 26  # allocations above 64 MiB check /proc/meminfo first (a file read:
                       # too slow for the many small buffers of a learner's cells)

    def alloc(self, nbytes: int):
        if nbytes > self.CHECKED and nbytes > _available_memory():
            raise MemoryError(f"cannot allocate {nbytes / 2**30:.2f} GiB on the host: only "
                              f"{_available_memory() / 2**30:.2f} GiB is available")
        raw = np.empty(nbytes + self.ALIGN, dtype=np.uint8)
        start = (-raw.ctypes.data) % self.ALIGN
        if _ASAN is not None:  # the alignment slack on both sides is out of bounds
            poison, unpoison = _ASAN
            poison(ctypes.c_void_p(raw.ctypes.data), ctypes.c_size_t(start))
            poison(ctypes.c_void_p(raw.ctypes.data + start + nbytes),
                   ctypes.c_size_t(self.ALIGN - start))
            # numpy keeps small freed blocks for its next arrays without malloc: clear it first
            weakref.finalize(raw, unpoison, ctypes.c_void_p(raw.ctypes.data),
                             ctypes.c_size_t(raw.nbytes))
        return raw[start:start + nbytes]

    def copyin(self, handle, data: memoryview) -> None:
        handle[:] = np.frombuffer(data, dtype=np.uint8)

    def copyout(self, handle, out: memoryview) -> None:
        np.frombuffer(out, dtype=np.uint8)[:] = handle


def _asan_calls():
    """AddressSanitizer's (poison, unpoison) calls when libasan is in this process (a bounds
    sweep: kernels built with TINYLAB_CPU_CFLAGS=-fsanitize=address, python run with libasan
    preloaded), so a kernel reading past its buffer is caught even inside the alignment slack."""
    process = ctypes.CDLL(None)
    try:
        return process.__asan_poison_memory_region, process.__asan_unpoison_memory_region
    except AttributeError:
        return None


_ASAN = _asan_calls()


def _available_memory() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return 1 << 62


LIVE_BUFFERS = register("live buffers", weakref.WeakSet(), Role.LIVE)


class Buffer:
    """`size` elements of `dtype` on `device`; memory is allocated on first use."""
    _counter = 0

    def __init__(self, device: str, size: int, dtype: DType, allocator: Allocator):
        if size < 0:
            raise TinylabError(f"negative buffer size {size}")
        self.device, self.size, self.dtype, self.allocator = device, size, dtype, allocator
        self._handle = None
        self.version = 0  # bumped by every in-place write (assign)
        Buffer._counter += 1
        self.label = f"b{Buffer._counter}"

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def handle(self):
        if self._handle is None:
            # at least one element: an empty buffer still views as its dtype (PYTHON kernels)
            self._handle = self.allocator.alloc(max(self.nbytes, self.dtype.itemsize))
            LIVE_BUFFERS.add(self)
        return self._handle

    def copyin(self, array: np.ndarray) -> Buffer:
        array = np.ascontiguousarray(array, dtype=self.dtype.np)
        if array.size != self.size:
            raise TinylabError(f"copyin of {array.size} elements into a buffer of {self.size}")
        if self.size:
            self.allocator.copyin(self.handle, memoryview(array.reshape(-1).view(np.uint8)))
        return self

    def numpy(self) -> np.ndarray:
        """A host copy of the contents as a flat numpy array."""
        out = np.empty(self.size, dtype=self.dtype.np)
        if self.size:
            self.allocator.copyout(self.handle, memoryview(out.view(np.uint8)))
        return out

    def __del__(self):
        if self._handle is not None:
            try:
                self.allocator.free(self._handle, self.nbytes)
            except Exception:  # pragma: no cover - interpreter shutdown
                pass

    def __repr__(self):
        return f"<Buffer {self.label} {self.device} {self.dtype.name}[{self.size}]>"
