"""Opening a driver once, the shared base of the GPU runtimes (OpenCL, CUDA, WebGPU): `open()`
calls the runtime's `open_driver()` the first time and keeps what it returns; a DeviceError is kept as its
message (a missing driver does not appear later) and raised afresh on every later call.
"""
from __future__ import annotations

from ..errors import DeviceError
from .base import Runtime


class OpenOnce(Runtime):
    """A Runtime whose driver opens on first use; `check()` opens it."""
    _opened = None

    def open_driver(self):
        raise NotImplementedError

    def opened(self, handles) -> None:
        """Called once after a successful open (e.g. to register cleanup at exit)."""

    def open(self):
        if isinstance(self._opened, DeviceError):
            # a fresh error each time: re-raising one object grows its traceback, keeping every
            # caller's frame alive
            raise DeviceError(str(self._opened))
        if self._opened is None:
            try:
                self._opened = self.open_driver()
            except DeviceError as exc:
                self._opened = DeviceError(str(exc))  # the message only: no frames kept
                raise
            self.opened(self._opened)
        return self._opened

    def check(self) -> None:
        self.open()
