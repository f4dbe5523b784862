"""Indexing and creation steps for the random-graph fuzzer (random_graphs.py): integer indexing
and stepped / negative slices, stack, cat, eye / arange / tril / triu, gather and scatter. Each
step is a (numpy, Tensor) pair of functions of (input values, param) in INDEXING, and a drawing
function that picks a param fitting the input's shape (None: the step does not fit)."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from tinylab import Tensor

MAX_ELEMENTS = 2048


def _key(param: tuple) -> tuple:
    """A numpy/Tensor index from a param: ints, and (start, stop, step) triples for slices."""
    return tuple(slice(*item) if isinstance(item, tuple) else item for item in param)


def _np_scatter(x: np.ndarray, src: np.ndarray, dim: int, index: np.ndarray) -> np.ndarray:
    out, dim = x.copy(), dim % x.ndim
    region = out[tuple(slice(0, n) if d != dim else slice(None)
                       for d, n in enumerate(index.shape))]
    np.put_along_axis(region, index, src[tuple(slice(0, n) for n in index.shape)], dim)
    return out


def _np_gather(x: np.ndarray, dim: int, index: np.ndarray) -> np.ndarray:
    dim = dim % x.ndim
    region = x[tuple(slice(0, n) if d != dim else slice(None) for d, n in enumerate(index.shape))]
    return np.take_along_axis(region, index, dim)


def _eye_numpy(x: np.ndarray, scale: int) -> np.ndarray:
    rows, cols = (x.shape[-2:] if x.ndim >= 2 else (3, x.shape[-1]))
    return x + np.eye(rows, cols, dtype=x.dtype) * x.dtype.type(scale)


def _eye_tensor(x: Tensor, scale: int) -> Tensor:
    rows, cols = (x.shape[-2:] if x.ndim >= 2 else (3, x.shape[-1]))
    return x + Tensor.eye(rows, cols, dtype=x.dtype) * scale


def _arange_numpy(x: np.ndarray, param) -> np.ndarray:
    start, step = param
    n = x.shape[-1]
    return x + np.arange(n).astype(x.dtype) * x.dtype.type(step) + x.dtype.type(start)


def _arange_tensor(x: Tensor, param) -> Tensor:
    start, step = param
    n = x.shape[-1]
    return x + Tensor.arange(start, start + step * n, step).cast(x.dtype)


INDEXING = {  # name: (numpy(args, param), Tensor(args, param))
    "index": (lambda a, p: a[0][_key(p)], lambda a, p: a[0][_key(p)]),
    "stack": (lambda a, p: np.stack(a, axis=p), lambda a, p: Tensor.stack(*a, dim=p)),
    "cat": (lambda a, p: np.concatenate(a, axis=p), lambda a, p: Tensor.cat(*a, dim=p)),
    "eye_add": (lambda a, p: _eye_numpy(a[0], p), lambda a, p: _eye_tensor(a[0], p)),
    "arange_add": (lambda a, p: _arange_numpy(a[0], p), lambda a, p: _arange_tensor(a[0], p)),
    "tril": (lambda a, p: np.tril(a[0], p), lambda a, p: a[0].tril(p)),
    "triu": (lambda a, p: np.triu(a[0], p), lambda a, p: a[0].triu(p)),
    "gather": (lambda a, p: _np_gather(a[0], p[0], p[1]),
               lambda a, p: a[0].gather(p[0], Tensor(p[1]))),
    "scatter": (lambda a, p: _np_scatter(a[0], a[1], p[0], p[1]),
                lambda a, p: a[0].scatter(p[0], Tensor(p[1]), a[1])),
}


# ---- params ------------------------------------------------------------------------------------
def index_param(draw, shape: tuple, slices_only: bool):
    """x[i, a:b:c, ...]: ints (negative too) and stepped / negative slices on leading axes."""
    if not shape:
        return None
    items = []
    for s in shape[:draw(st.integers(1, len(shape)))]:
        if not slices_only and s > 0 and draw(st.booleans()):
            items.append(draw(st.integers(-s, s - 1)))
            continue
        bound = st.one_of(st.none(), st.integers(-s - 2, s + 2))
        items.append((draw(bound), draw(bound), draw(st.sampled_from([1, 2, 3, -1, -2, -3]))))
    return tuple(items)


def stack_dim(draw, shape: tuple, pieces: int):
    if math.prod(shape) * pieces > MAX_ELEMENTS:
        return None
    return draw(st.integers(-len(shape) - 1, len(shape)))


def eye_scale(draw, shape: tuple):
    if not shape or (len(shape) == 1 and 3 * shape[0] > MAX_ELEMENTS):
        return None
    return draw(st.sampled_from([1, 2, -3]))


def arange_param(draw, shape: tuple, dtype: np.dtype):
    if not shape or shape[-1] == 0:
        return None
    steps = [1, 2, -1, -3] + ([0.5, -0.25] if dtype.kind == "f" else [])
    return draw(st.integers(-3, 3)), draw(st.sampled_from(steps))


def triangle_param(draw, shape: tuple):
    return None if len(shape) < 2 else draw(st.integers(-3, 3))


def gather_param(draw, shape: tuple, seed: int):
    """(dim, index): index values in [0, size), at most shape's size in the other dims."""
    if not shape:
        return None
    dim = draw(st.integers(0, len(shape) - 1))
    if shape[dim] == 0:
        return None
    index_shape = tuple(draw(st.integers(0, 4)) if d == dim else draw(st.integers(0, s))
                        for d, s in enumerate(shape))
    rng = np.random.default_rng(seed)
    return dim - len(shape) * draw(st.integers(0, 1)), \
        rng.integers(0, shape[dim], index_shape).astype(np.int32)


def scatter_param(draw, shape: tuple, seed: int):
    """(dim, index) with distinct targets along dim at every position (PyTorch leaves which of
    several writes to one element wins unspecified)."""
    if not shape:
        return None
    dim = draw(st.integers(0, len(shape) - 1))
    if shape[dim] == 0:
        return None
    index_shape = tuple(draw(st.integers(0, shape[dim])) if d == dim else draw(st.integers(0, s))
                        for d, s in enumerate(shape))
    rng = np.random.default_rng(seed)
    full = index_shape[:dim] + (shape[dim],) + index_shape[dim + 1:]
    order = np.argsort(rng.random(full), axis=dim)
    index = np.take(order, range(index_shape[dim]), axis=dim).astype(np.int32)
    return dim - len(shape) * draw(st.integers(0, 1)), index
