# %% [markdown]
# # 01 · Tensors and autograd
#
# The `Tensor` API looks like PyTorch and tinygrad. Under it is a small, fixed set of primitive
# ops: every method is written with them, and autograd is one rule per primitive. This notebook
# shows the API, broadcasting, the primitive-op table, and backward as a table of rules.
#
# After it you can say which primitives a method lowers to, predict broadcast shapes and
# gradients, and build three things autograd checks: a sigmoid from primitives, a reverse rule
# attached with `tinylab.custom_backward` (against central differences), and the backward walk
# itself — micrograd's heart: a topological order and gradients that add up where a value is used
# twice (against `.backward()` on a graph with a diamond).
#
# Kernel names, loop IR, masks and ranges are explained in the [reading guide](READING.md).

# %%
# %load_ext tinylab
import inspect

import numpy as np
from autograd_exercises import check_backward_walk, check_my_sigmoid, check_reverse_rule
from exercises import check, claim
from tinylab import Tensor, config, dtypes
from tinylab.frontend import autograd
from tinylab.ir import ops
from tinylab.ir.graph_printer import print_graph

config.CALIBRATE.set_default(0)   # the plans here are the model's, the same on every machine (07 shows yours)

# %% [markdown]
# ## The API you already know

# %%
x = Tensor.eye(3, requires_grad=True)
y = Tensor([[2.0, 0, -2.0]], requires_grad=True)
y.matmul(x).sum().backward()
print("x.grad =", x.grad.tolist())
print("y.grad =", y.grad.tolist())

# %%
print(Tensor.arange(6).reshape(2, 3).numpy())
print(Tensor([1, 2]).dtype, Tensor([1.5]).dtype, Tensor([1, 2], dtype=dtypes.float16).dtype)
Tensor.manual_seed(0)
print(Tensor.rand(2, 3).numpy().round(3))   # seeded: the same numbers on every run

# %% [markdown]
# ## Broadcasting is a view, not a copy
#
# Shapes line up from the right; size-1 axes stretch. In the graph the stretching is an
# `EXPAND` (and a `RESHAPE` to add the missing leading axis) — movement ops that only change how
# a buffer is indexed. No 3 × 4 copy of either input is ever made.

# %%
column = Tensor([[1.0], [2.0], [3.0]])          # shape (3, 1)
row = Tensor([10.0, 20.0, 30.0, 40.0])          # shape (4,)
total = column + row
print(total.shape)
print(print_graph(total.node))
sizes = [n.shape for n in total.node.toposort() if n.op is ops.Op.BUFFER]
print(total.numpy())
claim("the only buffers are the two inputs, (3, 1) and (4,): no 3 x 4 copy", sizes,
      [(3, 1), (4,)])

# %% [markdown]
# ## The primitive ops
#
# Every `Tensor` method lowers at once to these. The table is `tinylab/ir/ops.py`:

# %%
groups = [("unary", ops.UNARY), ("binary", ops.BINARY), ("ternary", ops.TERNARY),
          ("reduce", ops.REDUCE), ("movement", ops.MOVEMENT), ("buffer", ops.BUFFER_OPS)]
for title, members in groups:
    names = [op.name for op in ops.Op if op in members]   # in declaration order
    print(f"{title:<9} {len(names):2d}  {' '.join(names)}")

# %% [markdown]
# Which primitives does a method use? Walk its graph:

# %%
def primitives(tensor: Tensor) -> str:
    used = {node.op for node in tensor.node.toposort()} - {ops.Op.BUFFER, ops.Op.CONST}
    return " ".join(op.name for op in ops.Op if op in used)


m = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
examples = {"m.exp()": m.exp(), "m.relu()": m.relu(), "m.sigmoid()": m.sigmoid(),
            "m.mean()": m.mean(), "m @ m.T": m @ m.T, "m.softmax(1)": m.softmax(1)}
for text, tensor in examples.items():
    print(f"{text:<13} {primitives(tensor)}")
claim("exp is EXP2 of a product (by log2 e)", primitives(m.exp()), "EXP2 MUL")
claim("relu is a WHERE with a CMPNE", {"WHERE", "CMPNE"} <= set(primitives(m.relu()).split()))
claim("a matmul is a MUL and a REDUCE_SUM, no matmul op",
      {"MUL", "REDUCE_SUM"} <= set(primitives(m @ m.T).split())
      and all("MATMUL" not in op.name for op in ops.Op))

# %% [markdown]
# `exp` is `EXP2` of `x · log2(e)`; `relu` is a `WHERE` (with a `CMPNE x x` so NaN stays NaN);
# a matmul is a broadcast `MUL` and a `REDUCE_SUM` — there is no matmul op.
#
# ## Backward is one rule per primitive
#
# Each primitive's row (in `tinylab/ir/primitives/`) holds its reverse rule: it takes the
# gradient flowing into a node and returns one gradient per source, with the math beside it.
# `autograd.RULES[op]` reads it. Here is each rule as it is in the source files:

# %%
for op in autograd.RULES:
    first_line = inspect.getsource(op.reverse).strip().splitlines()[0]
    print(f"{op.name:<11} {first_line}")

# %% [markdown]
# `autograd.gradients()` walks the graph from the loss backwards and applies the rules: it
# visits every node after all the nodes that use it (a reversed topological order), so a node's
# gradient is complete before its rule hands gradients on to its sources, and a source reached
# from two users gets the sum of both. Exercise 5 asks you to write that walk; here is the
# library's, against `.backward()` and the derivative by hand:

# %%
p = Tensor([[0.5, -1.0, 2.0]], requires_grad=True)
q = Tensor([[1.5, 0.25, -0.5]], requires_grad=True)
loss = (p * q + p.exp()).sum()
walked = autograd.gradients(loss.node, autograd.ones_like(loss.node), [p.node, q.node])
loss.backward()
by_hand = q.numpy() + np.exp(p.numpy())
print("d loss/d p:", Tensor(walked[p.node]).numpy().round(4), "backward():", p.grad.numpy().round(4))
print("d loss/d q:", Tensor(walked[q.node]).numpy().round(4), "backward():", q.grad.numpy().round(4))
print("by hand: d/dp = q + exp(p) =", by_hand.round(4), " d/dq = p =", p.numpy())
claim("the walk, backward() and the derivative by hand agree",
      np.allclose(p.grad.numpy(), by_hand) and np.allclose(q.grad.numpy(), p.numpy())
      and np.allclose(Tensor(walked[p.node]).numpy(), by_hand))

# %% [markdown]
# One exception to "one rule per primitive": a sliding window (`conv2d`, `avg_pool2d` with stride
# 1) is a chain of reshapes, expands and shrinks, and chaining their rules gives a correct but
# wasteful gradient, a sum over repeated copies with masks. So `_pool` registers one rule for its
# whole chain with `autograd.composite(...)`: the transposed window, the shape PyTorch's
# convolution backward has. With the registration taken away for a moment, the same walk takes
# the long way through the chain's own rules, and gets the same numbers:

# %%
x = Tensor(np.arange(36.0).reshape(1, 1, 6, 6), requires_grad=True)
w = Tensor(np.ones((1, 1, 3, 3)))
conv_loss = x.conv2d(w).sum()
registered = dict(autograd.COMPOSITE)
autograd.COMPOSITE.clear()                      # the chain's primitives' rules only
long_way = Tensor(autograd.gradients(conv_loss.node, autograd.ones_like(conv_loss.node),
                                     [x.node])[x.node]).numpy()
autograd.COMPOSITE.update(registered)
conv_loss.backward()
print("composites registered:", len(registered) > 0,
      " same gradient:", np.allclose(long_way, x.grad.numpy()))
print(x.grad.numpy()[0, 0])  # how many 3x3 windows cover each pixel
covering = np.array([min(i, 2, 5 - i) + 1 for i in range(6)])
claim("the gradient counts the 3x3 windows that cover each pixel",
      np.array_equal(x.grad.numpy()[0, 0], np.outer(covering, covering)))
claim("the long way and the composite rule give the same gradient",
      np.allclose(long_way, x.grad.numpy()))

# %% [markdown]
# The backward graph is as lazy as the forward one: `p.grad` is a graph until it is read.
# Printed, the rules are visible — `EXP2` times the `MUL` by `log2(e)` and `ln 2`:

# %%
fresh = Tensor([[0.5, -1.0, 2.0]], requires_grad=True)
fresh.exp().sum().backward()
print(print_graph(fresh.grad.node))
consts = sorted(n.arg for n in fresh.grad.node.toposort() if n.op is ops.Op.CONST)
claim("the constants are ln 2 and log2(e)", np.allclose(consts, [np.log(2), 1 / np.log(2)]))

# %% [markdown]
# ## Exercises
#
# **1.** What shape is `Tensor.ones(2, 1, 3) * Tensor.ones(4, 1)`? (a tuple)

# %%
answer_shape = ...

# %%
check("broadcast shape", answer_shape, (Tensor.ones(2, 1, 3) * Tensor.ones(4, 1)).shape,
      "align from the right: (2,1,3) and (1,4,1) -> (2,4,3)",
      hint="write the shorter shape under the longer one, right-aligned: which axes are 1 in "
           "one of them?")

# %% [markdown]
# **2.** For `loss = (w * w * w).sum()` with `w = 2.0`, what is `d loss / d w`?

# %%
answer_grad = ...

# %%
w = Tensor([2.0], requires_grad=True)
(w * w * w).sum().backward()
check("d(w³)/dw at 2", answer_grad, float(w.grad.numpy()[0]), "3·w² = 12; MUL's rule applied twice",
      hint="w * w * w is two MULs: what does MUL's rule give for each, and how do the "
           "gradients of w's three uses combine?")

# %% [markdown]
# **3.** Write `sigmoid(t) = 1 / (1 + exp(-t))` yourself from `exp`, `+`, `-` and
# `.reciprocal()`. The check compares your values and gradients with `Tensor.sigmoid`, and reads
# your graph: it must be made of primitives whose gradients come from the rule table above
# (`Tensor.sigmoid` registers its own backward, so `return t.sigmoid()` does not pass).

# %%
def my_sigmoid(t: Tensor) -> Tensor:
    return ...   # your code here


# %%
if check_my_sigmoid(my_sigmoid):
    print("yours uses:          ", primitives(my_sigmoid(Tensor([0.0]))))
    print("Tensor.sigmoid uses: ", primitives(Tensor([0.0]).sigmoid()))

# %% [markdown]
# **4. Build a reverse rule.** `softsign(x) = x / (1 + |x|)` is a chain of primitives, and
# autograd could differentiate it rule by rule. You may instead attach one rule for the whole
# chain with `tinylab.custom_backward(out, sources, rule)` (PyTorch's analogue is a
# `torch.autograd.Function`'s `backward`), the way `sigmoid` attaches its own. Write that rule:
# given the upstream gradient `grad`, the input `x` and the output `out` (Tensors), return the
# gradient with respect to `x`. The check attaches it with
# `custom_backward(x / (1 + x.abs()), x, lambda grad, out, x: softsign_rule(grad, x, out))`
# (the rule takes the tensors it reads as arguments: one held in its closure would stay alive
# as long as the graph), runs backward in float64 and compares with central differences of a
# numpy softsign.

# %%
def softsign_rule(grad: Tensor, x: Tensor, out: Tensor) -> Tensor:
    return grad   # replace: this is the identity's rule, not softsign's


# %%
rule_passes = check_reverse_rule(softsign_rule)

# %% [markdown]
# **5. Build the backward walk.** Write the two halves of `autograd.gradients`:
#
# - `my_order(root)`: every node of `root`'s graph (follow `node.src`), each once and after all
#   of its sources — a topological order;
# - `my_gradients(loss, targets)`: start from `{loss.node: autograd.ones_like(loss.node)}`, walk
#   your order backwards and apply `autograd.RULES[node.op](grad, node)`, which returns one
#   gradient per source (`None` where none flows; skip sources that are not float); return one
#   `Tensor(...)` per target.
#
# The check runs them on a graph with a diamond — `a = x * y` feeds both `a.exp()` and `a * x`,
# so two gradients reach `a`, and two reach `x` — and compares with `.backward()` and central
# differences. `.backward()`, `autograd.gradients` and `Node.toposort` refuse to run while it
# checks: the walk must be yours.

# %%
def my_order(root) -> list:
    return ...   # every node once, each after its sources


def my_gradients(loss: Tensor, targets: list[Tensor]) -> list[Tensor]:
    return ...   # walk my_order(loss.node) backwards with autograd.RULES


# %%
walk_passes = check_backward_walk(my_order, my_gradients)

# %% [markdown]
# **Next:** `02_laziness_and_fusion` — when these graphs run, and how many kernels they become.
