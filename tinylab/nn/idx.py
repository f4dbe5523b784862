"""The IDX file format of MNIST and Fashion-MNIST (raw or gzip-compressed): a magic number
(0, 0, element type, number of dims), each dim as a big-endian uint32, then the elements
big-endian. `read_idx` validates all of it while streaming, so a corrupt or oversized file fails
with a clear IDXError before it fills memory. Used by nn/datasets.py; needs only numpy.
"""
from __future__ import annotations

import gzip
import math
import struct
import zlib
from pathlib import Path
from types import MappingProxyType

import numpy as np

# element type byte -> big-endian numpy dtype
ELEMENT_TYPES = MappingProxyType({0x08: np.dtype(">u1"), 0x09: np.dtype(">i1"), 0x0B: np.dtype(">i2"),
                                  0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")})
GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_LIMIT_BYTES = 1 << 32  # larger element data is refused (MNIST's biggest file: 47 MB)


class IDXError(ValueError):
    """The file is not a valid IDX file; the message names the file and the problem."""


def _read_exactly(f, count: int, what: str, path: Path) -> bytes:
    data = f.read(count)
    if len(data) != count:
        raise IDXError(f"{path}: the file ends inside the {what} ({len(data)} of {count} bytes)")
    return data


def _read_shape(f, path: Path) -> tuple[np.dtype, tuple[int, ...]]:
    zero0, zero1, type_code, ndim = _read_exactly(f, 4, "magic number", path)
    if zero0 or zero1:
        raise IDXError(f"{path}: not an IDX file (the magic number must start with two zero "
                       f"bytes, got {zero0:#04x} {zero1:#04x})")
    if type_code not in ELEMENT_TYPES:
        known = ", ".join(f"{code:#04x}" for code in ELEMENT_TYPES)
        raise IDXError(f"{path}: unknown IDX element type {type_code:#04x} (known: {known})")
    if ndim == 0:
        raise IDXError(f"{path}: an IDX file needs at least one dimension")
    dims = struct.unpack(f">{ndim}I", _read_exactly(f, 4 * ndim, "dimension sizes", path))
    return ELEMENT_TYPES[type_code], dims


def read_idx(path, limit_bytes: int = DEFAULT_LIMIT_BYTES) -> np.ndarray:
    """The array stored in an IDX file (gzip or raw, detected by content), native byte order.
    Raises IDXError for a bad magic number, truncated or trailing data, or data over the limit."""
    path = Path(path)
    with open(path, "rb") as raw:
        compressed = raw.read(2) == GZIP_MAGIC
    try:
        with (gzip.open(path, "rb") if compressed else open(path, "rb")) as f:
            dtype, dims = _read_shape(f, path)
            size = math.prod(dims) * dtype.itemsize
            if size > limit_bytes:
                raise IDXError(f"{path}: dims {dims} need {size} bytes, over the "
                               f"{limit_bytes}-byte limit")
            data = _read_exactly(f, size, f"data for dims {dims}", path)
            if f.read(1):
                raise IDXError(f"{path}: unexpected bytes after the data for dims {dims}")
    except (OSError, EOFError, zlib.error) as error:  # gzip.BadGzipFile is an OSError
        raise IDXError(f"{path}: corrupt gzip data ({error})") from None
    return np.frombuffer(data, dtype=dtype).astype(dtype.newbyteorder("=")).reshape(dims)
