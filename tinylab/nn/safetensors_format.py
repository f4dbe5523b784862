"""safetensors files, byte for byte what the `safetensors` package writes: an 8-byte little-endian
header length N, N bytes of JSON header padded with spaces to a multiple of 8, then the tensors'
bytes. `safe_load` validates the whole header (length, UTF-8, JSON, dtypes, shapes, offsets)
before it reads any tensor data. Re-exported by nn/state.py; uses only the public Tensor API.
"""
from __future__ import annotations

import io
import json
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from ..dtype import dtypes
from ..frontend.tensor import Tensor

MAX_HEADER_BYTES = 100_000_000  # the safetensors package refuses larger headers too
METADATA_KEY = "__metadata__"

# The safetensors Dtype enum, in its order: writers sort tensors by it (last first), then by name.
DTYPE_ORDER = ("BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32",
               "U32", "F32", "F64", "I64", "U64")
CODE_OF = MappingProxyType({
    dtypes.bool: "BOOL", dtypes.uint8: "U8", dtypes.int8: "I8", dtypes.int16: "I16",
    dtypes.uint16: "U16", dtypes.float16: "F16", dtypes.int32: "I32", dtypes.uint32: "U32",
    dtypes.float32: "F32", dtypes.float64: "F64", dtypes.int64: "I64", dtypes.uint64: "U64",
    dtypes.bfloat16: "BF16"
})
# file dtype -> little-endian numpy dtype of its bytes (BF16: its uint16 bits)
NUMPY_OF = MappingProxyType({code: np.dtype(dtype.np).newbyteorder("<") for dtype, code in CODE_OF.items()})


class SafetensorsError(ValueError):
    """The file is not a valid safetensors file; the message says what is wrong and where."""


@dataclass(frozen=True)
class Entry:
    name: str
    code: str                 # safetensors dtype code, e.g. "F32"
    shape: tuple[int, ...]
    begin: int                # byte offsets into the data section
    end: int


# ---- writing ----
def _header_bytes(entries: list[Entry], metadata: dict[str, str] | None) -> bytes:
    header: dict = {} if metadata is None else {METADATA_KEY: metadata}
    for e in entries:
        header[e.name] = {"dtype": e.code, "shape": list(e.shape), "data_offsets": [e.begin, e.end]}
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return text + b" " * (-len(text) % 8)


def _check_save_arguments(tensors, metadata) -> None:
    if not isinstance(tensors, dict):
        raise TypeError(f"safe_save: tensors must be a dict name -> Tensor, got "
                        f"{type(tensors).__name__}")
    for name, tensor in tensors.items():
        if not isinstance(name, str) or name == METADATA_KEY:
            raise ValueError(f"safe_save: tensor names must be strings other than "
                             f"{METADATA_KEY!r}, got {name!r}")
        if not isinstance(tensor, Tensor):
            raise TypeError(f"safe_save: tensors[{name!r}] is {type(tensor).__name__}, "
                            f"not a Tensor")
        if tensor.dtype not in CODE_OF:
            raise TypeError(f"safe_save: tensors[{name!r}] has dtype {tensor.dtype.name}, which "
                            f"safetensors cannot store")
    if metadata is not None and (not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError("safe_save: metadata must be a dict of str -> str")


def safe_save(tensors: dict[str, Tensor], path, metadata: dict[str, str] | None = None) -> None:
    """Write tensors (name -> Tensor) to a .safetensors file that the safetensors package would
    write byte for byte (with at most one metadata key: it writes a hash map in random order)."""
    _check_save_arguments(tensors, metadata)
    if tensors:
        Tensor.realize(*tensors.values())  # one schedule for every lazy tensor
    order = sorted(tensors, key=lambda n: (-DTYPE_ORDER.index(CODE_OF[tensors[n].dtype]), n))
    entries, offset = [], 0
    for name in order:
        t = tensors[name]
        size = t.numel() * t.dtype.itemsize
        entries.append(Entry(name, CODE_OF[t.dtype], tuple(t.shape), offset, offset + size))
        offset += size
    header = _header_bytes(entries, metadata)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        for e in entries:
            f.write(np.ascontiguousarray(_file_values(tensors[e.name]), NUMPY_OF[e.code]).tobytes())


def _file_values(tensor: Tensor) -> np.ndarray:
    """What the file holds of a tensor: its values, or a bfloat16's bits."""
    if tensor.dtype == dtypes.bfloat16:
        return tensor.bitcast(dtypes.uint16).numpy()
    return tensor.numpy()


# ---- reading: validate everything first ----
def _open(source):
    """A binary file object and a display name for a path or for the bytes of a file."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(source)), "<bytes>"
    if isinstance(source, (str, os.PathLike)):
        return open(source, "rb"), str(Path(source))
    raise TypeError(f"safe_load: expected a path or bytes, got {type(source).__name__}")


def _no_duplicates(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    duplicated = sorted({k for k in keys if keys.count(k) > 1})
    if duplicated:
        raise SafetensorsError(f"the header repeats the key(s) {duplicated}")
    return dict(pairs)


def _reject_constant(name: str):
    raise SafetensorsError(f"the header contains {name}, which is not valid JSON")


def _read_header(f, file_size: int, where: str) -> tuple[int, dict]:
    """The header length N and the parsed JSON object, after checking both."""
    if file_size < 8:
        raise SafetensorsError(f"{where}: {file_size} bytes is too short for a safetensors file "
                               f"(it starts with an 8-byte header length)")
    (length,) = struct.unpack("<Q", f.read(8))
    if length > MAX_HEADER_BYTES:
        raise SafetensorsError(f"{where}: header length {length} is over the "
                               f"{MAX_HEADER_BYTES}-byte limit")
    if 8 + length > file_size:
        raise SafetensorsError(f"{where}: header length {length} runs past the end of the "
                               f"{file_size}-byte file")
    raw = f.read(length)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SafetensorsError(f"{where}: the header is not UTF-8 ({error})") from None
    if not text.startswith("{"):
        raise SafetensorsError(f"{where}: the header must be a JSON object starting with '{{'")
    try:
        header = json.loads(text, object_pairs_hook=_no_duplicates,
                            parse_constant=_reject_constant)
    except (json.JSONDecodeError, RecursionError) as error:
        raise SafetensorsError(f"{where}: the header is not valid JSON ({error!r})") from None
    except SafetensorsError as error:
        raise SafetensorsError(f"{where}: {error}") from None
    return length, header


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _parse_entry(name: str, info) -> Entry:
    if not isinstance(info, dict):
        raise SafetensorsError(f"tensor {name!r}: expected an object, got {type(info).__name__}")
    missing = [k for k in ("dtype", "shape", "data_offsets") if k not in info]
    if missing:
        raise SafetensorsError(f"tensor {name!r}: missing {missing}")
    code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if code not in NUMPY_OF:
        known = "unsupported here" if code in DTYPE_ORDER else "unknown"
        raise SafetensorsError(f"tensor {name!r}: dtype {code!r} is {known}; tinylab reads "
                               f"{sorted(NUMPY_OF)}")
    if not isinstance(shape, list) or not all(_is_count(s) for s in shape):
        raise SafetensorsError(f"tensor {name!r}: shape must be a list of non-negative ints, "
                               f"got {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_count, offsets))):
        raise SafetensorsError(f"tensor {name!r}: data_offsets must be two non-negative ints, "
                               f"got {offsets!r}")
    return Entry(name, code, tuple(shape), offsets[0], offsets[1])


def _parse_metadata(value) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise SafetensorsError(f"{METADATA_KEY} must be an object of strings, got {value!r}")
    return value


def _check_layout(entries: list[Entry], data_size: int) -> None:
    """Tensors must tile the data section exactly, in offset order, each with its own size."""
    position = 0
    for e in sorted(entries, key=lambda e: (e.begin, e.end)):
        if e.begin != position or e.end < e.begin:
            raise SafetensorsError(f"tensor {e.name!r}: data_offsets [{e.begin}, {e.end}] should "
                                   f"start at {position} (tensors must not overlap or leave gaps)")
        expected = math.prod(e.shape) * NUMPY_OF[e.code].itemsize
        if e.end - e.begin != expected:
            raise SafetensorsError(f"tensor {e.name!r}: {e.code}{list(e.shape)} needs {expected} "
                                   f"bytes but data_offsets [{e.begin}, {e.end}] hold "
                                   f"{e.end - e.begin}")
        position = e.end
    if position != data_size:
        raise SafetensorsError(f"the tensors cover {position} bytes but the file holds "
                               f"{data_size} bytes of data")


def read_index(f, file_size: int, where: str) -> tuple[int, list[Entry], dict[str, str]]:
    """Validate a whole safetensors header: (data start, entries, metadata). Reads no data."""
    length, header = _read_header(f, file_size, where)
    if not isinstance(header, dict):
        raise SafetensorsError(f"{where}: the header must be a JSON object")
    try:
        metadata = _parse_metadata(header[METADATA_KEY]) if METADATA_KEY in header else {}
        entries = [_parse_entry(name, info) for name, info in header.items()
                   if name != METADATA_KEY]
        _check_layout(entries, file_size - 8 - length)
    except SafetensorsError as error:
        raise SafetensorsError(f"{where}: {error}") from None
    return 8 + length, entries, metadata


def _to_tensor(data: bytes, entry: Entry) -> Tensor:
    array = np.frombuffer(data, dtype=NUMPY_OF[entry.code]).reshape(entry.shape)
    tensor = Tensor(array.astype(array.dtype.newbyteorder("="), copy=True))
    if entry.code == "BF16":  # its bits, into a bfloat16 buffer of its own (one copy kernel)
        return tensor.bitcast(dtypes.bfloat16).contiguous().realize()
    return tensor


def safe_load(source) -> dict[str, Tensor]:
    """name -> Tensor from a .safetensors path (or its bytes), in file order (BF16 as bfloat16,
    as tinygrad's). Raises SafetensorsError (a ValueError) for
    any malformed header before reading tensor data."""
    f, where = _open(source)
    with f:
        file_size = f.seek(0, os.SEEK_END)
        f.seek(0)
        start, entries, _ = read_index(f, file_size, where)
        f.seek(start)
        data = f.read(file_size - start)
    if len(data) != file_size - start:
        raise SafetensorsError(f"{where}: the file changed size while it was read")
    entries.sort(key=lambda e: e.begin)
    return {e.name: _to_tensor(data[e.begin:e.end], e) for e in entries}


def safe_load_metadata(source) -> dict[str, str]:
    """The free-form __metadata__ strings of a .safetensors file (validated like safe_load)."""
    f, where = _open(source)
    with f:
        file_size = f.seek(0, os.SEEK_END)
        f.seek(0)
        return read_index(f, file_size, where)[2]
