"""A vector access's index and validity per lane, for linearize's builder (a mixin of its
`_Builder`, reading its plan, loop variables and caches).

An unpadded plan builds a view's index once per register tile, with the lane and the tile's axes
as variables (`vlane`, `tileN`, reserved names), simplifies it, then substitutes each instance's
and each lane's values: the same expressions as building every lane's index through the view's
div/mod chain (tests/codegen/test_lane_indices.py compares the two), at a fraction of the cost. A
padded plan builds each lane and masks lanes past the end of a padded dim.
"""
from __future__ import annotations

from ..ir import symbolic as sym
from .buffer_access import continue_dead_lanes
from .plan import AxisKind, view_index


class LaneIndices:
    """Per-lane indices of a register tile's vector accesses (a mixin of linearize._Builder)."""

    def lane_values(self, inst: dict, lane: int) -> dict:
        values = {}
        for i, axis in enumerate(self.plan.axes):
            if axis.kind.is_loop:
                values[i] = self.vars[i]
            elif axis.kind is AxisKind.VECTOR:
                values[i] = lane
            else:
                values[i] = inst.get(i, 0)
        return values

    def view_lanes(self, view, inst: dict, width: int):
        key = (view, tuple(sorted(inst.items())), width)
        if key not in self.index_cache:
            plain = self.substituted_lanes(view, inst, width) if width > 1 and \
                not self.plan.padded else self.built_lanes(view, inst, width)
            self.index_cache[key] = (tuple(i for i, _ in plain), tuple(v for _, v in plain))
        return self.index_cache[key]

    def built_lanes(self, view, inst: dict, width: int) -> list:
        """(index, validity) per lane, each lane's index built from the view (lane_indices)."""
        lanes = [self.plan.index_exprs(self.lane_values(inst, lane)) for lane in range(width)]
        return self.lane_indices(view, lanes)

    def substituted_lanes(self, view, inst: dict, width: int) -> list:
        """(index, validity) per lane of an unpadded plan: the view's index is built and
        simplified once per register tile with the lane and the tile's axes as variables
        (tile_index), then the instance's and each lane's values are substituted (and the
        result simplified again). The same expressions as building each lane's index from
        scratch (built_lanes: a view stack's div/mod chain, width times over for each of a
        tile's instances), at a fraction of the cost; tests/codegen/test_lane_indices.py
        compares the two. A padded plan masks lanes past the end (lane_indices) and builds
        each lane."""
        index, valid = self.tile_index(view, tuple(sorted(inst)), width)
        if inst:  # the tile's instance: its axes' values for their variables
            mapping = {self.tile_atoms[axis]: sym.const(value) for axis, value in inst.items()}
            index = sym.substitute(index, mapping)
            valid = valid if valid.is_true else sym.substitute_cond(valid, mapping)
        atom = sym.var("vlane", 0, width - 1).as_atom()
        indices = sym.substitute_each(index, atom, list(range(width)))
        if valid.is_true:
            return [(i, valid) for i in indices]
        return [(i, sym.substitute_cond(valid, {atom: sym.const(lane)}))
                for lane, i in enumerate(indices)]

    def tile_index(self, view, axes: tuple, width: int):
        """(index, validity) of `view` with the lane and each of `axes` (register-tile axes) as
        variables over their ranges: built through the view once per tile, not per instance."""
        key = (view, axes, width)
        found = self.tile_cache.get(key)
        if found is None:
            values = self.lane_values({}, 0)
            values[self.vector_axis] = sym.var("vlane", 0, width - 1)
            for axis in axes:
                values[axis] = sym.lin(self.tile_atoms.setdefault(
                    axis, sym.var(f"tile{axis}", 0, self.plan.axes[axis].size - 1).as_atom()))
            found = self.tile_cache[key] = view_index(view, self.plan.index_exprs(values))
        return found

    def lane_indices(self, view, lanes: list) -> list:
        """(index, validity) per lane. Lanes past the end of a padded dim are masked off; a
        lane-invariant access (the same element for every lane) is in bounds whenever lane 0 is,
        so a padded plan takes the masked form once two lanes differ (the rest of the plain
        lanes are not needed to tell)."""
        plain = [view_index(view, lanes[0])]
        for idxs in lanes[1:]:
            plain.append(view_index(view, idxs))
            if self.plan.padded and plain[-1] != plain[0]:
                return continue_dead_lanes(
                    [view_index(view, idxs, self.plan.padding_valid(idxs, view.shape))
                     for idxs in lanes])
        return plain
