"""A kernel's normal axes: the loop space its AST is lowered into, the one the planner loops over.

`normal_axes(full, reduce_axes, views) -> NormalAxes`: from a kernel's iteration space `full`
(the reduce's input shape, else the output's), its reduce axes and every view its AST will hold
(LOADs, VALID masks, the STORE), the space with size-1 dimensions dropped, the reduce axes moved
last, and adjacent axes of one kind merged where every view can merge them (a symbolic axis, or
any view stacked over another, stays unmerged). `NormalAxes.view(vs)` maps a view into it.
`RAW_AXES` keeps every view and shape as lowered. lowering.py picks the axes from the views its
walk found and builds the kernel AST in them once; codegen/plan.py reads the plan's shape off
that AST and rebuilds nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import symbolic as sym
from ..ir.view import View, ViewStack


@dataclass
class NormalAxes:
    full: tuple                # the iteration space as lowered (before dropping, moving, merging)
    shape: tuple               # the normal full shape: reduce axes last
    out: tuple                 # `shape` with each reduce axis 1 (the reduce's output)
    reduce_axes: tuple         # the reduce axes in `shape`
    keep: tuple = ()           # the dimensions of `full` kept (size > 1)
    order: tuple = ()          # `keep` with the reduce axes last
    merges: tuple = ()         # each merge joins axes (i, i + 1), applied in turn
    single: bool = False       # every dimension has size 1: one element, shape (1,)
    known: dict = field(default_factory=dict)  # id(lowered view) -> (it, its normal view)

    def view(self, vs: ViewStack) -> ViewStack:
        found = self.known.get(id(vs))
        if found is None:
            found = self.known[id(vs)] = (vs, self._map(vs))  # (held: its id stays its own)
        return found[1]

    def _map(self, vs: ViewStack) -> ViewStack:
        if self.single:
            return vs.reshape((1,))
        vs = _squeeze_permute(vs, self.keep, self.order)
        for i in self.merges:
            vs = _merge_top(vs, i)
        return vs

    def const_shape(self, shape: tuple) -> tuple:
        """The normal shape of a constant lowered in `shape` (`full` inside the reduce)."""
        return self.shape if shape == self.full and self.reduce_axes else self.out

    def reduce(self, axes: tuple, shape: tuple) -> tuple[tuple, tuple]:
        """(axes, output shape) of the kernel's reduce."""
        return self.reduce_axes, self.out


class _RawAxes:
    """Every view, constant and reduce as lowered (nothing dropped, moved or merged)."""

    @staticmethod
    def view(vs: ViewStack) -> ViewStack:
        return vs

    @staticmethod
    def const_shape(shape: tuple) -> tuple:
        return shape

    @staticmethod
    def reduce(axes: tuple, shape: tuple) -> tuple[tuple, tuple]:
        return axes, shape


RAW_AXES = _RawAxes()


def normal_axes(full: tuple, reduce_axes: tuple, views) -> NormalAxes:
    """The normal axes of a kernel over `full` reducing `reduce_axes`, given all its views."""
    keep = tuple(i for i, s in enumerate(full) if s != 1)
    order = tuple([i for i in keep if i not in reduce_axes] + [i for i in keep if i in reduce_axes])
    if not order:  # a single element
        return NormalAxes(full, (1,), (1,), (), single=True)
    shape = tuple(full[i] for i in order)
    raw = list({id(vs): vs for vs in views}.values())
    unmoved = order == keep and len(keep) == len(full)  # no unit axis, no reduce axis moved
    moved = raw if unmoved else [_squeeze_permute(vs, keep, order) for vs in raw]
    kinds = [i in reduce_axes for i in order]
    merges: list[int] = []
    if all(len(vs.views) == 1 for vs in moved):  # a stacked view merges nothing
        tops = [vs.top for vs in moved]
        i = 0
        while i < len(shape) - 1:
            merged = None
            if kinds[i] == kinds[i + 1] and not sym.any_symbolic(shape[i:i + 2]):
                merged = [_merged(top, i) for top in tops]
            if merged is not None and all(top is not None for top in merged):
                shape = shape[:i] + (shape[i] * shape[i + 1],) + shape[i + 2:]
                kinds = kinds[:i] + kinds[i + 1:]
                tops = merged
                merges.append(i)
            else:
                i += 1
        if merges:
            moved = [ViewStack((top,)) for top in tops]
    n_reduce = sum(kinds)
    out = tuple(1 if k else s for s, k in zip(shape, kinds))
    return NormalAxes(full, shape, out, tuple(range(len(shape) - n_reduce, len(shape))), keep,
                      order, tuple(merges), known={id(vs): (vs, m) for vs, m in zip(raw, moved)})


def _squeeze_permute(vs: ViewStack, keep: tuple, order: tuple) -> ViewStack:
    squeezed = tuple(s for i, s in enumerate(vs.shape) if i in keep)
    if squeezed != vs.shape:
        vs = _squeezed(vs, keep, squeezed)
    if order == keep:  # nothing moves
        return vs
    remap = {old: new for new, old in enumerate(keep)}
    return vs.permute(tuple(remap[i] for i in order))


def _squeezed(vs: ViewStack, keep: tuple, squeezed: tuple) -> ViewStack:
    """`vs` without its size-1 axes (those not in `keep`): for static, non-empty sizes what
    View.reshape makes of it (each kept axis keeps its stride and mask), else that reshape."""
    top = vs.top
    if sym.any_symbolic(top.shape) or 0 in top.shape or top.is_empty:
        return vs.reshape(squeezed)
    mask = None if top.mask is None else tuple(top.mask[i] for i in keep)
    view = View.make(squeezed, [top.strides[i] for i in keep], top.offset, mask)
    return ViewStack(vs.views[:-1] + (view,))


def _merged(top: View, i: int) -> View | None:
    """`top` with axes (i, i + 1) merged into one, or None where View.reshape cannot. An
    unmasked static view whose axis i steps over all of axis i + 1 merges to axis i + 1's
    stride: what View.reshape makes of it, without its general regrouping (the common case,
    once per view and axis pair of every kernel lowered)."""
    shape = top.shape[:i] + (top.shape[i] * top.shape[i + 1],) + top.shape[i + 2:]
    if top.mask is None and not sym.any_symbolic(top.shape) and 0 not in top.shape:
        outer, inner = top.strides[i], top.strides[i + 1]
        if outer == inner * top.shape[i + 1]:
            return View.make(shape, top.strides[:i] + (inner,) + top.strides[i + 2:], top.offset)
    return top.reshape(shape)


def _merge_top(vs: ViewStack, i: int) -> ViewStack:
    return ViewStack(vs.views[:-1] + (_merged(vs.top, i),))
