"""Creating tensors: zeros/ones/full/empty (+ _like), arange, linspace and eye; random numbers are
in random.py. Mixed into Tensor (frontend/tensor.py).
"""
from __future__ import annotations

import hashlib
import math
import numbers

from ..dtype import DType, dtypes
from ..errors import ArgumentError, ShapeError, UnsupportedError
from ..ir import node as ir
from ..ir.symbolic import Variable, bound_value
from ..memo import Memo


def shape_args(args, op: str) -> tuple[int, ...]:
    """Accept f(2, 3) and f((2, 3)); check every size is a non-negative int."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    shape = []
    for s in args:
        if isinstance(s, Variable):  # a symbolic size (must be bound to be realized)
            shape.append(s)
            continue
        if isinstance(s, (tuple, list)):  # f((2, 3), 4): tinygrad's ValueError
            raise ShapeError(f"{op}: a shape is one tuple or several ints, got {tuple(args)}")
        if isinstance(s, bool) or not isinstance(s, int) and not hasattr(s, "__index__"):
            raise TypeError(f"{op}: sizes must be ints, got {s!r} in {tuple(args)}")
        s = int(s)
        if s < 0:
            raise ShapeError(f"{op}: negative size {s} in shape {tuple(args)}")
        shape.append(s)
    return tuple(shape)


INDEX_RANGES_KEPT = 256  # lengths whose 0..n-1 graph _index_range keeps (consts only)
_INDEX_RANGES = Memo("index ranges", INDEX_RANGES_KEPT)  # (length, device) -> the graph's node


def _check_numbers(op: str, **values) -> None:
    """Range ends and steps must be finite real numbers."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) and \
                not hasattr(value, "__float__"):
            raise TypeError(f"{op}: {name} must be a number, got {value!r}")
        if not math.isfinite(float(value)):
            raise ArgumentError(f"{op}: {name} must be finite, got {value}")


def _linear_length(span, step):
    """ceil(span / step) where it is an int or linear in the variables for every value in
    their ranges (span for step 1, -span for step -1, a fixed count where the step divides
    span exactly); None otherwise."""
    if isinstance(step, Variable):
        if step.min <= 0 <= step.max:  # the sign may change: counts are not one expression
            return None
        count = -(-bound_value(span) // bound_value(step))
        return count if span - count * step == 0 else None
    if not isinstance(span, Variable):
        return -(-span // step)
    return span * step if step in (1, -1) else None


def _length_variable(span, step) -> Variable:
    """The length ceil(span / step) of a symbolic arange that is not linear in the variables,
    as a Variable of its own bound to the count of the bound values. Its range holds every
    count the variables' ranges can give (the step taken with its bound value's sign, never
    0); its name is fixed by the expressions and that range, so every value reuses a kernel."""
    from ..engine.realize import capturer
    from ..errors import JitError
    if capturer() is not None:
        raise JitError(f"arange: inside TinyJit the length of a symbolic arange must be linear "
                       f"in the variables (a replay does not recompute ceil({span!r} / "
                       f"{step!r})); pass the length as a Variable, or use a step that divides "
                       f"stop - start")
    sign = 1 if bound_value(step) > 0 else -1
    low, high = (step.min, step.max) if isinstance(step, Variable) else (step, step)
    low, high = (max(low, 1), high) if sign > 0 else (low, min(high, -1))
    spans = (span.min, span.max) if isinstance(span, Variable) else (span,)
    counts = [-(-s // t) for s in spans for t in (low, high)]  # monotone: corners bound it
    lo, hi = max(0, min(counts)), max(0, max(counts))
    digest = hashlib.sha1(repr((_describe(span), _describe(step), lo, hi)).encode())
    length = Variable(f"arange_len_{digest.hexdigest()[:8]}", lo, hi)
    return length.bind(max(0, -(-bound_value(span) // bound_value(step))))


def _times(t, value):
    """t * value, where a symbolic value that is never positive multiplies as -(t * -value)
    (a kernel reads a symbolic value as a non-negative count)."""
    if isinstance(value, Variable) and value.max <= 0:
        return -(t * -value)
    return t * value


def _plus(t, value):
    """t + value, a never-positive symbolic value subtracted as t - (-value)."""
    if isinstance(value, Variable) and value.max <= 0:
        return t - (-value)
    return t + value


def _describe(size) -> str:
    """An int or a symbolic size's expression with its variables' ranges (a name's key)."""
    if not isinstance(size, Variable):
        return str(size)
    ranges = ",".join(f"{v.expr}[{v.min},{v.max}]" for v in size.vars())
    return f"{size.unbound()!r}|{ranges}"


class CreationMixin:
    __slots__ = ()

    # ---- constants ----
    @classmethod
    def full(cls, shape, fill_value, dtype: DType | None = None, device: str | None = None,
             **kwargs):
        from ..engine.devices import Device
        shape = shape_args((shape,), "full")
        if isinstance(fill_value, Variable):  # a bound Variable's value, counted by a kernel
            value = cls(fill_value, dtype=dtype or dtypes.default_int, device=device)
            return cls(value.reshape((1,) * len(shape)).expand(shape).node, **kwargs)
        dtype = dtypes.from_any(dtype) if dtype is not None else dtypes.of_python(fill_value)
        node = ir.const(fill_value, dtype, shape, Device.canonicalize(device))
        return cls(node, **kwargs)

    @classmethod
    def zeros(cls, *shape, dtype=None, device=None, **kwargs):
        return cls.full(shape_args(shape, "zeros"), 0.0, dtype or dtypes.default_float, device,
                        **kwargs)

    @classmethod
    def ones(cls, *shape, dtype=None, device=None, **kwargs):
        return cls.full(shape_args(shape, "ones"), 1.0, dtype or dtypes.default_float, device,
                        **kwargs)

    @classmethod
    def empty(cls, *shape, dtype=None, device=None, **kwargs):
        """Uninitialized memory in PyTorch; here zeros (a fresh buffer is not worth a kernel)."""
        return cls.zeros(*shape, dtype=dtype, device=device, **kwargs)

    def full_like(self, fill_value, dtype=None, device=None, **kwargs):
        return type(self).full(self.shape, fill_value, dtype or self.dtype, device or self.device,
                               **kwargs)

    def zeros_like(self, **kwargs):
        return self.full_like(0, **kwargs)

    def ones_like(self, **kwargs):
        return self.full_like(1, **kwargs)

    def empty_like(self, **kwargs):
        return self.full_like(0, **kwargs)

    # ---- ranges ----
    @classmethod
    def arange(cls, start, stop=None, step=1, dtype=None, device=None, **kwargs):
        if stop is None:
            start, stop = 0, start
        if any(isinstance(v, Variable) for v in (start, stop, step)):
            return cls._symbolic_arange(start, stop, step, dtype, device, **kwargs)
        _check_numbers("arange", start=start, stop=stop, step=step)
        if step == 0:
            raise ArgumentError("arange: step must not be zero")
        if (stop - start) * step < 0:
            raise ArgumentError(f"arange: step {step} goes away from stop {stop} (start {start})")
        is_float = any(isinstance(v, float) for v in (start, stop, step))
        dtype = dtypes.from_any(dtype) if dtype is not None else (
            dtypes.default_float if is_float else dtypes.default_int)
        n = max(0, math.ceil((stop - start) / step))
        index = cls._index_range(n, device)
        out = index.cast(dtype) * step + start if (step != 1 or start != 0) else index.cast(dtype)
        return cls(out.cast(dtype).node, **kwargs)

    @classmethod
    def _symbolic_arange(cls, start, stop, step, dtype, device, **kwargs):
        """arange with a symbolic start, stop or step (ints and bound Variables), laid out at
        its maximum length and shrunk to its length; values start + step·i, the variables read
        by the kernel. Where the length ceil((stop - start) / step) is linear in the variables
        (stop - start for step ±1, or a fixed count where the step divides stop - start
        exactly: arange(0, 3 * v, v)) it is that expression; otherwise (arange(0, 10, v),
        arange(0, v, 2)) it is a variable of its own, bound to the count of the bound values,
        with the range the counts can take: one kernel serves every value either way."""
        for name, value in (("start", start), ("stop", stop), ("step", step)):
            if isinstance(value, bool) or not isinstance(value, (int, Variable)):
                raise TypeError(f"arange: with a symbolic bound, {name} must be an int or a "
                                f"Variable, got {value!r}")
        if bound_value(step) == 0:
            raise ArgumentError(f"arange: step must not be zero (got {step!r})")
        span = stop - start
        n = _linear_length(span, step)
        if n is None:
            n = _length_variable(span, step)
        if isinstance(n, Variable) and n.min < 0:
            raise ValueError(f"arange: the length {n!r} of [{start!r}, {stop!r}) may be negative "
                             f"for values in the variables' ranges")
        if dtype is None:  # int64 where a value may leave int32 (a Variable past 2**31)
            ends = [e for v in (start, stop) for e in ((v.min, v.max) if isinstance(v, Variable)
                                                      else (v,))]
            wide = not all(dtypes.int32.min_value() <= e <= dtypes.int32.max_value() for e in ends)
            dtype = dtypes.int64 if wide else dtypes.default_int
        dtype = dtypes.from_any(dtype)
        if not isinstance(n, Variable):
            index = cls._index_range(max(n, 0), device)
        else:
            index = cls._index_range(n.max, device).shrink(((0, n),))
        out = _plus(_times(index.cast(dtype), step), start)
        return cls(out.cast(dtype).node, **kwargs)

    @classmethod
    def _index_range(cls, n: int, device=None):
        """0..n-1 with no reduce (so it fuses into whatever reads it): the sum of its binary
        digits, where digit k is a padded constant repeated with period 2^(k+1); int32, or int64
        where n - 1 leaves int32. Its graph holds only consts, so it is built once per length and
        device (argmax asks)."""
        from ..engine.devices import Device
        key = (n, Device.canonicalize(device))
        known = _INDEX_RANGES.get(key)
        if known is None:
            known = _INDEX_RANGES[key] = cls._build_index_range(n, device).node
        return cls(known)

    @classmethod
    def _build_index_range(cls, n: int, device=None):
        dtype = dtypes.int32 if n - 1 <= dtypes.int32.max_value() else dtypes.int64
        out = cls.zeros(n, dtype=dtype, device=device)
        for k in range(max(n - 1, 0).bit_length()):
            half = 1 << k
            digit = cls.full((half,), half, dtype, device).pad(((half, 0),))  # 0.. then 2^k..
            repeats = -(-n // (2 * half))
            digit = digit.reshape(1, 2 * half).expand(repeats, 2 * half).reshape(repeats * 2 * half)
            out = out + digit.shrink(((0, n),))
        return out

    @classmethod
    def linspace(cls, start, stop, steps: int, dtype=None, device=None, **kwargs):
        """`steps` evenly spaced values from start to stop inclusive (numbers or 0-D tensors)."""
        if isinstance(steps, bool) or not isinstance(steps, int):
            raise TypeError(f"linspace: steps must be an int, got {steps!r}")
        if steps < 0:
            raise ArgumentError(f"linspace: steps must be non-negative, got {steps}")
        for name, value in (("start", start), ("stop", stop)):
            if hasattr(value, "node") and value.ndim != 0:
                raise ShapeError(f"linspace: {name} must be a number or a 0-D tensor, got shape "
                                 f"{value.shape}")
            if not hasattr(value, "node") and not isinstance(value, numbers.Real):
                raise TypeError(f"linspace: {name} must be a number, got {value!r}")
        _check_numbers("linspace", **{name: value for name, value in (("start", start),
                                      ("stop", stop)) if not hasattr(value, "node")})
        dtype = dtypes.from_any(dtype) if dtype is not None else dtypes.default_float
        if dtype.is_bool:  # PyTorch: NotImplementedError; tinygrad: ValueError
            raise UnsupportedError("linspace: dtype bool is not supported")
        if steps == 1:
            return cls.full((1,), start, dtype, device, **kwargs)
        index = cls._index_range(steps, device).cast(dtype if dtype.is_float else dtypes.float32)
        out = index * ((stop - start) / (steps - 1)) + start
        return cls(out.cast(dtype).node, **kwargs)

    @classmethod
    def eye(cls, n: int, m: int | None = None, dtype=None, device=None, **kwargs):
        m = n if m is None else m
        for size in (n, m):
            if isinstance(size, bool) or not isinstance(size, int):
                raise TypeError(f"eye: sizes must be ints, got {size!r}")
        if n < 0 or m < 0:
            raise ShapeError(f"eye: sizes must be non-negative, got ({n}, {m})")
        dtype = dtypes.from_any(dtype) if dtype is not None else dtypes.default_float
        # a k x k identity from ones padded to rows of k + 1 and read back as k x k, then zeros
        # padded on (reading an n x m matrix through rows of m + 1 puts 1s off the diagonal
        # when n > m: row m + 1 would start at flat index m * (m + 1))
        k = min(n, m)
        ones = cls.ones(k, 1, dtype=dtype, device=device)
        square = ones.pad(((0, 0), (0, k))).flatten().shrink(((0, k * k),)).reshape(k, k)
        return cls(square.pad(((0, n - k), (0, m - k))).node, **kwargs)
