"""Random numbers, made by kernels, not by numpy: Threefry-2x32 (20 rounds, the counter-based
generator of Salmon et al., "Parallel random numbers: as easy as 1, 2, 3") applied to a counter
per element (creation.py's fusable 0..n-1), keyed by (seed, call number). The key lives in a
device buffer that a kernel increments, so TinyJit replays draw fresh numbers. rand, randn,
randint, normal, uniform, the initializers, randperm and multinomial; mixed into Tensor
(frontend/tensor.py).
"""
from __future__ import annotations

import math

from .. import config
from ..dtype import dtypes
from ..errors import ArgumentError, ShapeError
from .creation import shape_args
from ..memo import Role, register


class _RandomState:
    seed: int = int(config.SEED.value)
    calls: int = 0
    counters: dict = {}   # device -> uint32[1] tensor counting rand calls


register("random counters", _RandomState.counters, Role.LIVE)  # reset() keeps the streams


# Threefry-2x32 rotation constants and key-schedule parity (Random123 specification)
_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
_PARITY = 0x1BD11BDA


def _rotl(x, r: int):
    return (x << r) | (x >> (32 - r))


def threefry2x32(x0, x1, k0, k1):
    """Encrypt counters (x0, x1) under key (k0, k1): four uint32 tensors of one shape."""
    k2 = k0 ^ k1 ^ _PARITY
    keys = (k0, k1, k2)
    x0, x1 = x0 + k0, x1 + k1
    for block in range(5):
        for r in _ROTATIONS[4 * (block % 2):4 * (block % 2) + 4]:
            x0 = x0 + x1
            x1 = _rotl(x1, r) ^ x0
        x0 = x0 + keys[(block + 1) % 3]
        x1 = x1 + keys[(block + 2) % 3] + (block + 1)
    return x0, x1


class RandomMixin:
    """Random tensors (mixed into Tensor)."""
    __slots__ = ()

    @staticmethod
    def manual_seed(seed: int = 0) -> None:
        _RandomState.seed, _RandomState.calls = int(seed), 0
        _RandomState.counters.clear()

    @classmethod
    def _random_bits(cls, n: int, device: str):
        """n uint32 random words from one Threefry call keyed by (seed, call number)."""
        from ..engine.devices import Device
        device = Device.canonicalize(device)
        counter = _RandomState.counters.get(device)
        if counter is None:
            counter = cls([0], dtype=dtypes.uint32, device=device)
            _RandomState.counters[device] = counter
        counter.assign(counter + 1).realize()
        key = counter.clone().realize()  # this call's number, fixed in its own buffer
        # word i < half is the first word of Threefry on the counter pair (i, i + half), word
        # i >= half the second word of the pair (i - half, i): each element encrypts its own pair
        # once and keeps one word (x0.cat(x1) encrypted every pair twice, once per half)
        half = (n + 1) // 2
        index = cls._index_range(2 * half, device)
        first = index < half
        count = first.where(index, index - half).cast(dtypes.uint32)
        seed = cls.full((2 * half,), _RandomState.seed & 0xFFFFFFFF, dtypes.uint32, device)
        k1 = key.reshape(1).expand(2 * half)
        x0, x1 = threefry2x32(count, count + half, seed, k1)
        # the bits get a buffer of their own: one Threefry kernel per size, shared by every
        # distribution and shape drawn from it (it is the expensive kernel to compile)
        return first.where(x0, x1).shrink(((0, n),)).contiguous()

    @classmethod
    def rand(cls, *shape, dtype=None, device=None, **kwargs):
        """Uniform in [0, 1)."""
        from ..engine.devices import Device
        shape = shape_args(shape, "rand")
        dtype = dtypes.from_any(dtype) if dtype is not None else dtypes.default_float
        n = math.prod(shape)
        if n == 0:
            return cls.zeros(*shape, dtype=dtype, device=device, **kwargs)
        bits = cls._random_bits(n, Device.canonicalize(device))
        # 23 random mantissa bits under exponent 0 give a float in [1, 2)
        one_to_two = ((bits >> 9) | 0x3F800000).bitcast(dtypes.float32)
        out = (one_to_two - 1.0).reshape(shape)
        return cls(out.cast(dtype).node, **kwargs)

    def rand_like(self, **kwargs):
        kwargs.setdefault("dtype", self.dtype if self.dtype.is_float else None)
        kwargs.setdefault("device", self.device)
        return type(self).rand(*self.shape, **kwargs)

    def randn_like(self, **kwargs):
        kwargs.setdefault("dtype", self.dtype if self.dtype.is_float else None)
        kwargs.setdefault("device", self.device)
        return type(self).randn(*self.shape, **kwargs)

    @classmethod
    def randn(cls, *shape, dtype=None, device=None, **kwargs):
        """Standard normal (Box-Muller on two uniforms)."""
        shape = shape_args(shape, "randn")
        dtype = dtypes.from_any(dtype) if dtype is not None else dtypes.default_float
        u = cls.rand(2, *shape, device=device)
        radius = (1 - u[0]).log().mul(-2).sqrt()
        out = radius * (u[1] * (2 * math.pi)).cos()
        return cls(out.cast(dtype).node, **kwargs)

    @classmethod
    def randint(cls, *shape, low: int = 0, high: int = 10, dtype=None, device=None, **kwargs):
        if high <= low:
            raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
        shape = shape_args(shape, "randint")
        dtype = dtypes.from_any(dtype) if dtype is not None else dtypes.default_int
        out = (cls.rand(*shape, device=device) * (high - low)).floor() + low
        return cls(out.cast(dtype).node, **kwargs)

    @classmethod
    def normal(cls, *shape, mean: float = 0.0, std: float = 1.0, **kwargs):
        if std < 0:
            raise ValueError(f"normal: std must be non-negative, got {std}")
        requires_grad = kwargs.pop("requires_grad", None)
        out = cls.randn(*shape, **kwargs) * std + mean
        return cls(out.node, requires_grad=requires_grad)

    @classmethod
    def uniform(cls, *shape, low: float = 0.0, high: float = 1.0, **kwargs):
        if low > high:
            raise ValueError(f"uniform: low ({low}) must not exceed high ({high})")
        requires_grad = kwargs.pop("requires_grad", None)
        dtype = kwargs.pop("dtype", None)
        out = cls.rand(*shape, **kwargs) * (high - low) + low
        if dtype is not None:
            out = out.cast(dtypes.from_any(dtype))
        return cls(out.node, requires_grad=requires_grad)

    @classmethod
    def scaled_uniform(cls, *shape, **kwargs):
        shape = shape_args(shape, "scaled_uniform")
        scale = math.prod(shape) ** -0.5
        return cls.uniform(*shape, low=-1.0, high=1.0, **kwargs) * scale

    @classmethod
    def glorot_uniform(cls, *shape, **kwargs):
        shape = shape_args(shape, "glorot_uniform")
        bound = (6 / (shape[0] + math.prod(shape[1:]))) ** 0.5
        return cls.uniform(*shape, low=-bound, high=bound, **kwargs)

    @classmethod
    def kaiming_uniform(cls, *shape, a: float = 0.01, **kwargs):
        shape = shape_args(shape, "kaiming_uniform")
        fan_in = math.prod(shape[1:])
        bound = math.sqrt(3.0) * math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(fan_in)
        return cls.uniform(*shape, low=-bound, high=bound, **kwargs)

    @classmethod
    def kaiming_normal(cls, *shape, a: float = 0.01, **kwargs):
        shape = shape_args(shape, "kaiming_normal")
        std = math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(math.prod(shape[1:]))
        return cls.normal(*shape, mean=0.0, std=std, **kwargs)

    @classmethod
    def randperm(cls, n: int, device=None, dtype=None, **kwargs):
        """A random permutation of 0..n-1 (int32, tinygrad's default; PyTorch's is int64): the
        order that sorts n uniform numbers (argsort compares every pair: O(n²))."""
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"randperm: n must be an int, got {n!r}")
        if n < 0:
            raise ArgumentError(f"randperm: n must be non-negative, got {n}")
        dtype = dtypes.from_any(dtype) if dtype is not None else dtypes.int32
        if n == 0:
            return cls.zeros(0, dtype=dtype, device=device, **kwargs)
        order = cls.rand(n, device=device).argsort()
        return cls(order.cast(dtype).node, **kwargs)

    def multinomial(self, num_samples: int = 1, replacement: bool = False):
        """int32 indices drawn from the categories of the last dim, weighted by self (1-D or
        2-D, a row per distribution). With replacement: each draw counts the cumulative weights
        below a uniform number. Without: the num_samples largest keys log(u) / w (Efraimidis-
        Spirakis), distinct indices. Weights are not read to be checked (they are lazy)."""
        if self.ndim not in (1, 2):
            raise ShapeError(f"multinomial: weights must be 1-D or 2-D, got shape {self.shape}")
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
            raise ArgumentError(f"multinomial: num_samples must be a positive int, got "
                                f"{num_samples!r}")
        weight = (self.unsqueeze(0) if self.ndim == 1 else self).float()
        rows, categories = weight.shape
        if not replacement and num_samples > categories:
            raise ArgumentError(f"multinomial: cannot take num_samples={num_samples} samples "
                                f"without replacement from {categories} categories")
        if replacement or num_samples == 1:
            total = weight.cumsum(1)
            cdf = total / total[:, -1:]
            draws = type(self).rand(num_samples, rows, 1, device=self.device)
            indices = (draws >= cdf).sum(2).minimum(categories - 1).permute(1, 0)
        else:
            keys = type(self).rand(rows, categories, device=self.device).log() / weight
            indices = keys.topk(num_samples, dim=1)[1]
        indices = indices.cast(dtypes.int32)
        return indices.squeeze(0) if self.ndim == 1 else indices
