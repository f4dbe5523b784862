# %% [markdown]
# # 04 · Backends: one kernel, many targets
#
# A backend is a **renderer** (linear program → source text) plus a **runtime** (compile the
# text, allocate buffers, launch). The rest of the stack is shared, so the same kernel can be
# shown as C, OpenCL C, CUDA C or Python — and run wherever a runtime works.
#
# After it you can read one kernel in six languages, run it on PoCL, and write an OpenCL
# reduction with many workgroups, local memory and a barrier, checked against numpy.

# %%
# %load_ext tinylab
import numpy as np
from exercises import check, claim
from tinylab import Context, Device, Tensor, config, trace
from tinylab.runtimes.python import NAMESPACE

config.CALIBRATE.set_default(0)   # the plans here are the model's, the same on every machine (07 shows yours)
rng = np.random.default_rng(0)
data = rng.standard_normal((4, 6)).astype(np.float32)

# %% [markdown]
# ## What runs here
#
# `python -m tinylab.device` prints the same list with the reason a backend cannot run.

# %%
for name, usable, _why in Device.status():
    print(f"{name:<10} {'runs here' if usable else 'not here'}")
print("Device.DEFAULT =", Device.DEFAULT)

# %% [markdown]
# ## The same kernel, four renderers
#
# A row-wise sum of squares, traced on the default device. `KernelRecord.render(backend)` plans
# the same kernel AST for another backend (with that backend's heuristic) and renders it —
# no hardware needed.

# %%
with trace() as recorded:
    expected = (Tensor(data) ** 2).sum(axis=1).numpy()
kernel = recorded.kernels[0]
sources = {backend: kernel.render(backend) for backend in ("CPU", "CL", "CUDA", "PYTHON")}
for backend, text in sources.items():
    print(f"======== {backend}")
    print(text)
claim("r_4_6 on the CPU and in Python, r_6_4 on the GPUs",
      ["r_4_6(" in sources["CPU"], "r_6_4(" in sources["CL"], "r_6_4(" in sources["CUDA"],
       "r_4_6(" in sources["PYTHON"]], [True] * 4)

# %% [markdown]
# ## WGSL (WebGPU) and Metal
#
# Two more renderers share the same walk: **WGSL** for WebGPU (the GPU any modern browser
# exposes; `DEV=WEBGPU` runs it from Python through the `wgpu` package, and the inspector's *Run on
# this browser's GPU* button runs it in the page) and **Metal Shading Language** for Apple GPUs
# (render-only here: `DEV=NULL:METAL`, no Xcode needed). Where they differ from OpenCL C:
#
# | | OpenCL C | WGSL | Metal (MSL) |
# |---|---|---|---|
# | kernel | `__kernel void f(__global float* a)` | `@compute @workgroup_size(n) fn f(...)`, buffers are `@binding(i) var<storage>` globals | `kernel void f(device float* a [[buffer(0)]])` |
# | thread ids | `get_group_id(0)`, `get_local_id(0)` | `@builtin(workgroup_id)`, `local_invocation_index` | `[[threadgroup_position_in_grid]]`, `[[thread_position_in_threadgroup]]` |
# | shared memory, barrier | `__local`, `barrier(...)` | `var<workgroup>`, `workgroupBarrier()` | `threadgroup`, `threadgroup_barrier(...)` |
# | types | 8- to 64-bit ints, `half`, `double` | 32-bit only: `f32 i32 u32 bool`; tinylab packs 8/16-bit values into u32 words, emulates int64 as two u32, has no float64 | like C++ (`char` … `long`, `half`), no `double` |
# | ternary, casts | `c ? a : b`, `(int)x` | `select(b, a, c)`, `i32(x)`, `bitcast<u32>(x)` | `c ? a : b`, `(int)x`, `as_type<uint>(x)` |
# | NaN / inf | IEEE | a compiler may assume there are none: tinylab tests NaN by its bits | fast math by default |
# | variables | `float x = ...;` | `let x: f32 = ...;` (immutable), `var` for accumulators | `float x = ...;` |

# %%
for backend in ("WGSL", "METAL"):
    sources[backend] = kernel.render(backend)
    print(f"======== {backend}")
    print(sources[backend])
claim("all six loop over the 6-long reduce", all(
    "ridx0 < 6" in text or "range(6)" in text for text in sources.values()))
with trace() as softmax_trace:   # notebook 02's 4 x 5 softmax
    Tensor(rng.standard_normal((4, 5)).astype(np.float32)).softmax(axis=1).realize()
plans = {k.name: [str(o) for o in k.opts] for k in [kernel, *softmax_trace.kernels]}
print(plans)
claim("this kernel keeps scalar loops; the softmax's sum and last kernel get vectors", plans,
      {"r_4_6": [], "r_4_5": [], "r_5_4": ["VECTORIZE(0, 4)"], "E_4_8": ["VECTORIZE(1, 8)"]})

# %% [markdown]
# The loop body — load, multiply, accumulate — is the same in all six. What differs is where
# the rows go, and each backend's heuristic chooses that: a plain loop on the CPU, one GPU
# thread per row (`get_local_id(0)` / `threadIdx.x`), or one numpy array holding every row.
# (Names follow each backend's plan: `r_4_6` on the CPU, `r_6_4` on the GPUs — see the
# [reading guide](READING.md).)
#
# Why no vectors on the CPU? The heuristic prices every choice of an axis and a lane count —
# lanes past the end of an axis are masked and cost extra — and keeps scalar loops when none
# is cheaper per element. Here the 6-long reduce would leave 2 of 8 lanes masked and end in a
# horizontal sum, and the 4 rows are 6 floats apart. The last cell above shows both outcomes
# on notebook 02's 4 × 5 softmax: its max keeps scalar loops for the same reasons, its sum reads
# the 4 rows as 4 lanes (`r_5_4`: the plan moved the rows inside, next to their lanes), and its
# elementwise last kernel reads each row of 5 as 8 lanes, 3 of them masked (`E_4_8`).
#
# ## Running on OpenCL (PoCL)
#
# PoCL is an OpenCL implementation that runs on the CPU, so OpenCL kernels can run on a machine
# without a GPU (`pip install -e ".[opencl]"`). A tensor created on `"CL"` runs its kernels
# there:

# %%
if Device["CL"].available:
    with trace() as on_cl:
        result = (Tensor(data, device="CL") ** 2).sum(axis=1).numpy()
    print("ran on", on_cl.kernels[0].device, "| same as CPU:", np.allclose(result, expected))
    print(on_cl.kernels[0].source)
else:
    print("OpenCL cannot run here:", dict((n, w) for n, _, w in Device.status())["CL"])

# %% [markdown]
# ## Many workgroups, local memory and a barrier
#
# Four rows fit in one workgroup of 4 threads. Sum the rows of a 64 × 1024 matrix instead: the
# GPU heuristic gives each row a **workgroup** (`get_group_id(0)` picks the row: 64 groups) and
# splits the row across its 256 **threads** (`get_local_id(0)`), each adding 4 values. The 256
# partial sums meet in **local memory** (`__local`, shared by the workgroup); the **barrier**
# waits until every thread has written its part before they are read back, and one thread
# stores the row's total.

# %%
wide = rng.standard_normal((64, 1024)).astype(np.float32)
if Device["CL"].available:
    with trace() as grouped:
        row_sums = Tensor(wide, device="CL").sum(axis=1).numpy()
    print("ran on", grouped.kernels[0].device, "| matches numpy:",
          np.allclose(row_sums, wide.sum(axis=1), rtol=1e-5, atol=1e-4))
    cl_source = grouped.kernels[0].source
else:
    with trace() as grouped:
        Tensor(wide).sum(axis=1).realize()
    cl_source = grouped.kernels[0].render("CL")
print(cl_source)
claim("a workgroup per row, 256 threads each adding 4 values, local memory and a barrier",
      all(part in cl_source for part in ("r_64_4_256", "get_group_id(0)", "__local float",
                                         "[256]", "ridx0 < 4", "barrier(CLK_LOCAL_MEM_FENCE)")))

# %% [markdown]
# ### Exercise: write a cooperative reduction
#
# Write the OpenCL C kernel `block_sum(__global const float *x, __global float *partial, const
# int n)`. The check launches it with workgroups of 64 threads, as many as `n` needs, and each
# workgroup must write the sum of its 64 values (0 past `n`) to `partial[get_group_id(0)]`. Have
# each thread load one value into a `__local` array, then add pairs, halving the number of
# working threads each round, with `barrier(CLK_LOCAL_MEM_FENCE)` between rounds so no thread
# reads a value another has not written yet. The check builds it with pyopencl on the project's
# OpenCL device (PoCL on this CPU) and compares every workgroup's sum with numpy for `n` = 1, 63,
# 64, 1000 and 4099; a kernel without local memory or a barrier does not count.

# %%
from backend_exercises import check_block_sum  # noqa: E402

my_block_sum = ...   # a string of OpenCL C

if Device["CL"].available:
    block_sum_ok = check_block_sum(my_block_sum)
else:
    print("OpenCL cannot run here:", dict((n, w) for n, _, w in Device.status())["CL"])

# %% [markdown]
# ## Render-only devices
#
# `NULL:CUDA` runs the whole pipeline up to CUDA source and launches nothing: with `DEBUG=4` it
# prints each kernel's source. Useful for reading GPU code on a laptop.

# %%
with Context(DEV="NULL:CUDA", DEBUG=4):
    (Tensor(data) ** 2).sum(axis=1).realize()

# %% [markdown]
# ## The Python backend, step by step
#
# `DEV=PYTHON` renders the linear program as numpy code and executes it: global loops become
# arrays of indices (every row at once), reduce loops stay Python `for` loops, and each ALU op
# calls the same numpy arithmetic the reference evaluator uses.

# %%
with trace() as on_python:
    result = (Tensor(data, device="PYTHON") ** 2).sum(axis=1).numpy()
python_kernel = on_python.kernels[0]
print("ran on", python_kernel.device, "| same as CPU:", np.allclose(result, expected))
print(python_kernel.source)
claim("the rows are one array of indices, the reduce a Python loop",
      "gidx0 = arange(4" in python_kernel.source and "for ridx0 in range(6):" in python_kernel.source)

# %% [markdown]
# Because it is plain Python, we can watch it run: execute the same source with the helpers
# (`load`, `alu`, `store`) wrapped so that each call prints what it did. Two rows of three keep
# the output short.

# %%
def run_printing(source: str, name: str, *arrays: np.ndarray, quiet: bool = False) -> list:
    calls = []
    namespace = dict(NAMESPACE)

    def wrap(helper, label):
        def traced(*args):
            out = helper(*args)
            shown = np.asarray(out if out is not None else args[2]).round(3).tolist()
            calls.append(label)
            what = args[0] if label == "alu" else ""
            if not quiet:
                print(f"  {label:<5} {what:<4} -> {shown}")
            return out
        return traced

    for label in ("load", "alu", "store"):
        namespace[label] = wrap(NAMESPACE[label], label)
    exec(source, namespace)
    namespace[name](*arrays)
    return calls


small = np.arange(6, dtype=np.float32).reshape(2, 3)
with trace() as tiny:
    (Tensor(small, device="PYTHON") ** 2).sum(axis=1).realize()
out = np.zeros(2, dtype=np.float32)
calls = run_printing(tiny.kernels[0].source, tiny.kernels[0].name, out, small.ravel())
print("result:", out, "| numpy:", (small ** 2).sum(axis=1))
claim("per reduce step one load, a MUL and an ADD for both rows; one store at the end",
      calls, ["load", "alu", "alu"] * 3 + ["store"])

# %% [markdown]
# Each `load` returns both rows' values at once (one array per loop trip), the `MUL` squares
# them, the `ADD` accumulates, and one `store` writes the whole output.
#
# ## Every backend computes the same numbers
#
# The test suite runs every primitive op on every backend that works here and compares with
# the numpy oracle; the same in miniature:

# %%
for device in ("CPU", "PYTHON", "CL", "CUDA", "WEBGPU"):
    if not Device[device].available:
        print(f"{device:<7} (not here)")
        continue
    got = (Tensor(data, device=device).softmax(axis=1) * 3).numpy()
    reference = np.exp(data - data.max(1, keepdims=True))
    reference = 3 * reference / reference.sum(1, keepdims=True)
    print(f"{device:<7} matches numpy: {np.allclose(got, reference, atol=1e-6)}")
    claim(f"{device} computes numpy's numbers", np.allclose(got, reference, atol=1e-6))

# %% [markdown]
# ## Exercise
#
# Run `(x ** 2).sum(axis=1)` for an `x` of shape `(4, 5)` on the Python backend. How many times
# does its `load` helper run? (Hint: which loops are Python loops?)

# %%
answer_loads = ...

# %%
x45 = np.ones((4, 5), dtype=np.float32)
with trace() as counted:
    (Tensor(x45, device="PYTHON") ** 2).sum(axis=1).realize()
calls = run_printing(counted.kernels[0].source, counted.kernels[0].name,
                     np.zeros(4, dtype=np.float32), x45.ravel(), quiet=True)
check("load calls", answer_loads, calls.count("load"),
      "the 4 rows are one numpy array; only the reduce loop over 5 runs in Python",
      hint="in the printed run above, how many loads did each trip of the reduce loop make, "
           "and how many trips does a reduce over 5 columns take?")

# %% [markdown]
# **Next:** `05_train_mnist` — a real model on these kernels. To write a backend of your own,
# `06_write_a_backend`.
