"""List ingestion: `Tensor(data)` from nested lists and tuples (ragged or non-numeric data is a
clear error, naming where) and from numpy arrays, into a BUFFER node on a device. Called by
Tensor.__init__ (frontend/tensor.py).
"""
from __future__ import annotations

import numpy as np

from ..dtype import dtypes
from ..engine.devices import Device
from ..ir import node as ir
from ..ir.node import Node
from ..runtimes.buffer import Buffer


def _tensor_type():
    from .tensor import Tensor  # the class this module feeds (imported when first called)
    return Tensor


def to_numpy(data) -> np.ndarray:
    """A numpy array from nested lists/tuples, checking for ragged or non-numeric data."""
    tensor = _tensor_type()

    def shape_of(x, path):
        if isinstance(x, (list, tuple)):
            shapes = [shape_of(item, f"{path}[{i}]") for i, item in enumerate(x)]
            if any(s != shapes[0] for s in shapes[1:]):
                bad = next(i for i, s in enumerate(shapes) if s != shapes[0])
                raise ValueError(f"Tensor(data): ragged nested sequence at {path}: element 0 has "
                                 f"shape {shapes[0]} but element {bad} has shape {shapes[bad]}")
            return (len(x),) + (shapes[0] if shapes else ())
        if isinstance(x, tensor):
            return tuple(x.shape)
        if not isinstance(x, (bool, int, float, np.generic)):
            raise TypeError(f"Tensor(data): {path} is {type(x).__name__} {x!r}, "
                            f"not a number")
        return ()
    shape_of(data, "data")
    flat = _flatten(data)
    if any(isinstance(v, float) for v in flat):
        return np.array(flat, dtype=np.float32).reshape(_shape(data))
    if flat and all(isinstance(v, (bool, np.bool_)) for v in flat):
        return np.array(flat, dtype=np.bool_).reshape(_shape(data))
    if any(isinstance(v, (np.floating,)) for v in flat):
        return np.array(flat, dtype=np.float32).reshape(_shape(data))
    if not flat:
        return np.zeros(_shape(data), dtype=np.float32)
    return np.array(flat, dtype=dtypes.default_int.np).reshape(_shape(data))


def _flatten(x) -> list:
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in _flatten(item)]
    if isinstance(x, _tensor_type()):
        return x.numpy().reshape(-1).tolist()
    return [x]


def _shape(x) -> tuple:
    if isinstance(x, (list, tuple)):
        return (len(x),) + (_shape(x[0]) if x else ())
    if isinstance(x, _tensor_type()):
        return tuple(x.shape)
    return ()


def buffer_node(array: np.ndarray, device: str) -> Node:
    dtype = dtypes.from_numpy(array.dtype)
    spec = Device[device]
    buf = Buffer(spec.name, int(array.size), dtype, spec.allocator)
    buf.copyin(array)
    return ir.buffer(buf, tuple(int(s) for s in array.shape), dtype, spec.name)


def refill(tensor, array: np.ndarray, dtype=None) -> bool:
    """New host values into a realized tensor's own buffer, in place (same shape and dtype;
    `dtype`: the tinylab dtype `array`'s bits are, as bfloat16 arrives as uint16):
    the buffer's version moves and the tensor gets a new BUFFER node, so nothing computed from
    the old contents is reused. False (nothing written) when the tensor is not a realized
    buffer it owns with that shape and dtype. The PyTorch bridge's inputs, call after call."""
    from ..engine import ownership
    node = tensor.node
    if node.op.name != "BUFFER" or tuple(array.shape) != node.shape or \
            (dtype or dtypes.from_numpy(array.dtype)) != node.dtype or not ownership.owns(tensor):
        return False
    buf = node.buffer
    buf.copyin(array)
    buf.version += 1
    tensor.node = ir.buffer(buf, node.shape, node.dtype, node.device, buf.version)
    return True
