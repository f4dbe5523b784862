"""Layer 0: the scalar types tinylab knows and PyTorch's type-promotion rules.

Gives `dtypes.float32` and friends (each with its C name, numpy name and size), `vec(n)` for the
vector types codegen uses, and `promote(a, b)` / `result_dtype(dtype, python_value)`.
Imported by every layer; imports nothing from tinylab.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .errors import DTypeError
from .memo import Role, register


@dataclass(frozen=True)
class DType:
    """A scalar type (count == 1) or a vector of `count` scalars (used only inside kernels)."""
    name: str
    itemsize: int
    kind: str  # "b" bool, "i" signed int, "u" unsigned int, "f" float
    c_name: str
    numpy_name: str
    count: int = 1

    def __repr__(self) -> str:
        return f"dtypes.{self.name}" if self.count == 1 else f"dtypes.{self.name}.vec({self.count})"

    @property
    def scalar(self) -> DType:
        return _BY_NAME.get(self.name, self) if self.count > 1 else self

    def vec(self, count: int) -> DType:
        if count == 1:
            return self.scalar
        key = (self.name, count)
        found = _VECTORS.get(key)
        if found is None:  # one object per vector type, as per scalar type (kernels ask often)
            found = _VECTORS.setdefault(key, DType(self.name, self.itemsize, self.kind,
                                                   self.c_name, self.numpy_name, count))
        return found

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "u"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def is_narrow_float(self) -> bool:
        """float16 or bfloat16: PyTorch computes their composites and sums in float32 and rounds
        once, and so does tinylab."""
        return self.kind == "f" and self.itemsize == 2

    @property
    def np(self) -> np.dtype:
        return np.dtype(self.numpy_name)

    @property
    def bits(self) -> int:
        return self.itemsize * 8

    def min_value(self):
        if self.is_bool:
            return False
        if self.is_float:
            return -math.inf
        return int(np.iinfo(self.np).min)

    def max_value(self):
        if self.is_bool:
            return True
        if self.is_float:
            return math.inf
        return int(np.iinfo(self.np).max)

    @property
    def min(self):
        """The smallest value (tinygrad's DType.min): -inf for floats, False for bool. The
        smallest finite float is torch.finfo(dtype).min's, here np.finfo(dtype.np).min."""
        return self.min_value()

    @property
    def max(self):
        """The largest value (tinygrad's DType.max): inf for floats, True for bool."""
        return self.max_value()


class dtypes:  # noqa: N801 - the tinygrad / PyTorch spelling users know
    bool = DType("bool", 1, "b", "bool", "bool")
    int8 = DType("int8", 1, "i", "signed char", "int8")
    uint8 = DType("uint8", 1, "u", "unsigned char", "uint8")
    int16 = DType("int16", 2, "i", "short", "int16")
    uint16 = DType("uint16", 2, "u", "unsigned short", "uint16")
    int32 = DType("int32", 4, "i", "int", "int32")
    uint32 = DType("uint32", 4, "u", "unsigned int", "uint32")
    int64 = DType("int64", 8, "i", "long long", "int64")
    uint64 = DType("uint64", 8, "u", "unsigned long long", "uint64")
    float16 = DType("float16", 2, "f", "_Float16", "float16")
    # stored as the top 16 bits of a float32 (numpy and C hold them as uint16); kernels compute
    # in float32 and round to nearest even after each op (codegen/decompose.py)
    bfloat16 = DType("bfloat16", 2, "f", "unsigned short", "uint16")
    float32 = DType("float32", 4, "f", "float", "float32")
    float64 = DType("float64", 8, "f", "double", "float64")
    void = DType("void", 0, "v", "void", "void")  # kernel-level SINK nodes only
    # aliases users type
    half = float16
    float = float32
    double = float64
    int = int32
    long = int64
    char = int8
    uchar = uint8
    short = int16
    uint = uint32
    ushort = uint16
    ulong = uint64
    default_float = float32
    default_int = int32

    # ---- tinygrad's dtype queries (module functions below the class take the tuples) ----
    @staticmethod
    def is_float(dtype) -> bool:  # noqa: F811 - tinygrad's dtypes.is_float(dtype)
        return dtypes.from_any(dtype).is_float

    @staticmethod
    def is_int(dtype) -> bool:
        """Signed or unsigned integer (bool is not one, as in tinygrad)."""
        return dtypes.from_any(dtype).is_int

    @staticmethod
    def is_unsigned(dtype) -> bool:
        return dtypes.from_any(dtype).is_unsigned

    @staticmethod
    def is_bool(dtype) -> bool:
        return dtypes.from_any(dtype).is_bool

    @staticmethod
    def finfo(dtype) -> tuple[int, int]:
        """(exponent bits, mantissa bits) of a float dtype, as tinygrad's dtypes.finfo."""
        dtype = dtypes.from_any(dtype)
        if not dtype.is_float:
            raise ValueError(f"finfo: {dtype!r} is not a floating point type")
        return FLOAT_BITS[dtype.name]

    @staticmethod
    def from_py(value) -> DType:
        """tinygrad's name for of_python: the dtype a Python value (or nested list) gets."""
        while isinstance(value, (list, tuple)) and value:
            value = value[0]
        return dtypes.of_python(value)

    @staticmethod
    def from_numpy(dtype) -> DType:
        name = np.dtype(dtype).name
        if name not in _BY_NAME:
            raise TypeError(f"numpy dtype {name} has no tinylab equivalent; "
                            f"known: {', '.join(sorted(_BY_NAME))}")
        return _BY_NAME[name]

    @staticmethod
    def from_any(dtype) -> DType:
        """Accept a DType, a name (tinygrad's, any case: 'float32', 'float' is float32, 'long',
        'half', 'default_float'), a numpy dtype or a torch-like object with .name."""
        if isinstance(dtype, DType):
            return dtype.scalar
        if isinstance(dtype, str):
            named = getattr(dtypes, dtype.lower(), None)
            if isinstance(named, DType) and named.kind != "v":
                return named
        try:
            return dtypes.from_numpy(dtype)
        except TypeError:
            pass
        raise DTypeError(f"unknown dtype {dtype!r}; known: {', '.join(sorted(_BY_NAME))}")

    @staticmethod
    def min(dtype) -> int | float | bool:  # noqa: A003 - tinygrad's dtypes.min(dtype)
        return dtypes.from_any(dtype).min_value()

    @staticmethod
    def max(dtype) -> int | float | bool:  # noqa: A003 - tinygrad's dtypes.max(dtype)
        return dtypes.from_any(dtype).max_value()

    @staticmethod
    def of_python(value) -> DType:
        """The dtype a bare Python value gets (PyTorch: bool, default int, default float)."""
        if isinstance(value, (bool, np.bool_)):
            return dtypes.bool
        if isinstance(value, (int, np.integer)):
            return dtypes.default_int
        return dtypes.default_float


ALL_DTYPES = (dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32,
              dtypes.uint32, dtypes.int64, dtypes.uint64, dtypes.float16, dtypes.bfloat16,
              dtypes.float32, dtypes.float64)
_BY_NAME = MappingProxyType({d.name: d for d in ALL_DTYPES})
FLOAT_BITS = MappingProxyType({
    "float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23), "float64": (11, 52)
})
dtypes.floats = tuple(d for d in ALL_DTYPES if d.is_float)   # tinygrad's groups of dtypes
dtypes.uints = tuple(d for d in ALL_DTYPES if d.is_unsigned)
dtypes.sints = tuple(d for d in ALL_DTYPES if d.kind == "i")
dtypes.ints = dtypes.uints + dtypes.sints
dtypes.all = ALL_DTYPES
# (scalar name, lanes) -> the one DType of that vector type (DType.vec)
_VECTORS = register("vector dtypes", {}, Role.LIVE)
_CATEGORY = MappingProxyType({"b": 0, "u": 1, "i": 1, "f": 2, "v": -1})


def category(dtype: DType) -> int:
    """0 bool, 1 integer, 2 floating: PyTorch promotes across categories upward."""
    return _CATEGORY[dtype.kind]


def promote(a: DType, b: DType) -> DType:
    """PyTorch's promote_types for two tensor dtypes."""
    a, b = a.scalar, b.scalar
    if a == b:
        return a
    if category(a) != category(b):
        return a if category(a) > category(b) else b
    if a.is_float:
        if a.itemsize == b.itemsize:  # float16 with bfloat16: neither holds the other
            return dtypes.float32
        return a if a.itemsize > b.itemsize else b
    if a.is_unsigned == b.is_unsigned:
        return a if a.itemsize > b.itemsize else b
    signed, unsigned = (a, b) if not a.is_unsigned else (b, a)
    if signed.itemsize > unsigned.itemsize:
        return signed
    return _BY_NAME.get(f"int{min(unsigned.bits * 2, 64)}", dtypes.int64)


def round_to_bfloat16(value: float) -> float:
    """The bfloat16 nearest `value` (ties to even), as a float: a literal's value (kernels round
    with the same rule, codegen/decompose.py). NaN and infinities stay."""
    bits = int(np.array(value, np.float32).view(np.uint32))
    if math.isnan(value):
        return value
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000) & 0xFFFFFFFF
    return float(np.array(rounded, np.uint32).view(np.float32))


def result_dtype(tensor_dtype: DType, python_value) -> DType:
    """Dtype of `tensor op python_scalar`: the scalar only matters when its category is higher."""
    value_dtype = dtypes.of_python(python_value)
    if category(value_dtype) > category(tensor_dtype):
        return value_dtype
    return tensor_dtype

