"""The PYTHON runtime: runs the Python/numpy source the python renderer makes from a kernel's
linear program. Global loops are numpy broadcasting over the whole output index space, reduce
loops are real Python loops, and every ALU op goes through numpy_alu (the oracle's arithmetic).
For teaching and as a second reference; slow on big reductions by design.
"""
from __future__ import annotations

import time

import numpy as np

from .. import numpy_alu
from .base import Program, Runtime
from .buffer import HostAllocator


def _load(buf, index, valid, _shape=None):
    if valid is True:
        return buf[index]
    return np.where(valid, buf[np.where(valid, index, 0)], np.zeros((), buf.dtype))


def _store(buf, index, value, shape):
    index = np.broadcast_to(index, shape)
    buf[index] = np.broadcast_to(np.asarray(value, dtype=buf.dtype), shape)


def _arange(size: int, position: int, ndim: int):
    shape = [1] * ndim
    shape[position] = size
    return np.arange(size, dtype=np.int64).reshape(shape)


NAMESPACE = {"np": np, "alu": numpy_alu.apply, "cast": numpy_alu.cast, "load": _load,
             "store": _store, "arange": _arange}


class PythonRuntime(Runtime):
    name = "PYTHON"

    def __init__(self):
        self.allocator = HostAllocator()

    def compile(self, source: str):
        code = compile(source, "<tinylab kernel>", "exec")
        namespace = dict(NAMESPACE)
        exec(code, namespace)  # noqa: S102 - the source is our own renderer's output
        return namespace, False

    def load(self, namespace, name: str):
        return PythonProgram(name, namespace[name])


class PythonProgram(Program):
    def __init__(self, name: str, fn):
        self.name, self.fn = name, fn

    def __call__(self, *handles, wait: bool = True, dtypes=None, scalars=(),
                 **launch) -> float:
        arrays = [h.view(d) for h, d in zip(handles, dtypes)] if dtypes else list(handles)
        start = time.perf_counter()
        self.fn(*arrays, *[int(v) for v in scalars])  # Python ints: no numpy overflow
        return time.perf_counter() - start
