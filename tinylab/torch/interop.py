"""Values across the bridge: torch dtypes to tinylab's and back, torch tensors in (copied into
tinylab buffers on every call: a write through `param.data` does not move torch's version
counter, so no copy is skipped) and tinylab results out (copied into new torch tensors). A dtype
tinylab lacks (complex, float8, ...) is an error, never a cast. Called by graph_program.py.
"""
from __future__ import annotations

from types import MappingProxyType
import numpy as np
import torch

from ..dtype import DType, dtypes
from ..errors import DTypeError
from ..frontend.ingest import refill
from ..frontend.tensor import Tensor

TINYLAB_OF = MappingProxyType({
    torch.float32: dtypes.float32, torch.float64: dtypes.float64,
    torch.float16: dtypes.float16, torch.bool: dtypes.bool, torch.int8: dtypes.int8,
    torch.uint8: dtypes.uint8, torch.int16: dtypes.int16, torch.int32: dtypes.int32,
    torch.int64: dtypes.int64, torch.bfloat16: dtypes.bfloat16
})
TORCH_OF = MappingProxyType({value: key for key, value in TINYLAB_OF.items()})


def tinylab_dtype(dtype: torch.dtype, where: str = "") -> DType:
    """The tinylab dtype of a torch dtype; an error naming it (and `where`) if there is none."""
    found = TINYLAB_OF.get(dtype)
    if found is None:
        known = ", ".join(str(d).removeprefix("torch.") for d in TINYLAB_OF)
        raise DTypeError(f"tinylab has no {str(dtype).removeprefix('torch.')} dtype{where}; it "
                         f"computes {known} (nothing is cast silently)")
    return found


def torch_dtype(dtype: DType) -> torch.dtype:
    return TORCH_OF[dtype.scalar]


def host_array(value: torch.Tensor) -> np.ndarray:
    """`value`'s elements as a numpy array: bfloat16 (which numpy lacks) as its uint16 bits."""
    value = value.detach().cpu()
    if value.dtype == torch.bfloat16:
        return value.contiguous().view(torch.int16).numpy().view(np.uint16)
    return value.numpy()


def tensor_of(array: np.ndarray, dtype: DType) -> Tensor:
    """A realized tinylab tensor of `array` (host_array's answer) in `dtype`; 0-d stays 0-d."""
    made = Tensor(np.ascontiguousarray(array).reshape(array.shape))
    if dtype == dtypes.bfloat16:
        made = made.bitcast(dtypes.bfloat16).contiguous()
    return made.realize()


def to_tinylab(value: torch.Tensor) -> Tensor:
    """A realized tinylab tensor holding a copy of `value` (any strides, any device CPU)."""
    return tensor_of(host_array(value), tinylab_dtype(value.dtype))


def to_torch(value: Tensor) -> torch.Tensor:
    """A new torch tensor with `value`'s elements (Tensor.numpy() hands out a copy)."""
    if value.dtype == dtypes.bfloat16:
        bits = value.bitcast(dtypes.uint16).numpy()
        return torch.from_numpy(bits.view(np.int16).copy()).view(torch.bfloat16)
    array = value.numpy()
    return torch.from_numpy(array if array.flags.writeable else array.copy())


class InputSlot:
    """One graph input's tinylab tensor, kept call after call: the torch values are copied into
    its buffer (whose version moves), so a replayed step reads the same buffer and no tensor or
    buffer is made per call."""

    def __init__(self):
        self.tensor: Tensor | None = None

    def load(self, value: torch.Tensor, laid_out: tuple | None = None) -> Tensor:
        """The input's values in this slot's tensor; `laid_out`: a larger shape the values fill
        the leading part of (a symbolic size's buffer, laid out at its bound; the rest zeros)."""
        array, dtype = host_array(value), tinylab_dtype(value.dtype)
        if laid_out is not None and laid_out != array.shape:
            full = np.zeros(laid_out, dtype=array.dtype)
            full[tuple(slice(0, n) for n in array.shape)] = array
            array = full
        if self.tensor is None or not refill(self.tensor, array, dtype):
            self.tensor = tensor_of(array, dtype)
        return self.tensor
