# %% [markdown]
# # 01 · Tensors and autograd
#
# The `Tensor` API looks like PyTorch and tinygrad. Under it is a small, fixed set of primitive
# ops: every method is written with them, and autograd is one rule per primitive. This notebook
# shows the API, broadcasting, the primitive-op table, and backward as a table of rules.
#
# After it you can say which primitives a method lowers to, predict broadcast shapes and
# gradients, and build two things autograd checks: a sigmoid from primitives and a reverse rule
# attached with `tinylab.custom_backward` (checked against central differences).
#
# Kernel names, loop IR, masks and ranges are explained in the [reading guide](READING.md).

# %%
# %load_ext tinylab
import inspect

import numpy as np
from exercises import check, check_my_sigmoid, check_reverse_rule
from tinylab import Tensor, dtypes
from tinylab.frontend import autograd
from tinylab.ir import ops
from tinylab.ir.graph_printer import print_graph

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
print(total.numpy())

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

# %% [markdown]
# `exp` is `EXP2` of `x · log2(e)`; `relu` is a `WHERE` (with a `CMPNE x x` so NaN stays NaN);
# a matmul is a broadcast `MUL` and a `REDUCE_SUM` — there is no matmul op.
#
# ## Backward is one rule per primitive
#
# Each row of `autograd.RULES` takes the gradient flowing into a node and returns one gradient
# per source, with the math beside it. This is the table as it is in the source file:

# %%
source = inspect.getsource(autograd)
table = source[source.index("RULES = {"):source.index("}\n", source.index("RULES = {")) + 1]
print(table)

# %% [markdown]
# `gradients()` walks the graph from the loss backwards and applies the rules. Here is that walk
# written out in a few lines — it uses the same table, so it must agree with `.backward()`:

# %%
def my_gradients(loss: Tensor, targets: list[Tensor]) -> list[Tensor]:
    grads = {loss.node: autograd.ones_like(loss.node)}
    for node in reversed(loss.node.toposort()):          # users before their sources
        if node not in grads or node.op not in autograd.RULES:
            continue
        for src, grad in zip(node.src, autograd.RULES[node.op](grads[node], node)):
            if grad is not None and src.dtype.is_float:
                grads[src] = grads[src] + grad if src in grads else grad   # sum over uses
    return [Tensor(grads[t.node]) for t in targets]


p = Tensor([[0.5, -1.0, 2.0]], requires_grad=True)
q = Tensor([[1.5, 0.25, -0.5]], requires_grad=True)
loss = (p * q + p.exp()).sum()
mine = my_gradients(loss, [p, q])
loss.backward()
print("d loss/d p:", mine[0].numpy().round(4), "backward():", p.grad.numpy().round(4))
print("d loss/d q:", mine[1].numpy().round(4), "backward():", q.grad.numpy().round(4))
print("by hand: d/dp = q + exp(p) =", (q.numpy() + np.exp(p.numpy())).round(4),
      " d/dq = p =", p.numpy())

# %% [markdown]
# One exception to "one rule per primitive": a sliding window (`conv2d`, `avg_pool2d` with stride
# 1) is a chain of reshapes, expands and shrinks, and chaining their rules gives a correct but
# wasteful gradient — a sum over repeated copies with masks (6×6 masked taps for a 5×5 kernel).
# So `_pool` registers one rule for its whole chain with `autograd.composite(...)`: the transposed
# window, 5×5 taps, the shape PyTorch's convolution backward has. The walk above skips
# composites, so it computes the same numbers the long way:

# %%
x = Tensor(np.arange(36.0).reshape(1, 1, 6, 6), requires_grad=True)
w = Tensor(np.ones((1, 1, 3, 3)))
conv_loss = x.conv2d(w).sum()
long_way = my_gradients(conv_loss, [x])[0].numpy()
conv_loss.backward()
print("composites registered:", len(autograd.COMPOSITE) > 0,
      " same gradient:", np.allclose(long_way, x.grad.numpy()))
print(x.grad.numpy()[0, 0])  # how many 3x3 windows cover each pixel

# %% [markdown]
# The backward graph is as lazy as the forward one: `p.grad` is a graph until it is read.
# Printed, the rules are visible — `EXP2` times the `MUL` by `log2(e)` and `ln 2`:

# %%
fresh = Tensor([[0.5, -1.0, 2.0]], requires_grad=True)
fresh.exp().sum().backward()
print(print_graph(fresh.grad.node))

# %% [markdown]
# ## Exercises
#
# **1.** What shape is `Tensor.ones(2, 1, 3) * Tensor.ones(4, 1)`? (a tuple)

# %%
answer_shape = ...

# %%
check("broadcast shape", answer_shape, (Tensor.ones(2, 1, 3) * Tensor.ones(4, 1)).shape,
      "align from the right: (2,1,3) and (1,4,1) -> (2,4,3)")

# %% [markdown]
# **2.** For `loss = (w * w * w).sum()` with `w = 2.0`, what is `d loss / d w`?

# %%
answer_grad = ...

# %%
w = Tensor([2.0], requires_grad=True)
(w * w * w).sum().backward()
check("d(w³)/dw at 2", answer_grad, float(w.grad.numpy()[0]), "3·w² = 12; MUL's rule applied twice")

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
# `custom_backward(x / (1 + x.abs()), x, lambda grad: softsign_rule(grad, x, out))`, runs
# backward in float64 and compares with central differences of a numpy softsign.

# %%
def softsign_rule(grad: Tensor, x: Tensor, out: Tensor) -> Tensor:
    return grad   # replace: this is the identity's rule, not softsign's


# %%
rule_passes = check_reverse_rule(softsign_rule)

# %% [markdown]
# **Next:** `02_laziness_and_fusion` — when these graphs run, and how many kernels they become.
