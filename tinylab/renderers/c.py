"""The C renderer (CPU): C99 with GCC/Clang vector extensions and OpenMP for threaded loops,
for one CPUTarget (target/cpu_target.py).

Everything shared with OpenCL and CUDA lives in cstyle.py. What is C's own: values with several
lanes of float32/int32/uint32 become native vector variables (`float8`, never wider than the
target's vectors), loads of consecutive lanes become one vector load, comparisons become lane
masks and WHERE/MAX bit-selects on them. Loads, stores and folds of lanes (masked, evenly
spaced, a vector accumulator folded into one value) are c_lanes.py's.
Anything else falls back to one scalar per lane (cstyle's walk), so every program still renders.

A vector loaded inside a reduce loop and read by several operations (a matmul tile's column
vector, one per FMA of each row) is pinned to a register with an empty asm statement: left to
itself gcc folds the load into every FMA as a memory operand, so a 4x16 tile issued 12 loads
per 8 FMAs and ran at about half the speed (85 -> 150 GFLOPS on a 1024 matmul, Zen 3).
"""
from __future__ import annotations

from ..codegen.panels import matmul_panel, packs_rows
from ..codegen.linear_ops import LinearOp
from ..codegen.plan import Action
from ..dtype import DType, dtypes
from ..target.cpu_target import CPUTarget, detect
from ..codegen.plan import AxisKind
from ..ir.ops import Op
from .c_lanes import NATIVE_LANES, VECTOR_NAMES, LaneAccess, LaneFolds
from .c_vector_math import broadcast, select, vector_math
from .cstyle import CStyleRenderer, _Walk

# float32 lanes: helpers in c_vector_math.py (libm has no vector forms)
VECTOR_MATH = frozenset({LinearOp.EXP2, LinearOp.LOG2, LinearOp.SQRT})
NATIVE_STRUCTURE = frozenset({LinearOp.WHERE, LinearOp.CAST, LinearOp.BITCAST})  # native_alu


def native_op(op: str) -> bool:
    """An ALU op native vector variables compute: the ones above, and every primitive whose row
    has a "c_vector" spelling (the others compute one lane at a time)."""
    if op in NATIVE_STRUCTURE or op in VECTOR_MATH:
        return True
    return op in Op and Op[op].spelling("c_vector") is not None


class CRenderer(CStyleRenderer):
    device = "CPU"
    preamble = "#include <math.h>\n#include <stdbool.h>\n"
    supported_actions = (Action.UPCAST, Action.UNROLL, Action.THREAD, Action.SWAP,
                         Action.VECTORIZE, Action.BLOCK)

    def __init__(self, target: CPUTarget | None = None):
        self.target = target if target is not None else detect()
        self.matmul_panel = matmul_panel(self.target)  # packed matmul panels (scheduler)
        self.matmul_pack_rows = packs_rows(self.target)  # ... of the rows operand too
        self.relayout_lanes = self.target.lanes_of(4)  # operand relayout (scheduler)
        # lane counts held in one native vector variable: up to one register of the target
        self.native_widths = tuple(w for w in (2, 4, 8, 16, 32) if w <= self.target.lanes_of(4))
        self.register_constraint = register_constraint(self.target)

    def walk(self, program) -> _VectorWalk:
        return _VectorWalk(self, program)


def register_constraint(target: CPUTarget) -> str | None:
    """The inline-asm constraint naming any vector register of the target ("v": all 32 of
    AVX-512; "x": xmm/ymm 0-15; "w": NEON), None where the architecture has none we know."""
    if target.arch == "x86_64":
        return "v" if target.isa == "avx512" else "x"
    return "w" if target.arch == "aarch64" else None


class _VectorWalk(LaneAccess, _Walk):
    """The C-family walk plus native vector variables for float32/int32/uint32 lanes."""

    def __init__(self, renderer, program):
        super().__init__(renderer, program)
        self.native: set[int] = set()   # instructions held in one vector variable
        self.masks: set[int] = set()    # native bool values: int lane masks (-1 / 0)
        self.typedefs: dict[str, str] = {}
        self.helpers_used: dict[str, str] = {}
        self.uses: dict[int, int] = {}  # instruction -> how many instructions read it
        for instr in program.instrs:
            for src in instr.src:
                self.uses[src] = self.uses.get(src, 0) + 1
        self.loop_kinds: list = []      # the kind of each open loop, outermost first
        # lane masks already named, one table per open scope (the kernel's, then each loop's):
        # a mask's text -> the variable holding it, so loads, stores and selects under the same
        # conditions share one vector compare (16 lanes wrote each mask out at every use)
        self.named_masks: list[dict[str, str]] = [{}]
        self.mask_count = 0
        self.folds: LaneFolds | None = None  # the folds the last lane loop written computes
        self.lane_loops: list = []      # inline lane loops and fold groups written (extra_loops)
        # a reduce loop: its register tiles read and write spaced lanes once per tile (spaced_lanes)
        self.tiles = any(instr.op is LinearOp.RANGE and instr.arg[2] == AxisKind.REDUCE
                         for instr in program.instrs)

    # ---- types ----
    def vector_type(self, dtype: DType, lanes: int, unaligned: bool = False) -> str:
        base = NATIVE_LANES[dtype.scalar]
        name = f"{VECTOR_NAMES[base]}{lanes}" + ("_u" if unaligned else "")
        size = lanes * dtype.itemsize
        align = f", aligned({dtype.itemsize})" if unaligned else ""
        self.typedefs[name] = (f"typedef {base} {name} __attribute__((vector_size({size}){align}));")
        return name

    def value_type(self, i: int) -> str:
        instr = self.p.instrs[i]
        lanes = instr.dtype.count
        return self.vector_type(dtypes.int32 if i in self.masks else instr.dtype, lanes)

    def lane_mask(self, valids, mask_type: str, name: str | None = None) -> str:
        """The variable holding the int lane mask (-1 valid / 0 not) of per-lane conditions
        `valids` (see named_mask)."""
        return self.named_mask(self.lane_mask_text(valids, mask_type), mask_type, name)

    def named_mask(self, text: str, mask_type: str, name: str | None = None) -> str:
        """A variable holding lane mask `text`: one already named in an open scope, else a new
        one (`name`, or lmN) declared here."""
        for scope in reversed(self.named_masks):
            if text in scope:
                return scope[text]
        if name is None:
            name, self.mask_count = f"lm{self.mask_count}", self.mask_count + 1
        self.emit(f"{mask_type} {name} = {text};")
        self.named_masks[-1][text] = name
        return name

    def lane_mask_text(self, valids, mask_type: str) -> str:
        """An int lane mask (-1 valid / 0 not) for per-lane conditions. Lanes usually differ only
        in the bounds of the same comparisons (x < c_lane), so each comparison is one vector
        compare of the broadcast x against a constant vector; otherwise lane by lane."""
        lanes = len(valids)
        if self.p.index_dtype == dtypes.int32 and not any(v.is_false for v in valids):
            bounds: dict = {}
            for lane, valid in enumerate(valids):
                for leaf in valid.leaves():
                    if leaf.kind != "lt":
                        break
                    per_lane = bounds.setdefault(leaf.x, [None] * lanes)
                    # x < 2 && x < 3 in one lane (not simplified away): the tighter bound holds
                    per_lane[lane] = leaf.c if per_lane[lane] is None else \
                        min(per_lane[lane], leaf.c)
                else:
                    continue
                break
            else:
                big = 2 ** 31 - 1
                parts = []
                for x, per_lane in bounds.items():
                    consts = ", ".join(str(big if c is None else c) for c in per_lane)
                    parts.append(f"((({mask_type}){{}}+{self.index(x)}) < (({mask_type}){{{consts}}}))")
                return "(" + " & ".join(parts) + ")" if parts else f"(({mask_type}){{}}-1)"
        return f"(({mask_type}){{{', '.join(f'-({self.cond(v)})' for v in valids)}}})"

    # ---- references ----
    def ref(self, i: int, lane: int) -> str:
        if i in self.native:
            name = self.names[i][0]
            return f"({name}[{lane}]!=0)" if i in self.masks else f"{name}[{lane}]"
        return super().ref(i, lane)

    def uniform(self, i: int) -> bool:
        return i not in self.native and super().uniform(i)  # a native name is a whole vector

    def packed(self, i: int, type_name: str, mask: bool = False) -> str:
        """Instruction i as a vector expression of type_name (broadcast or gathered)."""
        if i in self.native:
            return self.names[i][0]
        lanes = self.p.instrs[i].dtype.count
        if self.uniform(i):
            value = self.names[i][0]
            return f"(({type_name}){{}}+({value})*-1)" if mask else broadcast(value, type_name)
        parts = [f"-({self.ref(i, lane)})" if mask else self.ref(i, lane) for lane in range(lanes)]
        text = f"(({type_name}){{{', '.join(parts)}}})"
        # an accumulator's lanes change as its loop runs: only values fixed once made are named
        fixed = self.p.instrs[i].op != LinearOp.ACC
        return self.named_mask(text, type_name) if mask and fixed else text

    # ---- the walk ----
    def run(self) -> str:
        text = super().run()
        if not self.typedefs:
            return text
        defs = "\n".join(self.typedefs[k] for k in sorted(self.typedefs)) + "\n"
        if self.helpers_used:
            helpers = "".join(self.helpers_used.values())
            x86 = "#include <immintrin.h>\n" if "_mm" in helpers else ""
            self.intrinsics = bool(x86)  # BuildFacts.intrinsics: the runtime reads it
            defs = x86 + defs + helpers
        head = self.r.preamble
        return head + defs + text[len(head):]

    def step(self, i: int, instr) -> None:
        lanes = instr.dtype.count
        if lanes in self.r.native_widths and self.try_native(i, instr):
            return
        super().step(i, instr)

    def try_native(self, i: int, instr) -> bool:
        op = instr.op
        if op == LinearOp.LOAD:
            return self.native_load(i, instr)
        if op == LinearOp.STORE:
            return self.native_store(instr)
        if op == LinearOp.ACC and instr.dtype.scalar in NATIVE_LANES:
            t = self.vector_type(instr.dtype, instr.dtype.count)
            init = self.r.literal(instr.arg, instr.dtype.scalar)
            self.emit(f"{t} acc{i} = (({t}){{}}+{init});")
            self.names[i] = [f"acc{i}"]
            self.native.add(i)
            return True
        if op == LinearOp.ACC_UPDATE and instr.src[0] in self.native:
            acc, value = instr.src
            name = self.names[acc][0]
            t = self.value_type(acc)
            mask_type = self.vector_type(dtypes.int32, instr.dtype.count)
            other = self.packed(value, t)
            self.emit(f"{name} = {self.vector_alu(instr.arg, [name, other], t, mask_type)};")
            return True
        if op == LinearOp.COND and self.p.index_dtype == dtypes.int32:
            # per-lane validity as one lane mask (a vector compare where lanes differ only in
            # bounds): what reads it (WHERE, a chain of integer ops) can then stay vectors
            m = self.vector_type(dtypes.int32, instr.dtype.count)
            self.names[i] = [self.lane_mask(instr.arg, m, name=f"alu{i}")]
            self.native.add(i)
            self.masks.add(i)
            return True
        if native_op(op):
            return self.native_alu(i, instr)
        return False

    def open_loop(self, i: int, instr) -> None:
        self.loop_kinds.append(instr.arg[2])
        self.named_masks.append({})
        super().open_loop(i, instr)

    def close_loop(self, i: int, instr) -> None:
        self.loop_kinds.pop()
        self.named_masks.pop()
        super().close_loop(i, instr)

    def pin(self, i: int) -> None:
        """Keep vector value `i` in a register when a reduce loop reads it several times."""
        constraint = self.r.register_constraint
        if constraint and self.uses.get(i, 0) > 1 and AxisKind.REDUCE in self.loop_kinds:
            self.emit(f'__asm__("" : "+{constraint}"(val{i}));  // one load, held in a register')

    def native_alu(self, i: int, instr) -> bool:
        op, srcs = instr.op, instr.src
        if not any(s in self.native for s in srcs):
            return False  # nothing vector to build on: scalar lanes are as good
        operand_dtype = self.p.instrs[srcs[-1]].dtype.scalar
        if op in (LinearOp.CMPLT, LinearOp.CMPNE):
            if operand_dtype not in NATIVE_LANES:
                return False
            t = self.vector_type(operand_dtype, instr.dtype.count)
            args = [self.packed(s, t) for s in srcs]
            self.finish(i, self.vector_type(dtypes.int32, instr.dtype.count),
                        self.vector_alu(op, args, t, t), mask=True)
            return True
        if instr.dtype.scalar == dtypes.bool:
            bitwise = op in (LinearOp.AND, LinearOp.OR, LinearOp.XOR, LinearOp.NEG)
            if bitwise and all(s in self.masks or self.uniform(s) for s in srcs):
                m = self.vector_type(dtypes.int32, instr.dtype.count)
                args = [self.packed(s, m, mask=True) for s in srcs]
                text = f"(~{args[0]})" if op == LinearOp.NEG else self.vector_alu(op, args, m, m)
                self.finish(i, m, text, mask=True)
                return True
            return False
        if instr.dtype.scalar not in NATIVE_LANES:
            return False
        t = self.vector_type(instr.dtype, instr.dtype.count)
        if op == LinearOp.CAST and srcs[0] in self.masks:
            # a lane mask (-1 or 0 per lane) as a number: negated, 1 or 0, then converted
            m = self.vector_type(dtypes.int32, instr.dtype.count)
            mask = self.packed(srcs[0], m, mask=True)
            self.finish(i, t, f"__builtin_convertvector((-{mask}), {t})")
            return True
        if op in (LinearOp.CAST, LinearOp.BITCAST):
            if operand_dtype not in NATIVE_LANES or srcs[0] in self.masks:
                return False
            if op == LinearOp.CAST and dtypes.float32 in (operand_dtype, instr.dtype.scalar) and \
                    dtypes.uint32 in (operand_dtype, instr.dtype.scalar):
                return False  # float <-> uint32 out of range: vector and scalar C differ
            source = self.packed(srcs[0], self.vector_type(operand_dtype, instr.dtype.count))
            text = f"__builtin_convertvector({source}, {t})" if op == LinearOp.CAST else \
                f"(({t})({source}))"
            self.finish(i, t, text)
            return True
        if op == LinearOp.WHERE:
            if self.uniform(srcs[0]) and self.p.instrs[srcs[0]].dtype.count == 1:
                a, b = self.packed(srcs[1], t), self.packed(srcs[2], t)
                self.finish(i, t, f"({self.names[srcs[0]][0]} ? {a} : {b})")
                return True
            m = self.vector_type(dtypes.int32, instr.dtype.count)
            cond = self.packed(srcs[0], m, mask=True)
            a, b = self.packed(srcs[1], t), self.packed(srcs[2], t)
            self.finish(i, t, select(cond, a, b, t, m))
            return True
        if op in VECTOR_MATH:
            if instr.dtype.scalar != dtypes.float32:
                return False
            m = self.vector_type(dtypes.int32, instr.dtype.count)
            name = f"tl_{op.lower()}_{t}"
            if name not in self.helpers_used:
                self.helpers_used[name] = vector_math(op, name, t, m, instr.dtype.count,
                                                       self.r.target.features)
            self.finish(i, t, f"{name}({self.packed(srcs[0], t)})")
            return True
        args = [self.packed(s, t) for s in srcs]
        self.finish(i, t, self.vector_alu(op, args, t, self.vector_type(dtypes.int32,
                                                                       instr.dtype.count)))
        return True

    def vector_alu(self, op: str, args: list[str], t: str, mask_type: str) -> str:
        """A vector ALU op: its row's "c_vector" spelling."""
        return self.r.spelling(op, "c_vector")(self, args, t, mask_type)

    def select(self, mask: str, a: str, b: str, t: str, mask_type: str) -> str:
        return select(mask, a, b, t, mask_type)

    def finish(self, i: int, type_name: str, text: str, mask: bool = False) -> None:
        self.emit(f"{type_name} alu{i} = {text};")
        self.names[i] = [f"alu{i}"]
        self.native.add(i)
        if mask:
            self.masks.add(i)
