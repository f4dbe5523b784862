"""Movement methods: reshape/view, permute, expand, pad, shrink, flip and everything built from
them (transpose, flatten, squeeze, repeat, cat, stack, split, roll, unfold; the sliding
windows under pooling and unfold are frontend/windows.py).
None of them copies data: they build movement nodes that the scheduler turns into views.
Mixed into Tensor (frontend/tensor.py); errors name the op and the shapes.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..errors import ArgumentError, ShapeError, UnsupportedError
from ..ir.symbolic import Variable, any_symbolic, bound_value, fits_bounds


def _ints(args, op: str) -> tuple:
    """Accept f(2, 3) and f((2, 3)); every entry must be an int (or None where allowed)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for a in args:
        if a is not None and (isinstance(a, bool) or not hasattr(a, "__index__")):
            raise TypeError(f"{op}: sizes must be ints, got {a!r} in {tuple(args)}")
    return tuple(a if a is None or isinstance(a, Variable) else int(a) for a in args)


def _negative(pad):
    """min(pad, 0): the part of a pad that crops. A symbolic pad must never crop."""
    if isinstance(pad, Variable):
        if pad.min < 0:
            raise ShapeError(f"pad: the symbolic padding {pad!r} may be negative; symbolic pads "
                             f"must be non-negative for every value in range")
        return 0
    return min(pad, 0)


class MovementMixin:
    __slots__ = ()

    # ---- the primitives ----
    def reshape(self, shape, *args):
        shape = _ints((shape,) + args, "reshape")
        shape = tuple(self.shape[i] if s is None else s for i, s in enumerate(shape))
        unknown = [i for i, s in enumerate(shape) if s == -1]
        if len(unknown) > 1:
            raise ShapeError(f"reshape: only one dimension can be -1, got {shape}")
        if any(not isinstance(s, (int, Variable)) or s < -1 for s in shape):
            raise ShapeError(f"reshape: invalid shape {shape}")
        if unknown:
            known = math.prod(s for s in shape if s != -1)
            if known == 0 or self.numel() % known:
                raise ShapeError(f"reshape: cannot reshape {self.shape} ({self.numel()} "
                                 f"elements) to {shape}")
            shape = tuple(self.numel() // known if s == -1 else s for s in shape)
        if shape != self.shape and math.prod(shape) != self.numel():  # (a, b) to itself: no
            raise ShapeError(f"reshape: cannot reshape {self.shape} ({self.numel()} elements) "
                             f"to {shape} ({math.prod(shape)} elements)")
        return self._view(self.node.reshape(shape))

    def view(self, shape, *args):
        return self.reshape(shape, *args)

    def permute(self, order, *args):
        order = _ints((order,) + args, "permute")
        if len(order) != self.ndim:
            raise ShapeError(f"permute: order {order} has {len(order)} axes, tensor has "
                             f"{self.ndim} (shape {self.shape})")
        order = tuple(self._axis(a, "permute") for a in order)
        if sorted(order) != list(range(self.ndim)):
            raise ShapeError(f"permute: {order} is not a permutation of the axes of {self.shape}")
        return self._view(self.node.permute(order))

    def expand(self, shape, *args):
        shape = _ints((shape,) + args, "expand")
        if len(shape) < self.ndim:
            raise ShapeError(f"expand: target {shape} has fewer dimensions than {self.shape}")
        padded = (1,) * (len(shape) - self.ndim) + self.shape
        target = tuple(p if s == -1 else s for s, p in zip(shape, padded))
        for s, p in zip(target, padded):
            if p != s and p != 1:
                raise ShapeError(f"expand: cannot expand {self.shape} to {shape} (only size-1 "
                                 f"dimensions can grow)")
        return self._view(self.node.reshape(padded).expand(target))

    def pad(self, padding, mode: str = "constant", value: float = 0.0):
        """padding: ((before, after), ...) per dim (None = no pad), or PyTorch's flat
        (left, right, top, bottom, ...) starting from the last dim. Negative pads crop."""
        pairs = self._pad_pairs(padding)
        if mode not in ("constant", "reflect", "replicate", "circular"):
            raise UnsupportedError(f"pad: unknown mode {mode!r}; use constant, reflect, replicate or "
                             f"circular")
        if mode != "constant":
            return self._pad_mode(pairs, mode)
        crop = tuple((-_negative(b), s + _negative(a)) for (b, a), s in zip(pairs, self.shape))
        x = self.shrink(crop) if any(b < 0 or a < 0 for b, a in pairs) else self
        grow = tuple((b - _negative(b), a - _negative(a)) for b, a in pairs)
        out = x._view(x.node.pad(grow))
        if not self.dtype.is_float:  # the value takes the tensor's dtype, as in PyTorch
            value = bool(value) if self.dtype.is_bool else int(value)
        if value != 0 and any(b or a for b, a in grow):
            inside = type(self).ones(*x.shape, dtype="bool", device=self.device).pad(grow)
            out = inside.where(out, value)
        return out

    def _pad_pairs(self, padding) -> tuple:
        padding = tuple(padding)
        if padding and all(not isinstance(p, (tuple, list)) and p is not None for p in padding):
            padding = _ints(padding, "pad")
            if len(padding) % 2 or len(padding) // 2 > self.ndim:
                raise ShapeError(f"pad: flat padding {padding} needs an even length of at most "
                                 f"2*ndim={2 * self.ndim} for shape {self.shape}")
            pairs = [(0, 0)] * self.ndim
            for k in range(len(padding) // 2):
                pairs[self.ndim - 1 - k] = (padding[2 * k], padding[2 * k + 1])
        else:
            if len(padding) != self.ndim:
                raise ShapeError(f"pad: {len(padding)} (before, after) pairs for a tensor of "
                                 f"{self.ndim} dims (shape {self.shape})")
            pairs = [(0, 0) if p is None else _ints(p, "pad") for p in padding]
            if any(len(p) != 2 for p in pairs):
                raise ShapeError(f"pad: each entry of {padding} must be a (before, after) pair")
        pairs = tuple(pairs)
        for (b, a), s in zip(pairs, self.shape):
            if s + b + a < 0 or -b > s or -a > s:
                raise ShapeError(f"pad: padding {pairs} crops more than shape {self.shape} has")
        return pairs

    def _pad_mode(self, pairs, mode: str):
        """Negative pads crop, as tinygrad's: circular crops first and wraps what is left;
        reflect and replicate pad the positive sides from the whole data, then crop."""
        x = self
        if mode == "circular" and any(b < 0 or a < 0 for b, a in pairs):
            x = x.shrink(tuple((-min(b, 0), s + min(a, 0)) for (b, a), s in zip(pairs, x.shape)))
        for axis, (before, after) in enumerate(pairs):
            before, after = max(before, 0), max(after, 0)
            if not before and not after:
                continue
            size = x.shape[axis]
            if mode == "reflect" and (before >= size or after >= size):
                raise ShapeError(f"pad: reflect padding {(before, after)} must be smaller than "
                                 f"the dimension size {size} (axis {axis})")
            parts = []
            if before:
                parts.append(_edge(x, axis, mode, before, at_start=True))
            parts.append(x)
            if after:
                parts.append(_edge(x, axis, mode, after, at_start=False))
            x = parts[0].cat(*parts[1:], dim=axis)
        if mode != "circular" and any(b < 0 or a < 0 for b, a in pairs):
            x = x.shrink(tuple((-min(b, 0), s + min(a, 0)) for (b, a), s in zip(pairs, x.shape)))
        return x

    def shrink(self, bounds):
        bounds = tuple(bounds)
        if len(bounds) != self.ndim:
            raise ShapeError(f"shrink: {len(bounds)} bounds {bounds} for shape {self.shape}")
        bounds = tuple((0, s) if b is None else _ints(b, "shrink")
                       for b, s in zip(bounds, self.shape))
        if not fits_bounds(bounds, self.shape):
            raise ShapeError(f"shrink: bounds {bounds} do not fit shape {self.shape} (for "
                             f"every value in a symbolic bound's range, or its bound value)")
        return self._view(self.node.shrink(bounds))

    def flip(self, axis, *args):
        axes = _ints((axis,) + args, "flip") if not isinstance(axis, (tuple, list)) or args \
            else tuple(axis)
        axes = tuple(self._axis(a, "flip") for a in axes)
        if len(set(axes)) != len(axes):
            raise ShapeError(f"flip: repeated axis in {axes}")
        return self._view(self.node.flip(axes if self.ndim else ()))  # a 0-d tensor takes dim 0

    # ---- derived ----
    def transpose(self, dim0: int = 1, dim1: int = 0):
        order = list(range(self.ndim))
        a, b = self._axis(dim0, "transpose"), self._axis(dim1, "transpose")
        if self.ndim:  # a 0-d tensor takes dims 0 and -1 and stays as it is
            order[a], order[b] = order[b], order[a]
        return self.permute(order)

    @property
    def T(self):  # noqa: N802
        return self.permute(tuple(reversed(range(self.ndim))))

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        if self.ndim == 0:
            return self.reshape(1)
        start, end = self._axis(start_dim, "flatten"), self._axis(end_dim, "flatten")
        if start > end:
            raise ShapeError(f"flatten: start_dim {start_dim} is after end_dim {end_dim} "
                             f"(shape {self.shape})")
        merged = math.prod(self.shape[start:end + 1])
        return self.reshape(self.shape[:start] + (merged,) + self.shape[end + 1:])

    def unflatten(self, dim: int, sizes: Sequence[int]):
        axis = self._axis(dim, "unflatten")
        sizes = _ints(tuple(sizes), "unflatten")
        known = math.prod(s for s in sizes if s != -1)
        if sizes.count(-1) == 1 and known and self.shape[axis] % known == 0:
            sizes = tuple(self.shape[axis] // known if s == -1 else s for s in sizes)
        if math.prod(sizes) != self.shape[axis] or any(s < 0 for s in sizes):
            raise ShapeError(f"unflatten: sizes {sizes} do not multiply to dim {dim}'s size "
                             f"{self.shape[axis]} (shape {self.shape})")
        return self.reshape(self.shape[:axis] + sizes + self.shape[axis + 1:])

    def squeeze(self, dim: int | Sequence[int] | None = None):
        """Drop size-1 dims: all of them, or those among `dim` (others are kept)."""
        if dim is None:
            return self.reshape(tuple(s for s in self.shape if s != 1))
        dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        axes = {self._axis(d, "squeeze") for d in dims}
        if self.ndim == 0:
            return self
        return self.reshape(tuple(s for i, s in enumerate(self.shape) if i not in axes or s != 1))

    def unsqueeze(self, dim: int):
        axis = self._axis(dim, "unsqueeze", self.ndim + 1)
        return self.reshape(self.shape[:axis] + (1,) + self.shape[axis:])

    def repeat(self, repeats, *args):
        repeats = _ints((repeats,) + args, "repeat")
        if len(repeats) < self.ndim or any(r < 0 for r in repeats):
            raise ShapeError(f"repeat: repeats {repeats} must be non-negative, one per dim of "
                             f"shape {self.shape} (or more)")
        base = (1,) * (len(repeats) - self.ndim) + self.shape
        x = self.reshape(base)
        inter = tuple(v for s in base for v in (1, s))
        expanded = tuple(v for r, s in zip(repeats, base) for v in (r, s))
        return x.reshape(inter).expand(expanded).reshape(tuple(r * s for r, s in
                                                               zip(repeats, base)))

    def repeat_interleave(self, repeats: int, dim: int | None = None):
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 0:
            raise ArgumentError(f"repeat_interleave: repeats must be a non-negative int, got "
                             f"{repeats!r}")
        x = self.flatten() if dim is None else self
        axis = 0 if dim is None else self._axis(dim, "repeat_interleave")
        shape = x.shape
        x = x.reshape(shape[:axis + 1] + (1,) + shape[axis + 1:])
        x = x.expand(shape[:axis + 1] + (repeats,) + shape[axis + 1:])
        return x.reshape(shape[:axis] + (shape[axis] * repeats,) + shape[axis + 1:])

    def cat(self, *others, dim: int = 0):
        """a.cat(b, c, dim=d), Tensor.cat(a, b, c) or PyTorch's Tensor.cat([a, b, c])."""
        if isinstance(self, (list, tuple)) and self:
            return self[0].cat(*self[1:], *others, dim=dim)
        tensors = [self, *others]
        for x in tensors:
            if not hasattr(x, "node"):
                raise TypeError(f"cat: expected tensors, got {type(x).__name__}; write "
                                f"a.cat(b, c) or Tensor.cat(*tensors)")
        axis = self._axis(dim, "cat")
        for t in tensors[1:]:
            if t.ndim != self.ndim or any(a != b for i, (a, b) in
                                          enumerate(zip(t.shape, self.shape)) if i != axis):
                raise ShapeError(f"cat: shapes {[x.shape for x in tensors]} differ outside "
                                 f"dim {dim}")
        dtype = tensors[0].dtype
        for t in tensors[1:]:
            from ..dtype import promote
            dtype = promote(dtype, t.dtype)
        total = sum(t.shape[axis] for t in tensors)
        out, offset = None, 0
        for t in tensors:
            t = t.cast(dtype)
            pads = [(0, 0)] * self.ndim
            pads[axis] = (offset, total - offset - t.shape[axis])
            piece = t.pad(tuple(pads))
            out = piece if out is None else out + piece
            offset += t.shape[axis]
        return out

    def stack(self, *others, dim: int = 0):
        """a.stack(b, dim=d), Tensor.stack(a, b) or PyTorch's Tensor.stack([a, b])."""
        if isinstance(self, (list, tuple)):  # Tensor.stack([a, b], c): the list, then the rest
            tensors = [*self, *others]
            if not tensors:
                raise ValueError("stack: expects a non-empty list of tensors")
            return tensors[0].stack(*tensors[1:], dim=dim)
        tensors = [self, *others]
        for t in tensors:
            if not hasattr(t, "node"):
                raise TypeError(f"stack: expected tensors, got {type(t).__name__}; write "
                                f"a.stack(b, c) or Tensor.stack(*tensors)")
        for t in tensors[1:]:
            if t.shape != self.shape:
                raise ShapeError(f"stack: all shapes must match, got {[x.shape for x in tensors]}")
            if t.device != self.device:
                from ..errors import DeviceError
                raise DeviceError(f"stack: all tensors must be on one device, got "
                                  f"{[x.device for x in tensors]}")
        axis = self._axis(dim, "stack", self.ndim + 1)
        return tensors[0].unsqueeze(axis).cat(*[t.unsqueeze(axis) for t in tensors[1:]], dim=axis)

    def split(self, sizes, dim: int = 0):
        """Pieces along `dim`: of `sizes` each (the last one smaller), or of the listed sizes.
        Along a symbolic dim the bound value decides how many pieces there are; the pieces are
        static except a last, partial one (the dim less the static pieces), as in shrink."""
        axis = self._axis(dim, "split")
        size = self.shape[axis]
        known = bound_value(size)  # an int; a symbolic dim's bound value
        if isinstance(sizes, int):
            if sizes <= 0:
                raise ArgumentError(f"split: split size must be positive, got {sizes}")
            sizes = [sizes if i + sizes <= known else size - i
                     for i in range(0, known, sizes)] or [0]
        total = sum(sizes)
        if total != size and (not any_symbolic((total, size)) or bound_value(total) != known):
            raise ShapeError(f"split: sizes {list(sizes)} do not add up to {size} (dim {dim})")
        out, start = [], 0
        for s in sizes:
            bounds = [(0, n) for n in self.shape]
            bounds[axis] = (start, start + s)
            out.append(self.shrink(tuple(bounds)))
            start += s
        return out

    def chunk(self, chunks: int, dim: int = 0):
        if chunks <= 0:
            raise ArgumentError(f"chunk: chunks must be positive, got {chunks}")
        size = bound_value(self.shape[self._axis(dim, "chunk")])  # symbolic: its bound value
        if size == 0:  # PyTorch: `chunks` empty pieces
            return self.split([0] * chunks, dim)
        return self.split(math.ceil(size / chunks), dim)

    def roll(self, shifts, dims=None):
        if dims is None:
            return self.flatten().roll(shifts, 0).reshape(self.shape)
        shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        if len(shifts) != len(dims):
            raise ArgumentError(f"roll: shifts {shifts} and dims {dims} must have the same length")
        x = self
        for shift, dim in zip(shifts, dims):
            if x.ndim == 0:  # PyTorch too: a 0-d tensor has no dim to roll along
                raise IndexError(f"roll: dim {dim} of a 0-d tensor (roll it with dims=None)")
            axis = self._axis(dim, "roll")
            size = x.shape[axis]
            if size == 0:
                continue
            shift %= size
            if shift:
                head, tail = x.split([size - shift, shift], axis)
                x = tail.cat(head, dim=axis)
        return x

    def unfold(self, dimension: int, size: int, step: int):
        """Windows of `size` every `step` along `dimension`: that dim becomes the window count
        (n - size) // step + 1 and a last dim of `size` is added (torch.Tensor.unfold); views."""
        for name, value in (("size", size), ("step", step)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"unfold: {name} must be an int, got {value!r}")
        if step < 1 or size < 0:
            raise ValueError(f"unfold: needs size >= 0 and step >= 1, got size={size}, "
                             f"step={step}")
        if self.ndim == 0:
            if size > 1:
                raise ShapeError(f"unfold: size {size} is larger than a 0-d tensor's 1 element")
            return self.reshape(1)
        axis = self._axis(dimension, "unfold")
        n = self.shape[axis]
        if size > n:
            raise ShapeError(f"unfold: size {size} is larger than dim {dimension} of shape "
                             f"{self.shape}")
        order = [a for a in range(self.ndim) if a != axis] + [axis]
        moved = self.permute(tuple(order))
        if size == 0:  # n + 1 empty windows
            windows = moved.reshape(moved.shape + (1,)).expand(moved.shape[:-1] + (n, 1))
            windows = windows.pad(tuple((0, 0) for _ in moved.shape[:-1]) + ((0, 1), (0, 0)))
            windows = windows.shrink(tuple((0, s) for s in windows.shape[:-1]) + ((0, 0),))
            windows = windows[..., ::step, :]
        else:
            windows = moved._pool((size,), step)  # (..., count, size)
        back = list(range(axis)) + [self.ndim - 1] + list(range(axis, self.ndim - 1))
        return windows.permute(tuple(back) + (self.ndim,))


def _edge(x, axis: int, mode: str, width: int, at_start: bool):
    size = x.shape[axis]
    bounds = [(0, n) for n in x.shape]
    if mode == "replicate":
        bounds[axis] = (0, 1) if at_start else (size - 1, size)
        piece = x.shrink(tuple(bounds))
        reps = [1] * x.ndim
        reps[axis] = width
        return piece.repeat(reps)
    if mode == "circular":
        if width > size:
            raise ShapeError(f"pad: circular padding {width} is larger than the size {size}")
        bounds[axis] = (size - width, size) if at_start else (0, width)
        return x.shrink(tuple(bounds))
    bounds[axis] = (1, width + 1) if at_start else (size - 1 - width, size - 1)
    return x.shrink(tuple(bounds)).flip(axis)

