"""Views: how a shape indexes a flat buffer, so movement ops change views and never data.

A `View` is (shape, strides, offset, mask): element i lives at offset + sum(i_k * strides_k) when
every i_k lies inside mask_k = (lo, hi); outside the mask it reads as 0 (padding). A view with
nothing valid is canonical (`View.empty`): zero strides and a (0, 0) mask per axis, or mask ()
when it has no axes (a 0-d view has no axis to hold "empty"; losing it reads padding as data).
Movement ops map a View to a View; a reshape that strides cannot express pushes a new View on
top, so a `ViewStack` (bottom view first) is the general form. `ViewStack.to_index(idxs)` turns
index expressions for the top shape into (buffer index, validity) via ir/symbolic.py.
Used by the scheduler (to give each LOAD/STORE its view) and by codegen (to make indices).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..memo import Memo
from . import symbolic as sym
from .node import prod
from .reshape_groups import contiguous_regroup, group_axes, symbolic_groups
from .simplify_valid import simplify_valid

Mask = Optional[tuple[tuple[int, int], ...]]


def strides_for(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides; size-1 axes get stride 0 so equal views compare equal. A symbolic size
    is laid out at its maximum (the buffer holds every value in the range), so strides stay
    ints and one kernel indexes every bound value alike."""
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc if s != 1 else 0)
        acc *= sym.max_of(s)
    return tuple(reversed(out))


def _maybe_nonempty(lo, hi) -> bool:
    """lo < hi, or undecided (symbolic): only a range that is surely empty counts as empty."""
    try:
        return bool(lo < hi)
    except TypeError:
        return True


@dataclass(frozen=True)
class View:
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0
    mask: Mask = None

    @staticmethod
    def contiguous(shape: tuple[int, ...]) -> View:
        return View(tuple(shape), strides_for(tuple(shape)), 0, None)

    @staticmethod
    def empty(shape) -> View:
        """The canonical view that reads nothing (every element is padding)."""
        shape = tuple(shape)
        return View(shape, (0,) * len(shape), 0, tuple((0, 0) for _ in shape))

    @staticmethod
    def make(shape, strides, offset=0, mask=None) -> View:
        shape = tuple(shape)
        strides = tuple(0 if s == 1 else st for s, st in zip(shape, strides))
        if mask is not None:
            mask = tuple((lo, hi) if _maybe_nonempty(lo, hi) else (0, 0) for lo, hi in mask)
            if any(lo == hi for lo, hi in mask):  # nothing valid: canonical empty view
                return View.empty(shape)
            if all(lo == 0 and hi == s for (lo, hi), s in zip(mask, shape)):
                mask = None
        return View(shape, strides, offset, mask)

    @property
    def is_empty(self) -> bool:
        """Nothing valid: some axis has an empty mask, or a 0-d view has mask ()."""
        return self.mask is not None and (not self.shape or any(lo == hi for lo, hi in self.mask))

    @property
    def is_contiguous(self) -> bool:
        return self.offset == 0 and self.mask is None and self.strides == strides_for(self.shape)

    @property
    def size(self) -> int:
        return prod(self.shape)

    # ---- movement ------------------------------------------------------------------------------
    def permute(self, order) -> View:
        if self.is_empty:
            return View.empty([self.shape[i] for i in order])
        mask = tuple(self.mask[i] for i in order) if self.mask else None
        return View.make([self.shape[i] for i in order], [self.strides[i] for i in order],
                         self.offset, mask)

    def expand(self, shape) -> View:
        if self.is_empty:
            return View.empty(shape)
        strides = [st if s == n else 0 for st, s, n in zip(self.strides, self.shape, shape)]
        mask = None
        if self.mask:
            mask = tuple(m if s == n else ((0, n) if _maybe_nonempty(*m) else (0, 0))
                         for m, s, n in zip(self.mask, self.shape, shape))
        return View.make(shape, strides, self.offset, mask)

    def pad(self, padding) -> View:
        if self.is_empty:
            return View.empty([s + b + a for s, (b, a) in zip(self.shape, padding)])
        offset = self.offset - sum(b * st for (b, _), st in zip(padding, self.strides))
        old = self.mask or tuple((0, s) for s in self.shape)
        mask = tuple((lo + b, hi + b) for (lo, hi), (b, _) in zip(old, padding))
        shape = [s + b + a for s, (b, a) in zip(self.shape, padding)]
        return View.make(shape, self.strides, offset, mask)

    def shrink(self, bounds) -> View:
        if self.is_empty:
            return View.empty([hi - lo for lo, hi in bounds])
        offset = self.offset + sum(lo * st for (lo, _), st in zip(bounds, self.strides))
        mask = None
        if self.mask:
            mask = tuple((max(mlo, lo) - lo, min(mhi, hi) - lo)
                         for (mlo, mhi), (lo, hi) in zip(self.mask, bounds))
        return View.make([hi - lo for lo, hi in bounds], self.strides, offset, mask)

    def flip(self, axes) -> View:
        if self.is_empty:
            return self
        offset = self.offset + sum((self.shape[a] - 1) * self.strides[a] for a in axes)
        strides = [-st if i in axes else st for i, st in enumerate(self.strides)]
        mask = None
        if self.mask:
            mask = tuple((s - hi, s - lo) if i in axes else (lo, hi)
                         for i, ((lo, hi), s) in enumerate(zip(self.mask, self.shape)))
        return View.make(self.shape, strides, offset, mask)

    def reshape(self, shape) -> View | None:
        """The same elements under a new shape, or None when strides cannot express it."""
        shape = tuple(shape)
        if shape == self.shape:
            return self
        if sym.any_symbolic(self.shape) or sym.any_symbolic(shape):
            return self._reshape_symbolic(shape)
        if 0 in self.shape or 0 in shape:
            return View.make(shape, [0] * len(shape), 0, None) if prod(shape) == 0 else None
        if self.is_empty:
            return View.empty(shape)
        groups = group_axes([s for s in self.shape if s != 1], [s for s in shape if s != 1])
        if groups is None:
            return None
        old_axes = [i for i, s in enumerate(self.shape) if s != 1]
        strides, mask = [], []
        for old_group, new_sizes in groups:
            axes = [old_axes[k] for k in old_group]
            masks = [self.mask[a] if self.mask else (0, self.shape[a]) for a in axes]
            if len(axes) == 1 and len(new_sizes) == 1:
                strides.append(self.strides[axes[0]])
                mask.append(masks[0])
                continue
            if any(m != (0, self.shape[a]) for m, a in zip(masks, axes)):
                return None  # a masked axis split or merged: needs a stacked view
            sub = contiguous_regroup([self.shape[a] for a in axes],
                                      [self.strides[a] for a in axes], new_sizes)
            if sub is None:
                return None
            strides.extend(sub)
            mask.extend((0, n) for n in new_sizes)
        return self._with_unit_axes(shape, strides, mask)

    def _with_unit_axes(self, shape, strides: list, mask: list) -> View:
        """The reshaped view: strides and masks of shape's non-1 axes, size-1 axes put back."""
        out_strides, out_mask, k = [], [], 0
        for s in shape:
            if s == 1:
                out_strides.append(0)
                out_mask.append((0, 1))
            else:
                out_strides.append(strides[k])
                out_mask.append(mask[k])
                k += 1
        return View.make(shape, out_strides, self.offset,
                         tuple(out_mask) if self.mask is not None else None)

    def _reshape_symbolic(self, shape) -> View | None:
        """Reshape where a symbolic axis stays one axis (its stride and mask carry over) and the
        static axes between symbolic ones regroup as in a static reshape; None otherwise."""
        groups = symbolic_groups([s for s in self.shape if s != 1], [s for s in shape if s != 1])
        if groups is None or self.is_empty:
            return None if groups is None else View.empty(shape)
        old_axes = [i for i, s in enumerate(self.shape) if s != 1]
        strides, mask = [], []
        for old_group, new_sizes in groups:
            axes = [old_axes[k] for k in old_group]
            part = View.make([self.shape[a] for a in axes], [self.strides[a] for a in axes], 0,
                             tuple(self.mask[a] for a in axes) if self.mask else None)
            regrouped = part.reshape(tuple(new_sizes)) if new_sizes != part.shape else part
            if regrouped is None:
                return None
            strides.extend(regrouped.strides)
            mask.extend(regrouped.mask or tuple((0, n) for n in new_sizes))
        return self._with_unit_axes(shape, strides, mask)

    # ---- index math ----------------------------------------------------------------------------
    def to_index(self, idxs) -> tuple[sym.Lin, sym.Cond]:
        if self.is_empty:
            return sym.const(0), sym.FALSE
        index = sym.as_lin(self.offset)
        valid = sym.TRUE
        for i, idx, st in zip(range(len(idxs)), idxs, self.strides):
            index = index + idx * st
            if self.mask is not None:
                lo, hi = self.mask[i]
                valid = valid & sym.in_range(idx, lo, hi)
        return index, valid

    def __str__(self) -> str:
        text = f"View({self.shape}, strides={self.strides}"
        if self.offset:
            text += f", offset={self.offset}"
        if self.mask:
            text += f", mask={self.mask}"
        return text + ")"


@dataclass(frozen=True)
class ViewStack:
    """Views applied bottom (views[0], reads the buffer) to top (views[-1], the visible shape)."""
    views: tuple[View, ...]

    @staticmethod
    def contiguous(shape) -> ViewStack:
        return ViewStack((View.contiguous(tuple(shape)),))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.views[-1].shape

    @property
    def top(self) -> View:
        return self.views[-1]

    @property
    def is_contiguous(self) -> bool:
        return len(self.views) == 1 and self.views[0].is_contiguous

    def _replace_top(self, view: View) -> ViewStack:
        return ViewStack(self.views[:-1] + (view,))

    def permute(self, order) -> ViewStack:
        return self._replace_top(self.top.permute(order))

    def expand(self, shape) -> ViewStack:
        return self._replace_top(self.top.expand(shape))

    def pad(self, padding) -> ViewStack:
        return self._replace_top(self.top.pad(padding))

    def shrink(self, bounds) -> ViewStack:
        try:
            return self._replace_top(self.top.shrink(bounds))
        except TypeError:  # a symbolic bound against a mask the range cannot order: stack
            return ViewStack(self.views + (View.contiguous(self.shape).shrink(bounds),))

    def flip(self, axes) -> ViewStack:
        return self._replace_top(self.top.flip(axes))

    def reshape(self, shape) -> ViewStack:
        new = self.top.reshape(shape)
        if new is not None:
            return self._replace_top(new)
        return ViewStack(self.views + (View.contiguous(tuple(shape)),))._merged()

    def _merged(self) -> ViewStack:
        """Fold the top view into the one below when that one is a plain 1-D stride."""
        if len(self.views) < 2:
            return self
        below, top = self.views[-2], self.views[-1]
        if sym.any_symbolic(below.shape) or sym.any_symbolic(top.shape):
            return self  # a symbolic axis does not flatten into one stride
        flat = below.reshape((below.size,))
        if flat is not None and flat.is_empty:  # the bottom reads nothing: neither does the top
            return ViewStack(self.views[:-2] + (View.empty(top.shape),))
        if flat is None or flat.mask is not None:
            return self
        (stride,) = flat.strides or (0,)
        merged = View.make(top.shape, [st * stride for st in top.strides],
                           flat.offset + top.offset * stride, top.mask)
        return ViewStack(self.views[:-2] + (merged,))

    def to_index(self, idxs) -> tuple[sym.Lin, sym.Cond]:
        """(buffer index, validity) for index expressions `idxs` of the top shape."""
        index, valid = self.views[-1].to_index(idxs)
        for view in reversed(self.views[:-1]):
            flat, idxs = index, []
            for s in reversed(view.shape):  # flat index in the row-major layout (max sizes)
                idxs.append(flat % sym.max_of(s))
                flat = flat // sym.max_of(s)
            index, more = view.to_index(list(reversed(idxs)))
            valid = valid & more
        return index, valid

    def __str__(self) -> str:
        return " -> ".join(str(v) for v in self.views)


def view_index(view: ViewStack, idxs: list[sym.Lin],
               extra: sym.Cond = sym.TRUE) -> tuple[sym.Lin, sym.Cond]:
    """Buffer index and validity of a view whose size-1 dimensions read index 0, simplified
    where the index is valid (the only place it is used); `extra` adds conditions (a padded
    vector axis) that also help simplify."""
    fixed = tuple(sym.ZERO if s == 1 or _ignored(view.top, d, i) else i
                  for d, (s, i) in enumerate(zip(view.shape, idxs)))
    key = (view, fixed, extra)
    found = _VIEW_INDEX.get(key)
    if found is None:
        index, valid = view.to_index(fixed)
        found = _VIEW_INDEX[key] = simplify_valid(index, sym.and_(valid, extra))
    return found


def _ignored(top: View, dim: int, idx: sym.Lin) -> bool:
    """Whether the top view ignores dimension `dim` at `idx` (stride 0, and a mask, if any,
    that holds for every value idx takes): then index 0 gives the very same index and validity
    (idx * 0 adds nothing; its range condition is TRUE either way)."""
    if top.strides[dim] != 0 or top.is_empty:
        return False
    if top.mask is None:
        return True
    lo, hi = top.mask[dim]
    return isinstance(lo, int) and isinstance(hi, int) and lo <= 0 < hi \
        and lo <= idx.lo and idx.hi < hi


# (view, index expressions, extra) -> view_index's answer: register tiles and kernels that read
# one view at the same indices ask again (a pure function of interned expressions)
_VIEW_INDEX = Memo("view_index")


def dim_stride(view: ViewStack, dim: int) -> int | None:
    """How far the buffer index moves when dimension `dim` grows by one (None: not linear).
    A mask along the dimension is fine: the C renderer loads masked lanes with one vector op."""
    if view.shape[dim] == 1:
        return 0
    key = (view, dim)
    if key not in _DIM_STRIDE:   # the heuristic asks for each candidate action again
        _DIM_STRIDE[key] = _dim_stride(view, dim)
    return _DIM_STRIDE[key]


def _dim_stride(view: ViewStack, dim: int) -> int | None:
    names = _dim_names(view.shape)
    base, _ = view_index(view, names)
    atom = names[dim].as_atom()
    step = sym.substitute(base, {atom: names[dim] + 1}) - base
    return step.const if step.is_const else None


def masked_along(view: ViewStack, dim: int) -> bool:
    """Whether the view's validity (its padding) changes along dimension `dim`: then a value
    read once for every step of `dim` (a broadcast) is masked anew at each."""
    if view.shape[dim] == 1:
        return False
    names = _dim_names(view.shape)
    _, valid = view_index(view, names)
    return bool(names[dim].vars() & valid.vars())


def _dim_names(shape) -> list[sym.Lin]:
    return [sym.var(f"d{k}", 0, max(s - 1, 0)) for k, s in enumerate(shape)]


_DIM_STRIDE = Memo("dim_stride")  # (view, dim) -> dim_stride's answer (a pure function)
