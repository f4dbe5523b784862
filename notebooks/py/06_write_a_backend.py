# %% [markdown]
# # 06 · Write a backend in a notebook cell
#
# A backend is a **renderer** (a linear program → source text) and a **runtime** (compile that
# text, allocate memory, launch), subclasses of `Renderer` (`tinylab/renderers/base.py`) and
# `Runtime` (`tinylab/runtimes/base.py`), registered by one call, `tinylab.register_backend`
# (its row in the backend registry, `tinylab/engine/backends.py`, is all the device listing, the
# inspector and the peak model know of it).
# Here we write one whose "source" is plain Python with one scalar operation per line, register
# it, and run the test suite's own op checks against it — which find a real bug in our first try.
#
# After it you can write a renderer and a runtime, register them as a device, fix an op row
# (MAX, NaN included) until the test suite's op checks pass, and write the loops, loads and
# accumulators of a C renderer that the same op checks run on the system compiler.
#
# Kernel names, loop IR, masks and ranges are explained in the [reading guide](READING.md).

# %%
# %load_ext tinylab
import inspect
import time

import numpy as np
from backend_exercises import ScalarCRenderer, check_renderer, op_checks
from exercises import check, claim, passed
from tinylab import Context, Device, Tensor, config, register_backend, trace
from tinylab.ir import symbolic as sym
from tinylab.ir.ops import Op
from tinylab.renderers.base import Renderer
from tinylab.runtimes.base import Program, Runtime
from tinylab.runtimes.buffer import HostAllocator

config.CALIBRATE.set_default(0)   # the plans here are the model's, the same on every machine (07 shows yours)

# %% [markdown]
# ## What a renderer reads
#
# The linear program of a small kernel, as every renderer sees it: `PARAM`s (buffers), `RANGE`
# and `END` (loops), `CONST`, `LOAD` and `STORE` (with index expressions), accumulators, and ALU
# ops by name.

# %%
data = np.arange(6, dtype=np.float32).reshape(2, 3)
with trace() as recorded, Context(NOOPT=1):          # NOOPT: plain loops, no actions
    (Tensor(data) * 2).sum(axis=1).realize()
print(recorded.kernels[0].passes["linear"])

# %% [markdown]
# ## The renderer
#
# One line of Python per instruction. Each ALU op is a row of a table. Ops we leave out of the
# table (`MAX`, `NEG`, `MOD`, `TRUNC`) are not a problem: the renderer declares which ops it has
# (`ops`), and codegen rewrites the others from ones it does have before planning
# (`tinylab/codegen/decompose.py`). Everything else the base class `Renderer` declares keeps its
# default: no optimization actions (`supported_actions = ()`: plain loops), every dtype, IEEE
# floats.

# %%
OPS = {   # op name -> Python expression over the operands {0}, {1}, {2}
    "ADD": "{0} + {1}", "MUL": "{0} * {1}", "IDIV": "{0} // {1}",
    "CMPLT": "{0} < {1}", "CMPNE": "{0} != {1}",
    "AND": "{0} & {1}", "OR": "{0} | {1}", "XOR": "{0} ^ {1}", "SHL": "{0} << {1}", "SHR": "{0} >> {1}",
    "EXP2": "np.exp2({0})", "LOG2": "np.log2({0})", "SIN": "np.sin({0})", "SQRT": "np.sqrt({0})",
    "RECIPROCAL": "1 / {0}", "WHERE": "({1} if {0} else {2})",
}
ACCUMULATE = {"ADD": "{0} + {1}", "MAX": "max({0}, {1})"}   # how a reduce folds a value in


class TinyRenderer(Renderer):
    device = "TINY"

    def __init__(self, table=None):
        self.table = dict(OPS if table is None else table)
        self.ops = frozenset(Op[name] for name in self.table)   # what decompose may leave us

    def literal(self, value, dtype) -> str:   # np.float32(2.0); -inf as float('-inf')
        text = repr(value) if np.isfinite(value) else f"float('{value}')"
        return f"np.{dtype.numpy_name}({text})"

    def render(self, program) -> str:
        names, depth = {}, 1
        lines = [f"def {program.name}({', '.join(f'data{p.index}' for p in program.params)}):"]
        for p in program.params:
            lines.append(f"    data{p.index} = data{p.index}.view(np.{p.dtype.numpy_name})")
        for i, instr in enumerate(program.instrs):
            op, dtype, args = instr.op, instr.dtype.scalar, [names.get(s) for s in instr.src]
            pad = "    " * depth
            if op == "PARAM":
                names[i] = f"data{instr.arg[0]}"
            elif op == "RANGE":
                variable, size, _kind = instr.arg
                lines.append(f"{pad}for {variable} in range({size}):")
                depth += 1
            elif op == "END":
                depth -= 1
            elif op == "CONST":
                names[i] = self.literal(instr.arg, dtype)
            elif op == "COND":
                names[i] = sym.render_cond(instr.arg[0]).replace(" && ", " and ")
            elif op == "LOAD":
                buffer, (index,), (valid,) = instr.arg
                value = f"data{buffer}[{sym.render(index)}]"
                if not valid.is_true:
                    condition = sym.render_cond(valid).replace(" && ", " and ")
                    value = f"({value} if {condition} else {self.literal(0, dtype)})"
                lines.append(f"{pad}v{i} = {value}")
                names[i] = f"v{i}"
            elif op == "STORE":
                buffer, (index,), _ = instr.arg
                lines.append(f"{pad}data{buffer}[{sym.render(index)}] = {args[0]}")
            elif op == "ACC":
                lines.append(f"{pad}acc{i} = {self.literal(instr.arg, dtype)}")
                names[i] = f"acc{i}"
            elif op == "ACC_UPDATE":
                lines.append(f"{pad}{args[0]} = {ACCUMULATE[instr.arg].format(*args)}")
            elif op in ("CAST", "BITCAST"):
                how = "view" if op == "BITCAST" else "astype"
                lines.append(f"{pad}v{i} = np.asarray({args[0]}).{how}(np.{dtype.numpy_name})[()]")
                names[i] = f"v{i}"
            else:   # an ALU op from the table
                lines.append(f"{pad}v{i} = {self.table[op].format(*args)}")
                names[i] = f"v{i}"
        return "\n".join(lines) + "\n"


# %% [markdown]
# ## The runtime
#
# "Compiling" is `exec`; buffers live in host memory (numpy byte arrays, like the CPU backend);
# a loaded kernel is a `Program`: calling it runs the function and returns how long it took.
# The base class `Runtime` gives the rest: `check()` (it works everywhere), `launch`, no GPU.

# %%
class TinyProgram(Program):
    def __init__(self, name: str, kernel):
        self.name, self.kernel = name, kernel

    def __call__(self, *handles, **launch_dimensions) -> float:
        start = time.perf_counter()
        self.kernel(*handles)
        return time.perf_counter() - start


class TinyRuntime(Runtime):
    name = "TINY"

    def __init__(self):
        self.allocator = HostAllocator()

    def compile(self, source: str):
        namespace = {"np": np}
        exec(compile(source, "<tiny kernel>", "exec"), namespace)
        return namespace, False    # (the "binary", was it a cache hit)

    def load(self, namespace, name: str):
        return TinyProgram(name, namespace[name])


def register(name: str, table=None) -> str:
    """One backend row: its renderer and runtime, what its source is written in (Python, so
    the inspector highlights it as Python) and a line for the device listing."""
    register_backend(name, lambda: TinyRenderer(table), TinyRuntime, lexer="python",
                     description="scalar Python written in notebook 06")
    return name


register("TINY")
with trace() as on_tiny:
    result = (Tensor(data, device="TINY") * 2).sum(axis=1).numpy()
print("result:", result, "| numpy:", (data * 2).sum(axis=1))
print(on_tiny.kernels[0].source)

# %% [markdown]
# ## Run the test suite's op checks on it
#
# `tests/ir/test_primitives.py` checks every primitive op on every backend against the numpy
# oracle (`tinylab/ir/evaluate.py`) and an independent numpy expression. Its test functions only
# need the device to be the default, so we call them directly, inside `Context(DEV=...)`:

# %%
print(inspect.getsource(op_checks))   # notebooks/backend_exercises.py


def report(results) -> None:
    failed = [(title, what) for title, what in results if what != "ok"]
    print(f"{len(results) - len(failed)} of {len(results)} op checks pass")
    for title, what in failed:
        print(f"  {title:<22} {what}")


first_try = op_checks("TINY")
report(first_try)
claim("every check but IDIV's and MOD's passes", sorted(t for t, what in first_try if what != "ok"),
      ["IDIV int32", "MOD int32"])

# %% [markdown]
# Python's `//` rounds toward minus infinity; the IR's `IDIV` (like C) truncates toward zero, so
# `-7 // 2` must be `-3`, not `-4`. `MOD` fails too: it is not in our table, so codegen built it
# from `IDIV`. Fix the row and register the fixed renderer:

# %%
FIXED = dict(OPS, IDIV="(abs({0}) // abs({1})) * (1 if ({0} < 0) == ({1} < 0) else -1)")
register("TINY_FIXED", FIXED)
fixed = op_checks("TINY_FIXED")
report(fixed)
claim("with the fixed row every op check passes", all(what == "ok" for _, what in fixed))

# %% [markdown]
# ## Real programs on it
#
# Everything above the renderer is shared, so whole models run unchanged — slowly, one scalar
# at a time:

# %%
rng = np.random.default_rng(0)
x = rng.standard_normal((3, 5)).astype(np.float32)
w = rng.standard_normal((5, 4)).astype(np.float32)
for device in ("CPU", "TINY_FIXED"):
    out = (Tensor(x, device=device) @ Tensor(w, device=device)).relu().softmax(axis=1)
    print(f"{device:<11}", out.numpy().round(4)[0])

# %% [markdown]
# ## Exercise: render `MAX` natively
#
# `MAX` is not in the table, so codegen rewrites `max(a, b)` as `where(b < a or a != a, a, b)`.
# Write a row for it (a format string using `{0}` and `{1}`, like the rows of `OPS`); the check
# registers a renderer with your row, runs the `MAX` op checks, then the point of the rewrite:
# `a != a` is there so a NaN in either input gives NaN, as `np.maximum` and `torch.maximum` do.
# Python's `max(a, b)` keeps `a` when `b` is NaN — the check feeds NaNs on both sides.

# %%
my_max_row = ...

# %%
if my_max_row is ...:
    check("MAX row", ..., None, hint="which format string gives NaN when either input is NaN?")
else:
    mine = register("TINY_MAX", dict(FIXED, MAX=my_max_row))
    results = [r for r in op_checks(mine) if r[0].startswith("MAX")]
    failures = [f"{title}: {what}" for title, what in results if what != "ok"]
    left = np.array([np.nan, 1, 5, np.nan], dtype=np.float32)
    right = np.array([2, np.nan, 3, np.nan], dtype=np.float32)
    got = Tensor(left, device=mine).maximum(Tensor(right, device=mine)).numpy()
    if not np.array_equal(got, np.maximum(left, right), equal_nan=True):
        failures.append(f"max of {left.tolist()} and {right.tolist()} gave {got.tolist()}")
    passed("MAX row", failures, hint="what does your row give when {1} is NaN, and when {0} is? "
           "What does np.maximum give in each case?")
    with trace() as with_max:
        Tensor(x, device=mine).maximum(Tensor(x[::-1].copy(), device=mine)).realize()
    print(with_max.kernels[0].source)

# %% [markdown]
# ## Exercise: the same walk, in C
#
# A real backend adds speed, not structure: `tinylab/renderers/c.py` is the same walk producing
# C with vector types and OpenMP threads, and `tinylab/runtimes/cpu.py` compiles it with the
# system compiler and loads it with ctypes. Write a plain one: `ScalarCRenderer`
# (`notebooks/backend_exercises.py`) walks the program as `TinyRenderer` does, one scalar C
# statement per line, and asks four methods for the parts left to you — the line that opens a
# loop (`RANGE`; `END` writes the `}`), a load (`LOAD`, with a condition where the view is
# padded: where it is false the load must give `zero` and read nothing), and the accumulator
# (`ACC` declares it with its start value, `ACC_UPDATE` folds a value into it with the reduce's
# op: `self.alu(op, [a, b], dtype, dtype)` spells an op in C). The check registers your class as
# the device `MYC`, compiled by the CPU runtime, and runs the op suite above plus a sum, a max
# over negative rows and over a row with a NaN, and a sum over a padded view.

# %%
print(inspect.getsource(ScalarCRenderer.render))


# %%
class MyCRenderer(ScalarCRenderer):
    def open_loop(self, variable: str, size: int) -> str:
        return ...   # RANGE: e.g. a `for` line that ends with `{`

    def load(self, name: str, type_name: str, buffer: int, index: str, valid: str | None,
             zero: str) -> str:
        return ...   # LOAD: declare `name` = data<buffer>[index] (zero where `valid` is false)

    def accumulator(self, name: str, type_name: str, init: str) -> str:
        return ...   # ACC: declare `name` starting at `init`

    def accumulate(self, acc: str, value: str, op: str, dtype) -> str:
        return ...   # ACC_UPDATE: fold `value` into `acc` with `op`


# %%
answered = MyCRenderer().open_loop("i", 1) is not ...
c_renderer_ok = check_renderer(MyCRenderer if answered else ...)
if c_renderer_ok:
    with trace() as on_myc:
        Tensor(x, device="MYC").max(axis=1).realize()
    print(on_myc.kernels[0].source)

# %% [markdown]
# **Next:** `07_actions_blocks_targets` — the actions that make a kernel fast.
