"""How a kernel addresses its buffers, for linearize.py and the heuristics' cost model:
`buffer_extent(view)` (the elements a view can touch) and `continue_dead_lanes(lanes)` (indices of
vector lanes past a padded dim's end, continued so the access stays one contiguous vector).
"""
from __future__ import annotations

from ..ir import symbolic as sym


def continue_dead_lanes(lanes: list) -> list:
    """Lanes past the end of a padded dim never load or store; their index, computed outside
    the view's range, is div/mod noise. Where the live lanes step evenly, give the dead ones the
    continued step, so the access stays one (masked) contiguous vector."""
    live = [i for i, (_, valid) in enumerate(lanes) if not valid.is_false]
    if len(live) < 2 or live != list(range(len(live))) or len(live) == len(lanes):
        return lanes
    step = lanes[1][0] - lanes[0][0]
    if not step.is_const or any(lanes[i][0] - lanes[0][0] != step * i for i in live):
        return lanes
    return lanes[:len(live)] + [(lanes[0][0] + step * i, valid)
                                for i, (_, valid) in enumerate(lanes) if i >= len(live)]


def buffer_extent(view) -> int:
    """Elements a view can touch: 1 + the largest index it reads or writes where valid. A padded
    view's bottom layer is wider than its buffer; only its mask's region is ever addressed (the
    renderers read unguarded only below this bound: x.diag(2) of 3 elements once read data1[4])."""
    bottom = view.views[0]
    mask = bottom.mask or tuple((0, s) for s in bottom.shape)
    hi = sym.max_of(bottom.offset)
    for (lo, end), st in zip(mask, bottom.strides):
        if st > 0:
            hi += (sym.max_of(end) - 1) * st
        elif st < 0:
            hi += (lo.min if isinstance(lo, sym.Variable) else lo) * st
    return max(hi + 1, 1)
