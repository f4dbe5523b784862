"""The C family renderer: turns a LinearProgram into C-like source. C (CPU), OpenCL C and CUDA C
differ only in the pieces a subclass overrides: the kernel prefix, buffer qualifiers, how loop
axes map to threads, type names and a few op spellings. Pure string building.

A value with several vector lanes is rendered one scalar variable per lane unless the subclass
knows a native vector type for it (`vector_type`).
"""
from __future__ import annotations

import math
from types import MappingProxyType

from ..codegen.linear_ops import LinearOp
from ..codegen.plan import AxisKind
from ..dtype import DType, dtypes
from ..ir import symbolic as sym
from ..target.build_facts import RenderedKernel
from .base import Renderer


def _floor_div(text: str, c: int, negative: bool) -> str:
    return f"tl_fdiv({text},{c})" if negative else f"({text}/{c})"


def _floor_mod(text: str, c: int, negative: bool) -> str:
    return f"tl_fmod({text},{c})" if negative else f"({text}%{c})"


def index_text(expr: sym.Lin, names: dict | None = None) -> str:
    """C text of an index; `names` holds the sub-expressions declared before (_Walk.shared)."""
    return sym.render(expr, _floor_div, _floor_mod, names)


def cond_text(cond: sym.Cond, names: dict | None = None) -> str:
    # `&` not `&&`: comparisons have no side effects, and without branches compilers hoist and
    # vectorize masks
    return sym.render_cond(cond, _floor_div, _floor_mod, " & ", names)


def guarded(load: str, valid: sym.Cond, zero: str, names: dict | None = None) -> str:
    """A load where `valid` holds, zero where it does not (no load at all when never valid)."""
    if valid.is_true:
        return load
    return zero if valid.is_false else f"({cond_text(valid, names)}?{load}:{zero})"


class CStyleRenderer(Renderer):
    device = "C"
    kernel_prefix = "void"
    buffer_qualifier = ""
    restrict = "restrict"
    half_type = "_Float16"
    infinity, nan = "INFINITY", "NAN"
    preamble = ""
    family = "c"   # reads each primitive row's spellings["c"] (ir/primitives/)

    # ---- types and literals ----
    def type_name(self, dtype: DType) -> str:
        if dtype.scalar == dtypes.float16:
            return self.half_type
        return dtype.scalar.c_name

    def literal(self, value, dtype: DType) -> str:
        dtype = dtype.scalar
        if dtype.is_bool:
            return "1" if value else "0"
        if dtype.is_float:
            if math.isnan(value):
                text = self.nan
            elif math.isinf(value):
                text = self.infinity if value > 0 else f"(-{self.infinity})"
            else:
                text = repr(float(value)) + ("" if dtype == dtypes.float64 else "f")
            return text if dtype != dtypes.float16 else f"(({self.half_type}){text})"
        if value == dtype.min_value() and dtype.is_int and not dtype.is_unsigned:
            return f"(({self.type_name(dtype)})({value + 1}{self._int_suffix(dtype)}-1))"
        text = f"{int(value)}{self._int_suffix(dtype)}"
        return text if dtype.itemsize >= 4 else f"(({self.type_name(dtype)}){text})"

    @staticmethod
    def _int_suffix(dtype: DType) -> str:
        return {dtypes.int64: "ll", dtypes.uint64: "ull", dtypes.uint32: "u"}.get(dtype, "")

    # ---- ops (each primitive's row spells it with the helpers below) ----
    def math_call(self, function: str, x: str, dtype: DType) -> str:
        """A float math function (`exp2`, `sqrt`, ...): the float, double or half call."""
        if dtype.scalar == dtypes.float64:
            return f"{function}({x})"
        if dtype.scalar == dtypes.float16:
            return f"(({self.half_type}){function}f((float)({x})))"
        return f"{function}f({x})"

    def alu(self, op: str, args: list[str], dtype: DType, src_dtype: DType) -> str:
        """One ALU op (a LinearOp, or its name) as an expression: its row's C spelling."""
        return self.spelling(op)(self, args, dtype, src_dtype)

    def negate(self, a: str, dtype: DType) -> str:
        # -(-2.5f), never --2.5f (a decrement)
        return f"(!{a})" if dtype.is_bool else f"(-({a}))" if a.startswith("-") else f"(-{a})"

    def maximum(self, a: str, b: str, dtype: DType) -> str:
        if dtype.is_float:  # NaN wins, as in numpy; a tie gives b (max(+0, -0) is -0)
            # b's NaN test first, then one ordered compare: compilers make it vmaxss and a
            # predictable branch, where `a > b || a != a` branched on the data (7x slower on
            # random data, a 2x2 max-pool of a CNN step). Same value for every pair of floats.
            return f"((({b})!=({b}))?({b}):((({b})>=({a}))?({b}):({a})))"
        return f"(({a})>({b})?({a}):({b}))"

    def cast(self, a: str, src: DType, dst: DType) -> str:
        return f"(({self.type_name(dst)})({a}))"

    def int_division(self, symbol: str, a: str, b: str, dtype: DType) -> str:
        """a / b or a % b (`symbol`) that never traps: x/0 is 0, INT_MIN/-1 wraps (as the numpy
        oracle does)."""
        t = self.type_name(dtype)
        if dtype.is_unsigned or dtype.is_bool:
            return f"(({b})==0?({t})0:({t})(({a}){symbol}({b})))"
        if symbol == "/":
            neg = f"({t})(0-(unsigned {t})({a}))" if dtype.itemsize >= 4 else f"({t})(-({a}))"
            return f"(({b})==0?({t})0:({b})==-1?{neg}:({t})(({a})/({b})))"
        return f"((({b})==0||({b})==-1)?({t})0:({t})(({a})%({b})))"

    def bitcast(self, a: str, src: DType, dst: DType) -> str:
        return (f"(__extension__({{{self.type_name(src)} tl_s=({a}); {self.type_name(dst)} tl_d; "
                f"__builtin_memcpy(&tl_d,&tl_s,sizeof(tl_d)); tl_d;}}))")

    # ---- structure (overridden per backend) ----
    def param(self, index: int, dtype: DType, is_output: bool, is_input: bool) -> str:
        const = "const " if not is_output else ""
        return f"{self.buffer_qualifier}{const}{self.type_name(dtype)}* {self.restrict} data{index}"

    def variable_param(self, name: str, position: int, wide: bool = False) -> str:
        """A symbolic size the kernel takes by value, after the buffers (`position` counts every
        parameter before it); `wide`: its range leaves int32, so it is an int64."""
        return f"const {self.type_name(dtypes.int64)} {name}" if wide else f"const int {name}"

    def range_open(self, name: str, size: int, kind: str, index_type: str, threads: int,
                   in_region: bool = False, balanced: bool = False) -> list:
        """A loop's opening lines. A thread loop is an OpenMP parallel loop, or, inside a
        parallel region opened around cache-block loops (`in_region`), the team's share of it,
        with no barrier after each block (`nowait`: the team starts once per kernel, and no
        block waits for another). Where a reduce block adds to the partial sums an earlier
        block left in the output, a static schedule gives each thread the same rows in every
        block, so no two threads touch one output; where only the columns are blocked
        (`balanced`: every step writes outputs of its own), a thread takes the next step as
        it frees up (a dynamic schedule), so a core slowed by other work does less of it."""
        pragma = []
        if kind == AxisKind.THREAD:
            share = "dynamic" if balanced else "static"
            pragma = [f"#pragma omp for schedule({share}) nowait"] if in_region else \
                [f"#pragma omp parallel for num_threads({threads})"]
        return pragma + [f"for ({index_type} {name} = 0; {name} < {size}; {name}++) {{"]

    def region_open(self, threads: int) -> list:
        """A parallel region around the block loops of a threaded kernel (closed by `}`)."""
        return [f"#pragma omp parallel num_threads({threads})", "{"]

    def signature(self, name: str, params: list[str]) -> str:
        return f"{self.kernel_prefix} {name}({', '.join(params)})"

    def helpers(self, index_type: str, body: str) -> str:
        if "tl_fdiv(" not in body and "tl_fmod(" not in body:
            return ""
        return (f"static inline {index_type} tl_fdiv({index_type} a, {index_type} b) "
                f"{{ {index_type} q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) "
                f"? q - 1 : q; }}\n"
                f"static inline {index_type} tl_fmod({index_type} a, {index_type} b) "
                f"{{ {index_type} r = a % b; return (r != 0 && ((r < 0) != (b < 0))) "
                f"? r + b : r; }}\n")

    line_maps = True  # render_with_lines below (inspection's provenance gutter)

    # ---- the walk ----
    def render(self, program) -> str:
        return self.walk(program).run()

    def walk(self, program) -> _Walk:
        """The walk that renders `program` (subclasses return their own)."""
        return _Walk(self, program)

    def render_kernel(self, program) -> RenderedKernel:
        if not self.line_maps:   # a subclass with a render() of its own (notebook 06's)
            return super().render_kernel(program)
        walk = self.walk(program)
        text, owners = self._lines(walk)
        return RenderedKernel(text, tuple(owners), self.build_facts(program, walk.intrinsics),
                              walk.extra_loops())

    def render_with_lines(self, program) -> tuple[str, list[int | None]]:
        """The source and, for each of its lines, the number of the instruction it renders
        (None for lines no instruction wrote: the signature, helpers, typedefs)."""
        return self._lines(self.walk(program))

    def _lines(self, walk: _Walk) -> tuple[str, list[int | None]]:
        text = walk.run()
        owners: list[int | None] = [None] * len(text.splitlines())
        body = "\n".join(walk.lines)
        start = text.rfind(body) if walk.lines else -1
        if start >= 0:
            first = text.count("\n", 0, start)
            owners[first:first + len(walk.owners)] = walk.owners
        return text, owners


class _Walk:
    """One pass over the instructions, keeping a name (per lane) for every value."""
    intrinsics = False  # it included <immintrin.h> (BuildFacts.intrinsics; c.py sets it)

    def __init__(self, renderer: CStyleRenderer, program):
        self.r, self.p = renderer, program
        self.names: dict[int, list[str]] = {}
        self.lines: list[str] = []
        self.owners: list[int | None] = []   # per line of self.lines: the instruction it renders
        self.indent = 1
        self.index_type = renderer.type_name(program.index_dtype)
        self.open_ranges: list[bool] = []  # per open loop: did it open a parallel region?
        # threads may take any step of a blocked loop: no reduce block (range_open)
        plan = program.plan
        self.balanced = plan is not None and not any(
            a.kind is AxisKind.BLOCK and a.reduce for a in plan.axes)
        self.shared: dict = {}  # {sub-expression: name} declared for the current instruction

    def extra_loops(self) -> tuple:
        """Loops written beyond the plan's (RenderedKernel.extra_loops): none in this walk."""
        return ()

    def emit(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def uniform(self, i: int) -> bool:
        """One name serves every lane (overridden where a name can be a whole vector)."""
        return len(self.names[i]) == 1

    def ref(self, i: int, lane: int) -> str:
        names = self.names[i]
        return names[lane] if len(names) > 1 else names[0]

    def run(self) -> str:
        params = []
        for i, instr in enumerate(self.p.instrs):
            if instr.op == LinearOp.PARAM:
                index, _size, is_out, is_in = instr.arg
                params.append(self.r.param(index, instr.dtype, is_out, is_in))
                self.names[i] = [f"data{index}"]
        wide = self.p.wide_variables
        for name in self.p.variable_names:
            params.append(self.r.variable_param(name, len(params), name in wide))
        for i, instr in enumerate(self.p.instrs):
            if instr.op != LinearOp.PARAM:
                self.shared = self.declare_repeats(i, instr)
                self.step(i, instr)
                self.owners += [i] * (len(self.lines) - len(self.owners))
        body = "\n".join(self.lines)
        head = self.r.preamble + self.r.helpers(self.index_type, body)
        return f"{head}{self.r.signature(self.p.name, params)} {{\n{body}\n}}\n"

    def declare_repeats(self, i: int, instr) -> dict:
        """Declare, before instruction i, an int for each sub-expression its indices and
        conditions would otherwise write out more than once with a division inside
        (sym.repeated_parts); {expression: name}, which index/cond then write."""
        if instr.op not in (LinearOp.LOAD, LinearOp.STORE, LinearOp.COND):
            return {}
        exprs = instr.arg if instr.op == LinearOp.COND else instr.arg[1] + instr.arg[2]
        names: dict = {}
        for k, part in enumerate(sym.repeated_parts(exprs)):
            name = f"tl_index{i}_{k}"
            self.emit(self.index_declaration(name, index_text(part, names)))
            names[part] = name
        return names

    def index_declaration(self, name: str, text: str) -> str:
        return f"{self.index_type} {name} = {text};"

    def index(self, expr: sym.Lin) -> str:
        return index_text(expr, self.shared)

    def cond(self, cond: sym.Cond) -> str:
        return cond_text(cond, self.shared)

    def step(self, i: int, instr) -> None:
        self.r.type_name(instr.dtype.scalar)  # a dtype the language lacks raises at first use
        STEPS.get(instr.op, _alu_step)(self, i, instr)

    def open_loop(self, i: int, instr) -> None:
        name, size, kind = instr.arg
        region = kind == AxisKind.BLOCK and self.p.threads > 1 and not any(self.open_ranges)
        if region:
            for line in self.r.region_open(self.p.threads):
                self.emit(line)
            self.indent += 1
        for line in self.r.range_open(name, size, kind, self.index_type, self.p.threads,
                                      any(self.open_ranges) or region, self.balanced):
            self.emit(line)
        self.open_ranges.append(region)
        self.indent += 1

    def close_loop(self, i: int, instr) -> None:
        self.indent -= 1
        self.emit("}")
        if self.open_ranges.pop():  # the end of the parallel region
            self.indent -= 1
            self.emit("}")

    def constant(self, i: int, instr) -> None:
        self.names[i] = [self.r.literal(instr.arg, instr.dtype.scalar)]

    def condition(self, i: int, instr) -> None:
        self.names[i] = [self.cond(c) for c in instr.arg]

    def load_lanes(self, i: int, instr) -> None:
        buf, indices, valids = instr.arg
        scalar, t = instr.dtype.scalar, self.r.type_name(instr.dtype.scalar)
        names = []
        for lane in range(instr.dtype.count):
            load = guarded(f"data{buf}[{self.index(indices[lane])}]", valids[lane],
                           self.r.literal(0, scalar), self.shared)
            names.append(self.define(f"val{i}", lane, instr.dtype.count, t, load))
        self.names[i] = names

    def store_lanes(self, i: int, instr) -> None:
        buf, indices, valids = instr.arg
        for lane in range(instr.dtype.count):
            store = f"data{buf}[{self.index(indices[lane])}] = {self.ref(instr.src[0], lane)};"
            if valids[lane].is_false:
                continue  # a lane past the end of a padded dimension: nothing to write
            if not valids[lane].is_true:
                store = f"if ({self.cond(valids[lane])}) {store}"
            self.emit(store)

    def accumulator(self, i: int, instr) -> None:
        scalar, lanes = instr.dtype.scalar, instr.dtype.count
        init, t = self.r.literal(instr.arg, scalar), self.r.type_name(scalar)
        self.names[i] = [self.define(f"acc{i}", lane, lanes, t, init) for lane in range(lanes)]

    def accumulate(self, i: int, instr) -> None:
        acc, value = instr.src
        scalar = instr.dtype.scalar
        for lane in range(instr.dtype.count):
            a, v = self.ref(acc, lane), self.ref(value, lane)
            self.emit(f"{a} = {self.r.alu(instr.arg, [a, v], scalar, scalar)};")

    def fold_lanes(self, i: int, instr) -> None:
        acc, scalar = instr.src[0], instr.dtype.scalar
        width = self.p.instrs[acc].dtype.count
        name = self.define(f"red{i}", 0, 1, self.r.type_name(scalar), self.ref(acc, 0))
        for lane in range(1, width):  # one statement per lane: nested MAX text grows 3^lanes
            folded = self.r.alu(instr.arg, [name, self.ref(acc, lane)], scalar, scalar)
            self.emit(f"{name} = {folded};")
        self.names[i] = [name]

    def alu_lanes(self, i: int, instr) -> None:
        op, lanes, scalar = instr.op, instr.dtype.count, instr.dtype.scalar
        src_dtype = self.p.instrs[instr.src[0]].dtype.scalar if instr.src else scalar
        if all(self.uniform(s) for s in instr.src):
            lanes = 1  # every operand is the same in all lanes (a broadcast value): compute once
        names = []
        for lane in range(lanes):
            args = [self.ref(s, lane) for s in instr.src]
            names.append(self.define(f"alu{i}", lane, lanes, self.r.type_name(scalar),
                                     self.r.alu(op, args, scalar, src_dtype)))
        self.names[i] = names

    def define(self, base: str, lane: int, lanes: int, type_name: str, value: str) -> str:
        name = base if lanes == 1 else f"{base}_{lane}"
        self.emit(f"{type_name} {name} = {value};")
        return name


# instruction -> the walk's method that renders it (a subclass's override, if any); every other
# instruction is an ALU op
STEPS = MappingProxyType({LinearOp.RANGE: lambda walk, i, instr: walk.open_loop(i, instr),
         LinearOp.END: lambda walk, i, instr: walk.close_loop(i, instr),
         LinearOp.CONST: lambda walk, i, instr: walk.constant(i, instr),
         LinearOp.COND: lambda walk, i, instr: walk.condition(i, instr),
         LinearOp.LOAD: lambda walk, i, instr: walk.load_lanes(i, instr),
         LinearOp.STORE: lambda walk, i, instr: walk.store_lanes(i, instr),
         LinearOp.ACC: lambda walk, i, instr: walk.accumulator(i, instr),
         LinearOp.ACC_UPDATE: lambda walk, i, instr: walk.accumulate(i, instr),
         LinearOp.VREDUCE: lambda walk, i, instr: walk.fold_lanes(i, instr)})


def _alu_step(walk: _Walk, i: int, instr) -> None:
    walk.alu_lanes(i, instr)
