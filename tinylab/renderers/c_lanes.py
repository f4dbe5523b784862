"""Native vector lanes in memory, for the C renderer's walk (c.py): loads and stores of a vector's
lanes, and the fold of a vector accumulator into one value. `LaneAccess` is a mixin of c.py's
walk (it reads the walk's names, emit and types).

Loads of consecutive lanes become one vector load; masked lanes use the ISA's masked loads and
stores (c_vector_math.py). Evenly spaced lanes (a vector along a strided axis) are stored, and
read outside reduce loops, by a loop over the lanes; in a kernel with a reduce loop (a register
tile's reads and writes, once per tile) that loop is a helper's, not inlined, so gcc sees one loop
per helper and unit instead of one per vector. Written out lane by lane, a CNN step's 16-lane
epilogues were a third of its C and of gcc's time on AVX-512. A vector accumulator folds into one
value by a loop over its lanes in order (written out, the folds were a third of a transformer
block's C); folds of one width that follow each other share one loop, a statement each.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..codegen.plan import AxisKind
from ..dtype import DType, dtypes
from .c_vector_math import (broadcast, masked_load_helper, masked_store_helper, select,
                            spaced_helper)
from .cstyle import guarded

NATIVE_LANES = {dtypes.float32: "float", dtypes.int32: "int", dtypes.uint32: "unsigned int"}
VECTOR_NAMES = {"float": "float", "int": "int", "unsigned int": "uint"}  # `uint8` is 8 lanes


def _consecutive(indices) -> bool:
    return _stride(indices) == 1


def _stride(indices) -> int | None:
    """The constant step between neighbouring lanes' indices (index = first + lane * step), or
    None where the lanes are not evenly spaced."""
    base = indices[0]
    if len(indices) < 2 or (step := _difference(indices[1], base)) is None:
        return None
    return step if all(_difference(index, base) == lane * step
                       for lane, index in enumerate(indices)) else None


def _difference(index, base) -> int | None:
    """index - base when it is a constant, else None. Expressions are canonical: the same terms
    differ by their constants (read off, no expression built)."""
    if index.terms == base.terms:
        return index.const - base.const
    difference = index - base
    return difference.const if difference.is_const else None


@dataclass
class LaneFolds:
    """Folds of vector accumulators of one width, written as one lane loop (fold_lanes)."""
    head: int          # the line the loop starts at
    width: int
    statements: list = field(default_factory=list)   # (instruction, its statement in the loop)
    end: int = 0       # the line after the loop


HELPER_LOOP = re.compile(r"for \(int (\w+) = (\d+); \1 < (\d+);")


class LaneAccess:
    """The loads, stores and folds of native vector lanes (a mixin of c.py's walk)."""

    def extra_loops(self) -> tuple:
        """The loops the source runs beyond the plan's (RenderedKernel.extra_loops): each
        helper's (once however often it is called), each inline lane loop, each fold group's."""
        out = [f"for {var} in {first}..{end} (in {name})"
               for name, text in self.helpers_used.items()
               for var, first, end in HELPER_LOOP.findall(text)]
        for loop in self.lane_loops:
            out.append(f"for lane in 1..{loop.width} (folds of {len(loop.statements)} vector "
                       f"accumulator(s) into one value each, lanes in order)"
                       if isinstance(loop, LaneFolds) else loop)
        return tuple(out)

    def masked_loader(self, dtype: DType, lanes: int) -> str:
        """Name of a helper `(base, index, size, mask)` that loads `lanes` consecutive values
        from base+index where the mask is set, never touching memory where it is not."""
        t, m = self.vector_type(dtype, lanes), self.vector_type(dtypes.int32, lanes)
        name = f"tl_maskload_{t}"
        if name not in self.helpers_used:
            tu = self.vector_type(dtype, lanes, unaligned=True)
            self.helpers_used[name] = masked_load_helper(name, t, tu, m, NATIVE_LANES[dtype],
                                                          lanes, self.r.target.features)
        return name

    def in_bounds(self, buf: int, index) -> bool:
        """The index stays inside the buffer for every value of its loop variables (reading it
        unguarded is safe; the lane mask still decides which lanes use the value)."""
        size = next(p.size for p in self.p.params if p.index == buf)
        return index.lo >= 0 and index.hi < size

    def native_load(self, i: int, instr) -> bool:
        buf, indices, valids = instr.arg
        scalar = instr.dtype.scalar
        if scalar not in NATIVE_LANES:
            return False
        same_index = all(ix is indices[0] for ix in indices)
        if same_index and not all(v is valids[0] for v in valids):
            # one address, lanes masked differently: load once (if any lane needs it), mask lanes
            t = self.vector_type(scalar, len(indices))
            m = self.vector_type(dtypes.int32, len(indices))
            load = f"data{buf}[{self.index(indices[0])}]"
            if not self.in_bounds(buf, indices[0]):  # only read it if some lane needs it
                any_lane = " || ".join(dict.fromkeys(self.cond(v) for v in valids))
                load = f"({any_lane}) ? {load} : {self.r.literal(0, scalar)}"
            self.emit(f"{self.r.type_name(scalar)} one{i} = {load};")
            mask = self.lane_mask(valids, m)
            self.emit(f"{t} val{i} = {select(mask, broadcast(f'one{i}', t), f'(({t}){{}})', t, m)};")
            self.names[i] = [f"val{i}"]
            self.native.add(i)
            return True
        same_valid = all(v is valids[0] for v in valids)
        if same_index and same_valid:  # one value for every lane: load once, broadcast on use
            load = guarded(f"data{buf}[{self.index(indices[0])}]", valids[0],
                           self.r.literal(0, scalar), self.shared)
            self.names[i] = [self.define(f"val{i}", 0, 1, self.r.type_name(scalar), load)]
            return True
        t = self.vector_type(scalar, len(indices))
        consecutive = _consecutive(indices)
        plain = consecutive and all(v.is_true for v in valids)
        tu = self.vector_type(scalar, len(indices), unaligned=True)
        if plain:
            value = f"*(({tu}*)(data{buf}+{self.index(indices[0])}))"
        elif consecutive and same_valid and self.in_bounds(buf, indices[0]) and \
                self.in_bounds(buf, indices[-1]):
            # one condition for every lane (a padded product's other operand) and an address
            # inside the buffer: a plain vector load, zeroed where the condition fails
            m = self.vector_type(dtypes.int32, len(indices))
            mask = f"(({m}){{}}-({self.cond(valids[0])}))"
            load = f"*(({tu}*)(data{buf}+{self.index(indices[0])}))"
            value = select(mask, load, f"(({t}){{}})", t, m)
        elif consecutive:  # consecutive lanes, some masked: one masked vector load
            m = self.vector_type(dtypes.int32, len(indices))
            mask = self.lane_mask(valids, m)
            size = next(p.size for p in self.p.params if p.index == buf)
            value = f"{self.masked_loader(scalar, len(indices))}(data{buf}, " \
                    f"{self.index(indices[0])}, {size}, {mask})"
        elif (step := self.spaced_step(indices, valids)) and \
                AxisKind.REDUCE not in self.loop_kinds:
            # evenly spaced lanes read once per tile (not in a reduce loop): a loop over the
            # lanes, as stores of such lanes are written (native_store)
            self.spaced_lanes(scalar, len(indices), buf, self.index(indices[0]), step, f"val{i}",
                              store=False)
            value = None
        else:
            zero = self.r.literal(0, scalar)
            lanes = [guarded(f"data{buf}[{self.index(index)}]", valid, zero, self.shared)
                     for index, valid in zip(indices, valids)]
            value = f"(({t}){{{', '.join(lanes)}}})"
        if value is not None:
            self.emit(f"{t} val{i} = {value};")
        if plain:
            self.pin(i)
        self.names[i] = [f"val{i}"]
        self.native.add(i)
        return True

    @staticmethod
    def spaced_step(indices, valids) -> int | None:
        """The step between lanes when every lane is valid and their indices are evenly spaced but
        not consecutive (a vector along a strided axis), the whole span inside int32; else None."""
        step = _stride(indices)
        if step in (None, 0, 1) or abs(step) * len(indices) >= 2 ** 31 or \
                not all(v.is_true for v in valids):
            return None
        return step

    def spaced_lanes(self, scalar: DType, lanes: int, buf: int, index: str, step: int,
                     vector: str, store: bool) -> None:
        """Read `lanes` values `step` elements apart from data{buf}+index into the new vector
        `vector`, or write them from it (`store`), in a loop over the lanes. A kernel with a
        reduce loop (a register tile's reads and writes, once per tile after it) calls a helper
        that holds the loop (c_vector_math.spaced_helper: one loop for the compiler, however many
        vectors); elsewhere the loop is the work itself (a transpose) and is written inline, where
        it runs without a call."""
        t = self.vector_type(scalar, lanes)
        if self.tiles:
            name = f"tl_{'store' if store else 'load'}_spaced_{t}"
            if name not in self.helpers_used:
                self.helpers_used[name] = spaced_helper(name, t, NATIVE_LANES[scalar], lanes,
                                                        store)
            at = f"data{buf}+{index}, {step}"
            self.emit(f"{name}({at}, {vector});" if store else f"{t} {vector} = {name}({at});")
            return
        element = f"data{buf}[{index}+lane*{step}]"
        self.lane_loops.append(f"for lane in 0..{lanes} ({t} lanes {step} apart, "
                               f"{'stored to' if store else 'loaded from'} buf{buf})")
        if not store:
            self.emit(f"{t} {vector};")
        statement = f"{element} = {vector}[lane]" if store else f"{vector}[lane] = {element}"
        self.emit(f"{self.lane_for(0, lanes)} {statement};")

    @staticmethod
    def lane_for(first: int, lanes: int) -> str:
        """The head of a loop over the lanes from `first` on (`lane` is a reserved name)."""
        return f"for (int lane = {first}; lane < {lanes}; lane++)"

    def native_store(self, instr) -> bool:
        buf, indices, valids = instr.arg
        value = instr.src[0]
        if value not in self.native or instr.dtype.scalar not in NATIVE_LANES:
            return False
        if step := self.spaced_step(indices, valids):
            # evenly spaced lanes (a vector along a strided axis): a loop over the lanes, not
            # a line per lane (a 16-lane scatter written out lane by lane cost gcc a third of a
            # CNN step's compile on AVX-512; as a loop it runs as fast)
            self.spaced_lanes(instr.dtype.scalar, len(indices), buf, self.index(indices[0]), step,
                              self.names[value][0], store=True)
            return True
        if not _consecutive(indices):
            return False
        if all(v.is_true for v in valids):
            tu = self.vector_type(instr.dtype.scalar, len(indices), unaligned=True)
            self.emit(f"*(({tu}*)(data{buf}+{self.index(indices[0])})) = {self.names[value][0]};")
            return True
        # some lanes run past the end: a masked vector store writes only the valid ones
        scalar, lanes = instr.dtype.scalar, len(indices)
        t, m = self.vector_type(scalar, lanes), self.vector_type(dtypes.int32, lanes)
        name = f"tl_maskstore_{t}"
        if name not in self.helpers_used:
            self.helpers_used[name] = masked_store_helper(name, t, m, NATIVE_LANES[scalar], lanes,
                                                           self.r.target.features)
        mask = self.lane_mask(valids, m)
        self.emit(f"{name}(data{buf}+{self.index(indices[0])}, {mask}, {self.names[value][0]});")
        return True

    def fold_lanes(self, i: int, instr) -> None:
        """A vector accumulator folded into one value: the lanes in order, as a loop (written out,
        16 lanes of each of a softmax's 16 accumulators were a third of a transformer block's C).
        Folds of one width that follow each other share one loop, a statement each: their
        chains of adds overlap, as they did written out (a loop per fold ran them one after
        another: a @ b.T's heuristic plan, 8 folds of 8 lanes per tile, 7% slower on Zen 4)."""
        acc = instr.src[0]
        if acc not in self.native or acc in self.masks:
            return super().fold_lanes(i, instr)
        scalar, vector = instr.dtype.scalar, self.names[acc][0]
        width = self.p.instrs[acc].dtype.count
        name = f"red{i}"
        first = f"{self.r.type_name(scalar)} {name} = {vector}[0];"
        statement = f"{name} = {self.r.alu(instr.arg, [name, f'{vector}[lane]'], scalar, scalar)};"
        group = self.folds
        if group is not None and group.width == width and group.end == len(self.lines):
            # the loop just written is the last thing emitted: declare before it, join it
            del self.lines[group.head:], self.owners[group.head:]
            self.lines.append("  " * self.indent + first)
            self.owners.append(i)
            group.head += 1
        else:
            self.emit(first)
            self.owners += [i] * (len(self.lines) - len(self.owners))
            group = self.folds = LaneFolds(len(self.lines), width)
            self.lane_loops.append(group)
        group.statements.append((i, statement))
        self.write_folds(group)
        self.names[i] = [name]

    def write_folds(self, group: LaneFolds) -> None:
        """The lane loop of a group of folds, its lines owned by the folds they compute."""
        loop = self.lane_for(1, group.width)
        if len(group.statements) == 1:
            lines = [(group.statements[0][0], f"{loop} {group.statements[0][1]}")]
        else:
            lines = [(group.statements[0][0], loop + " {")]
            lines += [(owner, "  " + statement) for owner, statement in group.statements]
            lines.append((group.statements[-1][0], "}"))
        for owner, text in lines:
            self.emit(text)
            self.owners.append(owner)
        group.end = len(self.lines)
