"""Matrix-shaped helpers: diagonal, diag and meshgrid, as views and masks. Mixed into Tensor
(frontend/tensor.py); errors name the op and the shapes or dims, as PyTorch's do.
"""
from __future__ import annotations

from ..errors import DTypeError, ShapeError


class MatrixMixin:
    __slots__ = ()

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1):
        """The `offset`-th diagonal of the matrices in dims (dim1, dim2), as a new last dim
        (torch.diagonal; offset > 0 is above the main diagonal). A view: the square block the
        diagonal runs through, flattened, padded by one row of zeros so that a row of length
        n + 1 steps from one diagonal element to the next, and read back column 0."""
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise TypeError(f"diagonal: offset must be an int, got {offset!r}")
        a, b = self._axis(dim1, "diagonal"), self._axis(dim2, "diagonal")
        if self.ndim < 2 or a == b:
            raise ShapeError(f"diagonal: needs two different dims of a tensor with at least 2, "
                             f"got dim1={dim1}, dim2={dim2} for shape {self.shape}")
        rest = [d for d in range(self.ndim) if d not in (a, b)]
        x = self.permute(rest + [a, b])
        rows, cols = x.shape[-2:]
        row0, col0 = max(-offset, 0), max(offset, 0)
        length = max(0, min(rows - row0, cols - col0))
        keep = tuple((0, s) for s in x.shape[:-2])
        square = x.shrink(keep + ((min(row0, rows), min(row0, rows) + length),
                                  (min(col0, cols), min(col0, cols) + length)))
        lead = x.shape[:-2]
        if length == 0:
            return square.reshape(lead + (0,))
        flat = square.reshape(lead + (length * length,)).pad(((0, 0),) * len(lead) +
                                                             ((0, length),))
        return flat.reshape(lead + (length, length + 1)).shrink(
            keep + ((0, length), (0, 1))).reshape(lead + (length,))

    def diag(self, diagonal: int = 0):
        """torch.diag: a 1-D tensor becomes the `diagonal`-th diagonal of a square matrix of
        zeros; a 2-D tensor gives its `diagonal`-th diagonal (see diagonal)."""
        if self.ndim == 2:
            return self.diagonal(diagonal)
        if self.ndim != 1:
            raise ShapeError(f"diag: supports 1-D or 2-D tensors, got shape {self.shape}")
        if isinstance(diagonal, bool) or not isinstance(diagonal, int):
            raise TypeError(f"diag: diagonal must be an int, got {diagonal!r}")
        n = self.shape[0] + abs(diagonal)
        # each row (diagonal >= 0) or column (< 0) holds its element; the mask keeps one per line
        if diagonal >= 0:
            spread = self.pad(((0, diagonal),)).reshape(n, 1).expand(n, n)
        else:
            spread = self.pad(((0, -diagonal),)).reshape(1, n).expand(n, n)
        position = type(self).arange(n, device=self.device)
        on_diagonal = position.reshape(1, n) - position.reshape(n, 1) == diagonal
        return on_diagonal.where(spread, self._const(0, shape=()))

    def meshgrid(self, *others, indexing: str = "ij"):
        """Coordinate grids from 0-D or 1-D tensors (torch.meshgrid; also Tensor.meshgrid(a, b)
        or Tensor.meshgrid([a, b])): output k holds tensor k's values along its own dim and
        repeats them along the others. indexing="xy" swaps the first two dims (Cartesian)."""
        tensors = [*self, *others] if isinstance(self, (list, tuple)) else [self, *others]
        if not tensors:
            raise ValueError("meshgrid: expects a non-empty list of tensors")
        if indexing not in ("ij", "xy"):
            raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
        for k, t in enumerate(tensors):
            if not hasattr(t, "node"):
                raise TypeError(f"meshgrid: argument {k} is {type(t).__name__}, not a tensor")
            if t.ndim > 1:
                raise ShapeError(f"meshgrid: expects 0-D or 1-D tensors, argument {k} has shape "
                                 f"{t.shape}")
            if t.dtype != tensors[0].dtype:
                raise DTypeError(f"meshgrid: expects all tensors to have the same dtype, got "
                                 f"{[x.dtype.name for x in tensors]}")
        axes = list(range(len(tensors)))  # the output dim each tensor runs along
        if indexing == "xy" and len(tensors) > 1:
            axes[0], axes[1] = 1, 0
        shape = [0] * len(tensors)
        for t, k in zip(tensors, axes):
            shape[k] = t.numel()
        grids = []
        for t, k in zip(tensors, axes):
            view = [1] * len(tensors)
            view[k] = t.numel()
            grids.append(t.reshape(tuple(view)).expand(tuple(shape)))
        return tuple(grids)
