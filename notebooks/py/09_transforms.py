# %% [markdown]
# # 09 · Function transforms: jvp, vjp, vmap, each a rewrite of the graph
#
# `tinylab.func` has torch.func's transforms: `grad`, `vjp`, `jvp`, `vmap`, `jacrev`, `jacfwd`,
# `hessian`. Each one calls your function once on *placeholders* (stand-in leaves with no data),
# then rewrites the lazy graph it built into the graph of the answer. Nothing runs until you ask
# for a value, so transforms compose: `vmap(grad(f))` is one graph.
#
# After it you can read each transform as a graph rewrite, compare vmap's kernels with a loop's,
# and write a jvp rule, a batching rule and a vjp rule derived by transposing a jvp, each checked
# by the parity harness against torch.
#
# All three rewrites read one table, `tinylab.func.TABLE`: a row per primitive op holding its
# forward-mode (jvp) rule, its reverse (vjp) rule and its batching rule side by side (the rows
# are declared in `tinylab/ir/primitives/`, one per primitive, with their renderer spellings).

# %%
# %load_ext tinylab
import numpy as np
from exercises import check, claim
from machine import measured_on
from tinylab import GlobalCounters, Tensor, config, func
from tinylab.engine.timing import interleaved, verdict
from tinylab.ir.ops import Op

config.CALIBRATE.set_default(0)   # the plans here are the model's, the same on every machine (07 shows yours)

print("rows with each rule:", func.coverage())

# %% [markdown]
# ## jvp by hand, then from the table
#
# A jvp pushes a tangent forward: for y = sin(x)·x, dy = cos(x)·x·dx + sin(x)·dx. By hand:

# %%
x = Tensor([0.5, 1.0, 2.0])
dx = Tensor([1.0, 0.0, 0.0])
by_hand = (x.cos() * x + x.sin()) * dx
value, tangent = func.jvp(lambda x: x.sin() * x, (x,), (dx,))
print("by hand:   ", by_hand.numpy())
print("func.jvp:  ", tangent.numpy())
claim("func.jvp gives the tangent by hand", np.allclose(by_hand.numpy(), tangent.numpy()))

# %% [markdown]
# `func.jvp` applied the MUL row (d(ab) = b·da + a·db) and the SIN row (d sin x = cos x·dx)
# to the traced graph. Here are the two rows' jvp rules, straight from the table:

# %%
import inspect

for op in (Op.MUL, Op.SIN):   # each primitive's row (tinylab/ir/primitives/) holds its rules
    print(op.name, inspect.getsource(op.jvp).strip())

# %% [markdown]
# ## vjp is the transpose of jvp
#
# For a linear map J (the Jacobian at x), jvp computes J·v and vjp computes uᵀ·J. So for any
# u and v, ⟨u, J v⟩ = ⟨Jᵀ u, v⟩: the two rules of a row are transposes of each other.

# %%
rng = np.random.default_rng(0)
a = Tensor(rng.standard_normal(4).astype(np.float32))
u = Tensor(rng.standard_normal(4).astype(np.float32))
v = Tensor(rng.standard_normal(4).astype(np.float32))


def g(x):
    return (x.exp() * x.flip(0)).cumsum(0)


_, jv = func.jvp(g, (a,), (v,))
_, vjp_fn = func.vjp(g, a)
(ju,) = vjp_fn(u)
print("<u, J v> =", round(float((u * jv).sum().item()), 4))
print("<J^T u, v> =", round(float((ju * v).sum().item()), 4))
claim("<u, J v> = <J^T u, v>", np.isclose((u * jv).sum().item(), (ju * v).sum().item(),
                                          rtol=1e-5))

# %% [markdown]
# ## vmap is a rewrite, not a loop
#
# `vmap(f)` calls f once on a placeholder of one example's shape, then rebuilds every node with a
# batch axis in front through the batching rules (an elementwise op lifts its unbatched
# operands; a reduce moves its axes up by one; a reshape keeps the batch axis). The result is one
# graph, so it fuses like a function you wrote over the batch by hand:

# %%
w = Tensor(rng.standard_normal((5, 3)).astype(np.float32))
batch = Tensor(rng.standard_normal((8, 5)).astype(np.float32)).realize()


def one(x):  # one example: (5,) -> ()
    return (x @ w).relu().sum()


def kernels(thunk):
    out = thunk()
    GlobalCounters.reset()
    out.realize()
    return GlobalCounters.kernel_count, out


mapped_count, mapped = kernels(lambda: func.vmap(one)(batch))
hand_count, hand = kernels(lambda: (batch @ w).relu().sum(-1))
print("vmap(one):", mapped_count, "kernels; by hand:", hand_count, "kernels; same values:",
      np.allclose(mapped.numpy(), hand.numpy()))
claim("vmap's graph fuses exactly as the hand-batched one, with the same values",
      mapped_count == hand_count and np.allclose(mapped.numpy(), hand.numpy()))

# %%
guess = ...  # how many kernels does vmap(one)(batch) run? (one example ran the same graph)
check("kernels of vmap(one)(batch)", guess, mapped_count,
      "the batched graph fuses exactly as the hand-batched one",
      hint="how many kernels does (x @ w).relu().sum() take for one example, and does a batch "
           "axis in front add a boundary?")

# %% [markdown]
# ## Per-example gradients of a small MLP
#
# `vmap(grad(loss), in_dims=(None, 0, 0))`: the parameters are shared (None), the examples are
# mapped. Against a Python loop over the examples: the same numbers, far fewer kernels.

# %%
params = [Tensor(rng.standard_normal((5, 16)).astype(np.float32) * 0.3),
          Tensor(np.zeros(16, np.float32)),
          Tensor(rng.standard_normal((16, 3)).astype(np.float32) * 0.3)]
for p in params:
    p.realize()
xs = Tensor(rng.standard_normal((32, 5)).astype(np.float32)).realize()
ys = Tensor(rng.standard_normal((32, 3)).astype(np.float32)).realize()


def loss(params, x, y):
    hidden = (x @ params[0] + params[1]).relu()
    return ((hidden @ params[2] - y) ** 2).mean()


def per_example_vmap():
    grads = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    Tensor.realize(*grads)
    return grads


def per_example_loop():
    grads = [func.grad(loss)(params, xs[i], ys[i]) for i in range(xs.shape[0])]
    stacked = [grads[0][k].stack(*[g[k] for g in grads[1:]]) for k in range(3)]
    Tensor.realize(*stacked)
    return stacked


GlobalCounters.reset()
mapped_grads = per_example_vmap()
vmap_kernels = GlobalCounters.kernel_count
GlobalCounters.reset()
loop_grads = per_example_loop()
loop_kernels = GlobalCounters.kernel_count
print("same numbers:", all(np.allclose(m.numpy(), l.numpy(), atol=1e-5)
                           for m, l in zip(mapped_grads, loop_grads)))
print("kernels: vmap(grad)", vmap_kernels, "· loop", loop_kernels)
claim("the same numbers, with fewer kernels than the loop", vmap_kernels < loop_kernels and all(
    np.allclose(m.numpy(), l.numpy(), atol=1e-5) for m, l in zip(mapped_grads, loop_grads)))

# %% [markdown]
# The inspector over a cell calling `vmap(grad(...))` (a one-layer loss, to keep the picture
# small): the per-example-gradient program is one graph and its kernels; kernels made of nodes a
# transform built are filled in its colour (the legend under the graph).

# %%
# %%tinygrad
def layer_loss(w, x):
    return (x @ w).tanh().sum()


func.vmap(func.grad(layer_loss), in_dims=(None, 0))(params[0], xs[:4].realize()).numpy()

# %% [markdown]
# And in time: both, from building the graph to the numbers, in 7 interleaved rounds (the loop
# builds 32 graphs, the vmap one), each the median with its quartiles:

# %% tags=["nbval-ignore-output"]
both = interleaved({"vmap(grad)": lambda: per_example_vmap() and None,
                    "loop": lambda: per_example_loop() and None}, rounds=7)
faster = both.speedup("loop", "vmap(grad)")
print("measured on", measured_on())
for name in ("vmap(grad)", "loop"):
    print(f"{name:<11} {both[name].text(1e3, ' ms', 1)}")
print(f"vmap(grad) is {faster.text(1.0, 'x', 1)} as fast as the loop: {verdict(faster)} 1")

# %% [markdown]
# ## A Hessian-vector product
#
# Forward over reverse: the jvp of the gradient along v is H·v, without building H. Here for
# f(x) = Σ x⁴, whose Hessian is diag(12 x²):

# %%
def f(x):
    return (x ** 4).sum()


point = Tensor([1.0, -2.0, 0.5])
direction = Tensor([1.0, 1.0, 2.0])
_, hvp = func.jvp(func.grad(f), (point,), (direction,))
print("H v        :", hvp.numpy())
print("12 x² ⊙ v  :", (12 * point.numpy() ** 2 * direction.numpy()))
print("hessian @ v:", (func.hessian(f)(point) @ direction).numpy())
claim("H v without H equals 12 x² v and the full Hessian times v",
      np.allclose(hvp.numpy(), 12 * point.numpy() ** 2 * direction.numpy())
      and np.allclose(hvp.numpy(), (func.hessian(f)(point) @ direction).numpy()))

# %% [markdown]
# ## Exercises: write a row of the table
#
# 1. The jvp rule of RECIPROCAL. It gets `node` (the IR node y = 1/x) and `tangents` (one per
#    source: `tangents[0]` is dx) and returns dy. The check puts your rule in the table and runs
#    the parity harness's jvp column against `torch.func.jvp`.

# %%
from transforms_exercises import check_batch_rule, check_jvp_rule, check_vjp_rule

my_jvp = ...  # e.g. lambda node, tangents: ...
passed = check_jvp_rule(my_jvp)

# %% [markdown]
# 2. The batching rule of FLIP. It gets `node` (the unbatched flip, `node.axes` its axes),
#    `sources` (the batched source, batch axis first), `batched` and `size`, and returns the
#    batched flip. The check runs the parity harness's vmap column against `torch.func.vmap`.

# %%
my_batch = ...  # e.g. lambda node, sources, batched, size: ...
passed = check_batch_rule(my_batch)

# %% [markdown]
# 3. The reverse rule of EXPAND, derived by transposing its jvp. EXPAND's jvp is
#    `t.expand(node.shape)` — a linear map E that copies each element of the source along the
#    broadcast axes. Its vjp is the transpose Eᵀ: the map with ⟨u, E v⟩ = ⟨Eᵀ u, v⟩ for every u
#    and v. Write it as a reverse rule: `rule(grad, node)` gets the cotangent `grad` (a node of
#    `node.shape`) and returns a tuple with the cotangent of `node.src[0]` (of its shape). Node
#    methods: `grad.sum(axes)` keeps the summed axes with size 1, `grad.reshape(shape)`,
#    `node.shape`, `node.src[0].shape`. The check puts your rule in autograd's reverse table
#    (which `backward`, `grad` and `vjp` read; the table's own rule is out of reach meanwhile, so
#    it must be derived, not looked up) and compares gradients through expands and broadcasts
#    with torch's.

# %%
my_vjp = ...  # e.g. lambda grad, node: (...,)
passed = check_vjp_rule(my_vjp)

# %% [markdown]
# **Next:** `10_your_pytorch_model` — a PyTorch model through `torch.compile(backend="tinylab")`,
# every layer of this course under it.
