"""torch_load: read a .pth/.pt file written by torch.save (the zip format of PyTorch >= 1.6)
without PyTorch and without running arbitrary code. The pickle inside may only name containers,
PyTorch's tensor-rebuild functions, storage types and dtypes; anything else is refused. Tensor
bytes come from the archive's data/ entries, bounds-checked. Re-exported by nn/state.py.
"""
from __future__ import annotations

import io
import math
import os
import pickle
import zipfile
from collections import OrderedDict
from pathlib import Path
from types import MappingProxyType

import numpy as np

from ..dtype import dtypes
from ..errors import TinylabError
from ..frontend.tensor import Tensor


class UnsafePickleError(TinylabError, pickle.UnpicklingError):
    """The pickle names something other than tensors, containers and numbers."""


class TorchFileError(TinylabError, ValueError):
    """The file is not a PyTorch zip checkpoint, or its tensors do not fit their storages."""


# torch dtype name -> numpy dtype of the stored bytes (PyTorch's name aliases included)
NUMPY_OF = MappingProxyType({
    "float32": "f4", "float": "f4", "float64": "f8", "double": "f8", "float16": "f2",
    "half": "f2", "bfloat16": "u2", "int64": "i8", "long": "i8", "int32": "i4",
    "int": "i4", "int16": "i2", "short": "i2", "int8": "i1", "uint8": "u1", "bool": "?",
    "uint16": "u2", "uint32": "u4", "uint64": "u8"
})
STORAGE_DTYPE = MappingProxyType({
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool", "UntypedStorage": "uint8"
})


class TorchDtype(str):
    """Stands in for a torch.dtype object named in the pickle (e.g. 'uint16')."""


class StorageType(str):
    """Stands in for a torch storage class (e.g. torch.FloatStorage); the value is its dtype."""


class TensorType:
    """Stands in for torch.Tensor / torch.nn.Parameter in _rebuild_from_type_v2."""


class Storage:
    """The bytes of one storage (archive entry data/<key>) and their element dtype."""

    def __init__(self, data: bytes, dtype: str, key: str):
        self.data, self.dtype, self.key = data, dtype, key

    def elements(self, dtype: str) -> np.ndarray:
        item = np.dtype(NUMPY_OF[dtype]).newbyteorder("<")
        if len(self.data) % item.itemsize:
            raise TorchFileError(f"storage {self.key}: {len(self.data)} bytes is not a whole "
                                 f"number of {dtype} elements")
        return np.frombuffer(self.data, dtype=item)


# ---- rebuilding tensors (what the pickle's allowed functions do here) ----
def _check_ints(values, what: str) -> tuple[int, ...]:
    if not isinstance(values, (tuple, list)) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
        raise TorchFileError(f"tensor {what} must be non-negative ints, got {values!r}")
    return tuple(values)


def _strided(elements: np.ndarray, offset: int, size: tuple, stride: tuple, key: str):
    """elements[offset + sum(index * stride)] for every index of `size`, bounds-checked."""
    if len(size) != len(stride):
        raise TorchFileError(f"storage {key}: size {size} and stride {stride} differ in length")
    if math.prod(size) == 0:
        return np.zeros(size, dtype=elements.dtype)
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= len(elements):
        raise TorchFileError(f"storage {key}: a tensor of size {size}, stride {stride} at offset "
                             f"{offset} reads element {last} of only {len(elements)}")
    byte_strides = tuple(s * elements.itemsize for s in stride)
    view = np.lib.stride_tricks.as_strided(elements[offset:], size, byte_strides, writeable=False)
    return np.array(view, order="C")  # a copy (ascontiguousarray would make 0-d into 1-d)


def _tensor(storage, offset, size, stride, dtype: str) -> Tensor:
    if not isinstance(storage, Storage):
        raise TorchFileError(f"a tensor must be rebuilt from a storage, got "
                             f"{type(storage).__name__}")
    offset = _check_ints((offset,), "storage_offset")[0]
    size, stride = _check_ints(size, "size"), _check_ints(stride, "stride")
    array = _strided(storage.elements(dtype), offset, size, stride, storage.key)
    tensor = Tensor(array.astype(array.dtype.newbyteorder("="), copy=False))
    if dtype == "bfloat16":  # its uint16 bits, into a bfloat16 buffer of its own
        return tensor.bitcast(dtypes.bfloat16).contiguous().realize()
    return tensor


def _rebuild_tensor(storage, storage_offset, size, stride, *_ignored):
    return _tensor(storage, storage_offset, size, stride, getattr(storage, "dtype", "uint8"))


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, hooks, dtype,
                       *_ignored):
    if not isinstance(dtype, TorchDtype):
        raise TorchFileError(f"_rebuild_tensor_v3 needs a dtype, got {dtype!r}")
    return _tensor(storage, storage_offset, size, stride, str(dtype))


def _rebuild_parameter(data, *_ignored):
    if not isinstance(data, Tensor):
        raise TorchFileError(f"a parameter must wrap a tensor, got {type(data).__name__}")
    return data


def _rebuild_from_type(function, new_type, arguments, state):
    if function not in (_rebuild_tensor, _rebuild_tensor_v3) or not isinstance(new_type,
                                                                               TensorType):
        raise UnsafePickleError("_rebuild_from_type_v2 may only rebuild plain tensors")
    return function(*arguments)


TENSOR_TYPE = TensorType()
ALLOWED = {  # (module, name) -> what the pickle gets instead; nothing else is ever imported
    ("collections", "OrderedDict"): OrderedDict,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type,
    ("torch", "Tensor"): TENSOR_TYPE,
    ("torch.nn.parameter", "Parameter"): TENSOR_TYPE,
    ("torch", "Size"): tuple,
    ("torch", "device"): str,
    ("builtins", "set"): set, ("__builtin__", "set"): set,
    ("builtins", "frozenset"): frozenset, ("__builtin__", "frozenset"): frozenset,
}
ALLOWED.update({("torch", name): StorageType(dtype) for name, dtype in STORAGE_DTYPE.items()})
ALLOWED[("torch.storage", "UntypedStorage")] = StorageType("uint8")
ALLOWED.update({("torch", name): TorchDtype(name) for name in NUMPY_OF})
ALLOWED = MappingProxyType(ALLOWED)   # read-only from here on


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickles only what ALLOWED names; storages are read from the archive on demand."""

    def __init__(self, data: bytes, archive: zipfile.ZipFile, prefix: str, where: str):
        super().__init__(io.BytesIO(data))
        self.archive, self.prefix, self.where = archive, prefix, where
        self.names = set(archive.namelist())
        self.storages: dict[str, Storage] = {}

    def find_class(self, module: str, name: str):
        if (module, name) in ALLOWED:
            return ALLOWED[(module, name)]
        raise UnsafePickleError(f"torch_load: {self.where} refers to {module}.{name}; only "
                                f"tensors, containers and numbers are loaded (never arbitrary "
                                f"objects). If this is a whole model, save model.state_dict().")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise TorchFileError(f"torch_load: {self.where}: unknown persistent id {pid!r}")
        _, storage_type, key, _location, numel = pid
        if not isinstance(storage_type, StorageType) or not isinstance(key, str):
            raise TorchFileError(f"torch_load: {self.where}: bad storage reference {pid!r}")
        if key not in self.storages:
            self.storages[key] = self._read_storage(key, str(storage_type), numel)
        return self.storages[key]

    def _read_storage(self, key: str, dtype: str, numel) -> Storage:
        entry = f"{self.prefix}data/{key}"
        if entry not in self.names:
            raise TorchFileError(f"torch_load: {self.where}: storage {key!r} is missing "
                                 f"({entry} is not in the archive)")
        expected = numel * np.dtype(NUMPY_OF[dtype]).itemsize if isinstance(numel, int) else -1
        if self.archive.getinfo(entry).file_size != expected:
            raise TorchFileError(f"torch_load: {self.where}: storage {key!r} should hold "
                                 f"{numel} {dtype} elements but {entry} has "
                                 f"{self.archive.getinfo(entry).file_size} bytes")
        return Storage(self.archive.read(entry), dtype, key)


def _pickle_entry(archive: zipfile.ZipFile, where: str) -> str:
    """'<prefix>/data.pkl': the one pickle at the archive's top folder."""
    candidates = [n for n in archive.namelist()
                  if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(candidates) != 1:
        raise TorchFileError(f"torch_load: {where} is a zip file but not a torch.save checkpoint "
                             f"(expected one <name>/data.pkl, found {len(candidates)})")
    return candidates[0]


def torch_load(path) -> object:
    """What torch.save stored (usually a state dict: name -> Tensor), with every torch tensor
    turned into a Tensor (bfloat16 as bfloat16). Raises UnsafePickleError for anything
    that is not tensors, containers and numbers, TorchFileError for a malformed file."""
    where = str(Path(path)) if isinstance(path, (str, os.PathLike)) else "<file>"
    if isinstance(path, (str, os.PathLike)) and not Path(path).is_file():
        raise FileNotFoundError(f"torch_load: no such file: {where}")
    if not zipfile.is_zipfile(path):
        raise TorchFileError(f"torch_load: {where} is not a zip archive; only the zip format "
                             f"torch.save writes since PyTorch 1.6 is supported (re-save it with "
                             f"a recent PyTorch, or convert it to safetensors)")
    with zipfile.ZipFile(path) as archive:
        entry = _pickle_entry(archive, where)
        prefix = entry[:-len("data.pkl")]
        byteorder = archive.read(prefix + "byteorder").decode() \
            if prefix + "byteorder" in archive.namelist() else "little"
        if byteorder != "little":
            raise TorchFileError(f"torch_load: {where} was saved on a {byteorder!r}-endian "
                                 f"machine; only little-endian checkpoints are supported")
        try:
            return RestrictedUnpickler(archive.read(entry), archive, prefix, where).load()
        except (UnsafePickleError, TorchFileError):
            raise
        except (pickle.UnpicklingError, EOFError, TypeError, ValueError, IndexError,
                AttributeError, KeyError) as error:
            raise TorchFileError(f"torch_load: {where}: malformed pickle ({error!r})") from None
