"""The Runtime contract: what every backend's runtime declares and provides. A runtime compiles
source text, loads a kernel by name as a Program and launches it on buffer handles; it never sees
the IR. `Runtime.launch` is the one launch path: realize's Runner and BEAM/TUNE both call it.
Subclassed by every runtime here: cpu, python, and (through open_once.py) opencl, cuda, webgpu.
"""
from __future__ import annotations

import contextlib
import ctypes
from abc import ABC, abstractmethod

import numpy as np


def c_scalar(value):
    """A kernel's scalar argument (a symbolic size) as ctypes passes it by value: an np.int64
    (a variable whose range leaves int32) as int64, anything else as int."""
    return ctypes.c_int64(value) if isinstance(value, np.int64) else ctypes.c_int(value)


def device_scalar(value):
    """The same for GPU launches (numpy scalars): int64 for an np.int64, else int32."""
    return value if isinstance(value, np.int64) else np.int32(value)


class Program(ABC):
    """A loaded kernel. Called with buffer handles, its launch dimensions (a GPU kernel's
    LaunchDims from its renderer, launch.py; None where the source runs its loops) and extra
    scalar arguments; returns the seconds it took (0.0 when not waited)."""
    name: str = ""
    # a faster call taking prepared ctypes pointers (TinyJit replay on the CPU), or None
    pointers_call = None

    @abstractmethod
    def __call__(self, *handles, dims=None, scalars=(), wait: bool = True) -> float:
        ...


class Runtime(ABC):
    """A backend's compiler and launcher. A minimal one defines `name`, `allocator`, `compile`
    and `load`; the defaults say: works everywhere, no GPU, nothing more to describe."""
    name: str = ""
    is_gpu: bool = False   # a GPU device (Device.DEFAULT prefers one)
    allocator = None       # runtimes/buffer.py Allocator for this device's memory
    builds_in_tiers: bool = False  # a quick build first, the full one later (engine/build_tiers)

    def launching_many(self):
        """A context for launches that run back to back (a TinyJit replay): a runtime that
        prepares its launching thread per kernel may do it once for all of them (cpu.py)."""
        return contextlib.nullcontext()

    def check(self) -> None:
        """Raise DeviceError (or any error saying why) if this runtime cannot work here."""
        return None  # the default: it works everywhere

    def describe(self) -> str:
        """The hardware it runs on, for device listings ("" when there is nothing to add)."""
        return ""

    @abstractmethod
    def compile(self, source: str) -> tuple:
        """(compiled artifact for `source`, True if it came from the on-disk cache)."""

    def compile_kernel(self, source: str, facts) -> tuple:
        """compile() for a rendered kernel with its BuildFacts (target/build_facts.py), which a
        runtime overrides where the facts change the build (the CPU: float16, intrinsics,
        OpenMP). Default: the facts change nothing."""
        return self.compile(source)

    @abstractmethod
    def load(self, artifact, name: str) -> Program:
        """The kernel `name` from a compiled artifact."""

    def prepare(self, source: str, facts=None) -> bool:
        """Begin, on a thread of its own, making ready what compiling `source` needs (the CPU:
        a precompiled <immintrin.h> where its intrinsics need one), while the engine plans the
        next kernels; True once that is done or under way (the engine stops asking). Default:
        nothing to make ready."""
        return True

    def compile_unit(self, kernels: list[tuple]) -> list[tuple]:
        """For each (name, source, BuildFacts): (artifact, the name to load it by, True if it
        came from the on-disk cache). This default compiles each alone; a runtime that builds
        several kernels in one go (the CPU: one translation unit) overrides it."""
        return [(artifact, name, hit) for (name, source, facts) in kernels
                for artifact, hit in [self.compile_kernel(source, facts)]]

    def launch(self, program: Program, dims, *handles, scalars=(),
               wait: bool = True) -> float:
        """Run a loaded kernel with the launch dimensions its renderer recorded (`dims`, None on
        backends whose source runs every loop), buffer handles and scalar arguments; seconds
        taken. Realize and BEAM both launch through here."""
        return program(*handles, dims=dims, scalars=scalars, wait=wait)
