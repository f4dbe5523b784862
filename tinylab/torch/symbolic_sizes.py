"""Dynamo's dynamic dimensions as tinylab Variables: a graph compiled for `s0` rows runs every
size with one set of kernels. A SymInt input becomes `Variable("s0", 1, bound).bind(value)`; a
tensor input with a symbolic dim is held in a buffer laid out at the bound (tinylab's layout for
symbolic sizes) and shrunk to the bound value. The bound is a power of two at least twice the
first size seen; a larger size doubles it (new kernels, a bounded number of times).
"""
from __future__ import annotations

import torch

from ..ir.symbolic import Variable

SMALLEST_BOUND = 32


def _symbol(size) -> str | None:
    """'s0' for a SymInt that is one symbol (None for an int or an expression)."""
    if isinstance(size, torch.SymInt):
        expr = size.node.expr
        return str(expr) if getattr(expr, "is_Symbol", False) else "?"
    return None


class SymbolicSizes:
    def __init__(self, placeholders: list):
        self.scalars: dict = {}   # placeholder index -> the symbol a SymInt input is
        self.dims: dict = {}      # placeholder index -> per dim: its symbol or None
        for i, node in enumerate(placeholders):
            value = node.meta.get("val")
            if isinstance(value, torch.SymInt):
                self.scalars[i] = _symbol(value)
            elif isinstance(value, torch.Tensor) and any(_symbol(s) for s in value.shape):
                self.dims[i] = tuple(_symbol(s) for s in value.shape)
        self.bounds: dict = {}
        names = set(self.scalars.values()) | {s for d in self.dims.values() for s in d if s}
        self.expressible = "?" not in names   # a dim that is an expression (2*s0): per size
        self.names = sorted(names - {"?"})

    @property
    def any(self) -> bool:
        return bool(self.names)

    def values(self, args: list) -> dict:
        """{symbol: this call's value}, from the SymInt inputs and the tensors' shapes."""
        found = {name: int(args[i]) for i, name in self.scalars.items()}
        for i, symbols in self.dims.items():
            for name, size in zip(symbols, args[i].shape):
                if name:
                    found.setdefault(name, int(size))
        return found

    def grow(self, values: dict) -> bool:
        """Make every bound hold its value; True when one changed (the kernels start over)."""
        changed = False
        for name, value in values.items():
            bound = self.bounds.get(name, 0)
            if value > bound:
                bound = max(SMALLEST_BOUND, bound)
                while bound < 2 * value:
                    bound *= 2
                self.bounds[name], changed = bound, True
        return changed

    def variables(self, values: dict) -> dict:
        return {name: Variable(name, 1, self.bounds[name]).bind(values[name])
                for name in self.names}

    def laid_out(self, index: int, shape) -> tuple:
        """The shape an input's buffer has: its symbolic dims at their bounds."""
        symbols = self.dims.get(index)
        if symbols is None:
            return tuple(shape)
        return tuple(self.bounds[s] if s else n for s, n in zip(symbols, shape))

    def view(self, index: int, tensor, variables: dict):
        """An input laid out at the bounds, shrunk to this call's sizes."""
        symbols = self.dims.get(index)
        if symbols is None:
            return tensor
        return tensor.shrink(tuple((0, variables[s]) if s else None for s in symbols))
