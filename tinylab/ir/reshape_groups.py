"""Which axes of a shape become which axes of a reshaped one: `group_axes` pairs runs of static
sizes with equal products, `symbolic_groups` does it where sizes are symbolic (each symbolic
size pairs with its equal), `contiguous_regroup` gives the strides a regrouped run takes.
View.reshape (ir/view.py) and node.reshape's symbolic check (ir/node.py) use them.
"""
from __future__ import annotations

from . import symbolic as sym
from .node import prod


def symbolic_groups(old: list, new: list):
    """Like group_axes for shapes with symbolic sizes: each symbolic size pairs with the equal
    one on the other side, alone; the static runs between them pair as wholes. None if the
    symbolic sizes differ in number or order, or a static run's products differ."""
    def runs(sizes):
        out, current = [], []
        for k, s in enumerate(sizes):
            if sym.is_symbolic(s):
                out.append((current, [k]))
                current = []
            else:
                current.append(k)
        return out + [(current, None)]
    old_runs, new_runs = runs(old), runs(new)
    if len(old_runs) != len(new_runs):
        return None
    groups = []
    for (old_static, old_sym), (new_static, new_sym) in zip(old_runs, new_runs):
        if prod(old[k] for k in old_static) != prod(new[k] for k in new_static):
            return None
        if old_static:
            groups.append((old_static, [new[k] for k in new_static]))
        if (old_sym is None) != (new_sym is None):
            return None
        if old_sym is not None:
            if old[old_sym[0]] != new[new_sym[0]]:
                return None
            groups.append((old_sym, [new[new_sym[0]]]))
    return groups


def group_axes(old: list[int], new: list[int]):
    """Pair runs of old sizes with runs of new sizes of equal product (size-1 axes removed).
    Returns [(old positions, new sizes)] or None if the products never line up."""
    groups, i, j = [], 0, 0
    while i < len(old) or j < len(new):
        if i >= len(old) or j >= len(new):
            return None
        start_i, start_j = i, j
        po, pn = old[i], new[j]
        i, j = i + 1, j + 1
        while po != pn:
            if po < pn:
                if i >= len(old):
                    return None
                po *= old[i]
                i += 1
            else:
                if j >= len(new):
                    return None
                pn *= new[j]
                j += 1
        groups.append((list(range(start_i, i)), new[start_j:j]))
    return groups


def contiguous_regroup(sizes, strides, new_sizes):
    """Strides for new_sizes over axes (sizes, strides) of equal total, or None if not expressible
    (the old axes must be mutually contiguous where a new axis spans more than one of them)."""
    out = []
    sizes, strides = list(sizes), list(strides)
    for target in new_sizes:
        size, stride = sizes[0], strides[0]
        if size % target == 0:  # split the leading old axis
            out.append(stride * (size // target))
            if size == target:
                sizes.pop(0), strides.pop(0)
            else:
                sizes[0] = size // target
            continue
        merged, inner_stride, k = size, stride, 0
        while merged < target:  # merge following old axes into one
            k += 1
            if k >= len(sizes) or inner_stride != strides[k] * sizes[k]:
                return None
            merged, inner_stride = merged * sizes[k], strides[k]
        if merged != target:
            return None
        out.append(inner_stride)
        del sizes[:k + 1], strides[:k + 1]
    return out
