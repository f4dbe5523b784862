"""Layer 0: the error types tinylab raises. Each subclasses the Python error a user would catch.

Shape and argument errors are raised when an op is built (not when it runs) and name the op and
the shapes involved; compile errors carry the kernel source and the compiler's message.
"""
from __future__ import annotations


class TinylabError(Exception):
    """Base class of every error tinylab raises on purpose."""


class ShapeError(TinylabError, ValueError, RuntimeError):
    """Shapes do not fit the op (broadcast, matmul, reshape, axes...). A RuntimeError too, the
    type PyTorch raises for these."""


class DTypeError(TinylabError, TypeError, NotImplementedError):
    """The op does not accept this dtype (e.g. bitwise ops on floats). PyTorch raises a
    RuntimeError here ("not implemented for 'Float'": a NotImplementedError), so it is one too."""


class ArgumentError(TinylabError, ValueError, RuntimeError):
    """An argument's value the op rejects (a zero split size, an unknown mode), where PyTorch
    raises a RuntimeError."""


class EmptyDimError(ShapeError, IndexError):
    """A reduce without an identity (max, argmax) over a dim of size 0: PyTorch's IndexError."""


class DeviceError(TinylabError, RuntimeError):
    """Unknown or unusable device; the message lists those that exist."""


class CompileError(TinylabError, RuntimeError):
    """A kernel failed to compile. `source` is the kernel, `log` the compiler's output."""

    def __init__(self, message: str, source: str = "", log: str = ""):
        self.source, self.log = source, log
        numbered = "\n".join(f"{i + 1:4d} | {line}" for i, line in enumerate(source.splitlines()))
        super().__init__(f"{message}\n--- compiler said ---\n{log.strip()}\n"
                         f"--- kernel source ---\n{numbered}")


class CompilerNotFoundError(TinylabError, RuntimeError):
    """No C compiler: the message says how to install one."""


class JitError(TinylabError, RuntimeError):
    """A TinyJit rule was broken (shapes changed, .item() inside, ...)."""


class IRError(TinylabError, ValueError):
    """The IR verifier found a malformed node; the message prints the node."""


class WriteError(TinylabError, RuntimeError):
    """A write through a view that cannot take it: elements that share one memory location (an
    expand, a stride-0 view, repeated indices with different values) or that are padding."""


class UnsupportedError(ArgumentError, NotImplementedError):
    """An option tinylab does not implement (an unknown pad mode): PyTorch's NotImplementedError."""


class UnsupportedOpError(UnsupportedError):
    """A PyTorch graph calls an ATen op the bridge has no row for (tinylab/torch/aten_table.py);
    the message names the op, its input shapes and dtypes, and the user's source line."""
