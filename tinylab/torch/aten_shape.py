"""ATen's view, indexing and creation ops in tinylab's Tensor API: the named functions that
aten_table.py's rows point at when a row outgrows a line. Each follows the ATen schema's argument
order and defaults (`aten.slice.Tensor(self, dim=0, start=None, end=None, step=1)`), so the
graph's arguments are passed as they come.
"""
from __future__ import annotations

from ..dtype import dtypes
from ..errors import UnsupportedError
from ..frontend.tensor import Tensor
from .interop import tinylab_dtype


def _dim(x: Tensor, dim: int) -> int:
    return dim + x.ndim if dim < 0 else dim


def _dims(x: Tensor, dims) -> tuple:
    """A reduce's dims: None or [] means every dim (ATen's sum.dim_IntList with dim=[])."""
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return tuple(range(x.ndim))
    return tuple(_dim(x, d) for d in (dims if isinstance(dims, (list, tuple)) else (dims,)))


def view(x: Tensor, shape) -> Tensor:
    return x.reshape(tuple(shape))


def expand(x: Tensor, size, implicit: bool = False) -> Tensor:
    lead = len(size) - x.ndim
    return x.expand(tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(size)))


def slice_(x: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    dim = _dim(x, dim)
    start, end = (None if v is None else max(min(v, x.shape[dim]), -x.shape[dim])
                  for v in (start, end))
    return x[(slice(None),) * dim + (slice(start, end, step),)]


def select(x: Tensor, dim: int, index: int) -> Tensor:
    return x[(slice(None),) * _dim(x, dim) + (index,)]


def squeeze(x: Tensor, dim=None) -> Tensor:
    if dim is None:
        return x.squeeze()
    dims = [_dim(x, d) for d in (dim if isinstance(dim, (list, tuple)) else (dim,))]
    return x.reshape(tuple(s for i, s in enumerate(x.shape) if not (i in dims and s == 1)))


def split(x: Tensor, split_size, dim: int = 0) -> list:
    return list(x.split(split_size, _dim(x, dim)))


def unbind(x: Tensor, dim: int = 0) -> list:
    dim = _dim(x, dim)
    return [select(x, dim, i) for i in range(x.shape[dim])]


def index(x: Tensor, indices) -> Tensor:
    """x[i0, i1, ...] where each entry is an index tensor or None (a whole dim)."""
    return x[tuple(slice(None) if i is None else i for i in indices)]


def constant_pad_nd(x: Tensor, pad, value=0.0) -> Tensor:
    """pad: (last dim before, after, second-last before, after, ...); a negative pad crops."""
    pairs = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        pairs[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    crop = [(max(-b, 0), s - max(-a, 0)) for (b, a), s in zip(pairs, x.shape)]
    if any(b or e != s for (b, e), s in zip(crop, x.shape)):
        x = x.shrink(tuple(crop))
    return x.pad(tuple((max(b, 0), max(a, 0)) for b, a in pairs), value=value)


def flip(x: Tensor, dims) -> Tensor:
    return x.flip(tuple(_dim(x, d) for d in dims)) if len(dims) else x


def cat(tensors, dim: int = 0) -> Tensor:
    tensors = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]  # legacy empty
    return tensors[0].cat(*tensors[1:], dim=dim) if len(tensors) > 1 else tensors[0]


def stack(tensors, dim: int = 0) -> Tensor:
    return tensors[0].stack(*tensors[1:], dim=dim) if len(tensors) > 1 else \
        tensors[0].unsqueeze(dim)


def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    return x[(slice(None),) * _dim(x, dim) + (index,)]


def _creation_dtype(dtype, default=dtypes.float32):
    return default if dtype is None else tinylab_dtype(dtype)


def full(size, fill_value, dtype=None, **_) -> Tensor:
    default = dtypes.of_python(fill_value) if dtype is None else None
    if default is dtypes.int32:
        default = dtypes.int64  # torch.full with an int fill makes int64
    return Tensor.full(tuple(size), fill_value, dtype=default or tinylab_dtype(dtype))


def full_like(x: Tensor, fill_value, dtype=None, **_) -> Tensor:
    return Tensor.full(x.shape, fill_value, dtype=x.dtype if dtype is None else
                       tinylab_dtype(dtype))


def arange(start, end=None, step=1, dtype=None, **_) -> Tensor:
    if end is None:
        start, end = 0, start
    whole = all(isinstance(v, int) for v in (start, end, step))
    default = dtypes.int64 if whole else dtypes.float32
    return Tensor.arange(start, end, step, dtype=_creation_dtype(dtype, default))


def to_copy(x: Tensor, dtype=None, **_) -> Tensor:
    return x if dtype is None else x.cast(tinylab_dtype(dtype))


def pixel_shuffle(x, factor: int):
    """(.., C·r², H, W) -> (.., C, H·r, W·r): each channel's r×r block spread over the plane."""
    *lead, c, h, w = x.shape
    lead, out = tuple(lead), c // (factor * factor)
    y = x.reshape(lead + (out, factor, factor, h, w))
    n = len(lead)
    y = y.permute(tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return y.reshape(lead + (out, h * factor, w * factor))


def pixel_unshuffle(x, factor: int):
    """The inverse of pixel_shuffle: (.., C, H·r, W·r) -> (.., C·r², H, W)."""
    *lead, c, h, w = x.shape
    lead, n = tuple(lead), len(lead)
    y = x.reshape(lead + (c, h // factor, factor, w // factor, factor))
    y = y.permute(tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return y.reshape(lead + (c * factor * factor, h // factor, w // factor))


def diag_embed(x, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """x's last dim placed on a diagonal (offset above it, below when negative) of new dims."""
    size = x.shape[-1] + abs(offset)
    rows = Tensor.arange(size).reshape(size, 1)
    on = (Tensor.arange(size).reshape(1, size) - rows) == offset
    values = x.pad(((0, 0),) * (x.ndim - 1) + ((max(-offset, 0), max(offset, 0)),))
    out = on.where(values.unsqueeze(-1), 0.0).cast(x.dtype)   # (.., row, column)
    ndim = out.ndim
    first, second = dim1 % ndim, dim2 % ndim
    rest = [d for d in range(ndim - 2)]
    order = [None] * ndim
    order[first], order[second] = ndim - 2, ndim - 1
    it = iter(rest)
    order = [o if o is not None else next(it) for o in order]
    return out.permute(tuple(order))


def slice_scatter(x, src, dim: int = 0, start=None, end=None, step: int = 1):
    """x with src written over x[start:end:step] along dim."""
    from .aten_grads import slice_backward
    dim = _dim(x, dim)
    placed = slice_backward(src, x.shape, dim, start, end, step)
    mask = slice_backward(Tensor.ones(*src.shape, dtype=dtypes.bool), x.shape, dim, start, end,
                          step)
    return mask.where(placed, x)


def mode_pad(mode: str):
    """reflection_padNd / replication_padNd: pad (last dim before, after, ...) in that mode."""
    def row(x, padding):
        pairs = [(0, 0)] * x.ndim
        for i in range(len(padding) // 2):
            pairs[x.ndim - 1 - i] = (padding[2 * i], padding[2 * i + 1])
        return x.pad(tuple(pairs), mode=mode)
    return row


def as_strided(x, size, stride, storage_offset=None):
    """x's elements (read in row-major order) at offset + Σ i_k·stride_k, as movement ops: the
    dims sorted by stride, each stride a multiple of the next and no two rows overlapping
    (a permuted, strided or expanded view; a size-1 dim's stride is free). The flat values are
    padded to whole rows, reshaped to (rows, stride) pairs, and each pair's first column kept."""
    offset = storage_offset or 0
    dims = [(n, s, k) for k, (n, s) in enumerate(zip(size, stride)) if n != 1 and s != 0]
    dims.sort(key=lambda d: -d[1])
    if any(outer % inner or n * inner > outer for (_, outer, _), (n, inner, _) in
           zip(dims, dims[1:])) or any(s < 0 for s in stride):
        raise UnsupportedError(f"as_strided{tuple(size)} with strides {tuple(stride)}: rows that "
                               f"overlap or strides that do not divide are not mapped")
    flat = x.reshape(-1)
    if not dims:
        picked = flat[offset:offset + 1].reshape(())
    else:
        span = dims[0][0] * dims[0][1]
        need = offset + span - flat.shape[0]
        flat = flat.pad(((0, need),)) if need > 0 else flat
        picked = flat[offset:offset + span].reshape(dims[0][0], dims[0][1])
        for (n, step, _) in dims[1:]:
            picked = picked[..., :n * step].reshape(picked.shape[:-1] + (n, step))
        picked = picked[..., 0]
    order = [k for _, _, k in dims]
    placed = picked.permute(tuple(sorted(range(len(order)), key=lambda i: order[i])))
    kept = sorted(order)
    shaped = placed.reshape(tuple(n if k in kept else 1 for k, n in enumerate(size)))
    return shaped.expand(tuple(size))


def as_strided_scatter(x, src, size, stride, storage_offset=None):
    """x with src written where x.as_strided(size, stride, offset) reads (x in row-major order):
    each place's flat index offset + Σ i_k·stride_k, scattered; where places repeat, the last
    write stays (PyTorch leaves that order unspecified)."""
    flat_index = Tensor.full(tuple(size), storage_offset or 0, dtype=dtypes.int32)
    for k, (n, step) in enumerate(zip(size, stride)):
        along = Tensor.arange(n, dtype=dtypes.int32) * step
        flat_index = flat_index + along.reshape(tuple(n if j == k else 1 for j in range(len(size))))
    written = x.reshape(-1).scatter(0, flat_index.reshape(-1), src.reshape(-1).cast(x.dtype))
    return written.reshape(x.shape)
