# %% [markdown]
# # 03 · The IR and code generation
#
# Inside one kernel: how movement ops become index arithmetic (views and the symbolic
# simplifier), what a scheduled kernel looks like (the kernel AST), how it becomes loops (the
# plan and its optimization actions), a flat program (linearize) and finally C.
#
# After it you can compute a view's buffer index, read a plan's name and loop IR, follow a
# line of C back to your code, and write a simplifier rewrite that a fuzzer checks against floor
# division.
#
# Kernel names, loop IR, masks and ranges are explained in the [reading guide](READING.md).

# %%
# %load_ext tinylab
import numpy as np
from codegen_exercises import check_div_rewrite
from exercises import check, claim
from tinylab import Device, Tensor, config, trace
from tinylab.codegen.linearize import linearize
from tinylab.codegen.plan import KernelPlan, Opt, OptError
from tinylab.ir import symbolic as sym
from tinylab.ir.graph_printer import print_graph
from tinylab.ir.view import ViewStack
from tinylab.runtimes.python import NAMESPACE

config.CALIBRATE.set_default(0)   # the plans here are the model's, the same on every machine (07 shows yours)
rng = np.random.default_rng(0)

# %% [markdown]
# ## The graph is hash-consed
#
# Building the same node twice gives the same object: common subexpressions are shared for free
# and a node is its own cache key.

# %%
a = Tensor(rng.standard_normal((8, 8)).astype(np.float32))
b = Tensor(rng.standard_normal((8, 8)).astype(np.float32))
print((a + b).node is (a + b).node, (a + b).node is (b + a).node)
claim("building a + b twice gives the same node", (a + b).node is (a + b).node)

# %% [markdown]
# ## Views: movement ops are index arithmetic
#
# A `View` is (shape, strides, offset, mask): element `(i, j)` of the view reads buffer index
# `offset + i·stride0 + j·stride1`, and reads 0 outside the mask. Every movement op maps a view
# to a view; the data never moves.

# %%
base = ViewStack.contiguous((3, 4))
for title, view in [("contiguous (3,4)", base),
                    ("permute (1,0)", base.permute((1, 0))),
                    ("expand (1,4)->(3,4)", ViewStack.contiguous((1, 4)).expand((3, 4))),
                    ("shrink rows 1:3", base.shrink(((1, 3), (0, 4)))),
                    ("flip axis 1", base.flip((1,))),
                    ("pad 1 on each side", base.pad(((1, 1), (1, 1))))]:
    print(f"{title:<22} {view}")

# %% [markdown]
# Give the view symbolic loop variables and it returns the buffer index and the condition under
# which the element is real (padding reads 0):

# %%
i, j = sym.var("i", 0, 4), sym.var("j", 0, 5)          # loop variables with their ranges
index, valid = base.pad(((1, 1), (1, 1))).to_index([i, j])
print("index:", sym.render(index))
print("valid:", sym.render_cond(valid))

# %% [markdown]
# A reshape that strides cannot express (here: a transposed matrix read as one flat vector)
# stacks a second view; its index needs a division and a modulo:

# %%
flat = base.permute((1, 0)).reshape((12,))
k = sym.var("k", 0, 11)
flat_index = sym.render(flat.to_index([k])[0])
print(flat, "\n", "index:", flat_index)
claim("two views stacked, and the index needs a division and a modulo",
      "->" in str(flat) and "//" in flat_index and "%" in flat_index)

# %% [markdown]
# ## The simplifier keeps indices small
#
# Expressions are built in one canonical form and simplified as they are built, using what is
# known about each variable's range:

# %%
row, col = sym.var("row", 0, 9), sym.var("col", 0, 7)    # col < 8
x = sym.var("x", 0, 23)
for text, expr in [("(row*8 + col) // 8", (row * 8 + col) // 8),
                   ("(row*8 + col) % 8", (row * 8 + col) % 8),
                   ("col // 8", col // 8),
                   ("(x//4)*4 + x%4", (x // 4) * 4 + x % 4),
                   ("(x % 12) // 4", (x % 12) // 4)]:
    print(f"{text:<20} -> {sym.render(expr)}")
claim("each expression simplified using its variables' ranges",
      [sym.render(e) for e in ((row * 8 + col) // 8, (row * 8 + col) % 8, col // 8,
                               (x // 4) * 4 + x % 4)], ["row", "col", "0", "x"])

# %% [markdown]
# ## A scheduled kernel: the kernel AST
#
# The scheduler turns the fused part of the graph into a kernel AST: a `SINK` of `STORE`s whose
# values are computed from `LOAD`s, each load reading through its view. This is `a @ b`:

# %%
with trace() as recorded:
    product = (a @ b).numpy()
kernel = recorded.kernels[0]
print(kernel.passes["ast"])
claim("a is read with a stride of 0 along the output columns, b along the output rows",
      "buf1 View((8, 8, 8), strides=(8, 0, 1))" in kernel.passes["ast"]
      and "buf2 View((8, 8, 8), strides=(0, 1, 8))" in kernel.passes["ast"])

# %% [markdown]
# The loads read `a` and `b` through views of the 8 × 8 × 8 loop space: a stride of 0 means
# "the same element for every value of this loop" — `a` is the same for every output column,
# `b` for every output row. The product itself exists only as this loop nest.
#
# ## The plan: loops, and actions on them
#
# `KernelPlan.from_ast` gives one loop per dimension (global loops over outputs, then reduce
# loops). Printed, that is the *loop IR*:

# %%
plan = KernelPlan.from_ast(kernel.ast)
print(plan.describe())

# %% [markdown]
# An optimization action rewrites the loops. `UPCAST(0, 4)` splits the first global loop and
# unrolls 4 rows into registers (a *tile*): each `b` load now feeds 4 accumulators. The kernel
# name lists every axis size, so it changes too:

# %%
tiled = plan.apply(Opt("UPCAST", 0, 4))
print(tiled.describe())
claim("UPCAST(0, 4): 2 trips of the first loop, a tile of 4 rows, and a new name",
      (tiled.name, [(axis.kind.value, axis.size) for axis in tiled.axes if axis.kind.value == "upcast"]),
      ("r_2_8_8_4", [("upcast", 4)]))

# %% [markdown]
# Actions check that they fit the loop they are applied to:

# %%
try:
    plan.apply(Opt("UNROLL", 0, 4))
except OptError as error:
    print("OptError:", error)

# %% [markdown]
# ## Linearize: the flat program
#
# The plan becomes a list of SSA instructions. Tiles are expanded, equal instructions shared,
# and each instruction placed in the outermost loop its inputs allow.

# %%
program = linearize(tiled, tiled.name)
print(program.print())
listing = program.print()
claim("4 accumulators, and one load of b feeding 4 multiplies per reduce step",
      (listing.count("= ACC "), listing.count("LOAD  buf2"), listing.count("LOAD  buf1")), (4, 1, 4))

# %% [markdown]
# ## Render: C source
#
# The C renderer walks the program; the 4 accumulators are 4 C variables.

# %%
c_source = Device["CPU"].renderer.render(program)
print(c_source)
claim("the 4 accumulators are 4 C variables", c_source.count("float acc"), 4)

# %% [markdown]
# Any plan can be checked by running it. The Python renderer turns the same program into
# numpy code (notebook 04 looks at it closely); run it and compare with numpy's matmul:

# %%
def run_in_python(plan: KernelPlan, *inputs: np.ndarray) -> np.ndarray:
    program = linearize(plan, plan.name)
    namespace = dict(NAMESPACE)
    exec(Device["PYTHON"].renderer.render(program), namespace)
    out = np.zeros(program.params[0].size, dtype=np.float32)
    namespace[program.name](out, *[array.ravel() for array in inputs])
    return out.reshape(product.shape)


tiled_ok = np.allclose(run_in_python(tiled, a.numpy(), b.numpy()), a.numpy() @ b.numpy(),
                       atol=1e-5)
print("tiled plan == numpy:", tiled_ok)
claim("the tiled plan computes a @ b", tiled_ok)

# %% [markdown]
# ## Every pass, as the engine recorded it
#
# A trace keeps each compiled kernel's passes in order: the kernel AST, the plan before any
# action, the plan after each action the engine chose (its heuristic, notebook 07), the linear
# program and the source. Each action's diff shows what it did to the loops (the inspector's
# Passes panel steps through the same list with the arrow keys):

# %%
from tinylab.inspection.passes import pass_steps

for number, step in enumerate(pass_steps(kernel.steps), 1):
    print(f"--- {number}. {step['title']}: {len(step['text'].splitlines())} lines")
    if step["title"].startswith("action"):
        print(step["diff"])

# %% [markdown]
# ## Provenance: each line of source, back to the graph and to your code
#
# The linear program remembers which AST node each instruction computes, and the renderer which
# instruction each line writes, so every line of source maps back to the ops of the graph —
# and, for a graph built inside a trace, to the line of your code that built each op. Here for
# the CUDA source of `(a @ b).relu()`:

# %%
from tinylab.inspection import build_model
from tinylab.inspection.provenance import annotated_source

with trace() as traced:
    scores = (a @ b).relu()   # built inside the trace: its ops keep this line
    scores.numpy()
print(annotated_source(build_model(traced, timings=False, backends=("CUDA",)), "k0", "CUDA"))

# %% [markdown]
# ## Exercises
#
# **1.** The view `ViewStack.contiguous((4, 6)).permute((1, 0)).shrink(((1, 4), (0, 2)))`:
# which buffer index does its element `(2, 1)` read?

# %%
answer_index = ...

# %%
view = ViewStack.contiguous((4, 6)).permute((1, 0)).shrink(((1, 4), (0, 2)))
where, _ = view.to_index([sym.const(2), sym.const(1)])
check("buffer index of (2, 1)", answer_index, sym.evaluate(where, {}),
      f"{view}: offset + 2·stride0 + 1·stride1",
      hint="write down the view's strides and offset after the permute and after the shrink: "
           "which element of the original 4 x 6 buffer is row 2, column 1 of the result?")

# %% [markdown]
# **2.** Starting from the plain matmul plan `r_8_8_8`, apply `UPCAST(1, 2)` and then unroll the
# reduce loop by 4. What is the kernel's name? (Axes are listed as: loops, then tiles.)

# %%
answer_name = ...

# %%
step = plan.apply(Opt("UPCAST", 1, 2))
reduce_axis = [n for n, axis in enumerate(step.axes) if axis.kind.value == "reduce"][0]
step = step.apply(Opt("UNROLL", reduce_axis, 4))
check("name after UPCAST(1,2) and UNROLL by 4", answer_name, step.name,
      "axes " + ", ".join(f"{axis.size} ({axis.kind.value})" for axis in step.axes),
      hint="UPCAST(0, 4) above turned r_8_8_8 into r_2_8_8_4: which loop does each action split, "
           "into what, and where does the new tile go in the name?")
print("and it still computes a @ b:",
      np.allclose(run_in_python(step, a.numpy(), b.numpy()), a.numpy() @ b.numpy(), atol=1e-5))

# %% [markdown]
# **3. Build a simplifier rule.** Index expressions are `Lin` objects (`tinylab/ir/symbolic.py`):
# sums of bounded variables, each with its bounds `x.lo` and `x.hi`. Write a rewrite for
# `x // c`: return a simpler `Lin` that equals `x // c` for every value the variables can take,
# or `None` where your rule does not apply. The check fuzzes it: hundreds of random expressions
# with random bounds, each answer compared with floor division at random points inside the
# bounds, and the rule must fire wherever `x // c` is in fact a constant. (`sym.const(k)` builds
# a constant.)

# %%
def div_rewrite(x, c: int):
    return None   # replace: this rule never fires


# %%
rule_ok = check_div_rewrite(div_rewrite)

# %% [markdown]
# **Next:** `04_backends` — the same program as OpenCL, CUDA and Python.
