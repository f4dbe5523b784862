"""Reference solutions of the notebooks' builder exercises and predictions, in one place:
tests/notebooks/test_exercises.py (and test_transforms_exercises.py) run each checker of the
notebooks/*_exercises.py modules with the solution here (it must pass) and with a plausible
wrong answer (it must fail, with a hint that asks a question). Read them after trying.
"""
from __future__ import annotations


def my_sigmoid(t):
    """01: sigmoid from primitives; autograd differentiates the chain with the primitives' rules."""
    return (1 + (-t).exp()).reciprocal()


def softsign_reverse_rule(grad, x, out):
    """01: d/dx x / (1 + |x|) = ((1 + |x|) - x sign(x)) / (1 + |x|)² = 1 / (1 + |x|)²."""
    return grad / ((1 + x.abs()) * (1 + x.abs()))


def topological_order(root) -> list:
    """01: every node of root's graph once, each after its sources (depth first, post-order)."""
    order, placed = [], set()

    def visit(node):
        if node in placed:
            return
        placed.add(node)
        for source in node.src:
            visit(source)
        order.append(node)
    visit(root)
    return order


def backward_walk(loss, targets) -> list:
    """01: walk the order backwards, users before their sources; each rule of autograd.RULES
    gives one gradient per source, and a source reached twice gets the sum of both."""
    from tinylab import Tensor
    from tinylab.frontend import autograd
    grads = {loss.node: autograd.ones_like(loss.node)}
    for node in reversed(topological_order(loss.node)):
        if node not in grads or node.op not in autograd.RULES:
            continue
        for source, grad in zip(node.src, autograd.RULES[node.op](grads[node], node)):
            if grad is not None and source.dtype.is_float:
                grads[source] = grads[source] + grad if source in grads else grad
    return [Tensor(grads[t.node]) for t in targets]


def div_rewrite(x, c):
    """03: x // c is the constant x.lo // c when every value of x lies in one multiple of c."""
    from tinylab.ir import symbolic as sym
    return sym.const(x.lo // c) if x.lo // c == x.hi // c else None


MAX_ROW = "({0} if ({0} > {1} or {0} != {0}) else {1})"   # 06: NaN in either input wins
WRONG_MAX_ROW = "max({0}, {1})"   # 06: Python's max drops a NaN in its second argument

# 07: actions for the plain plan of the 128 x 128 a @ b.T under the AVX2 target, as (action,
# axis, amount): 8 lanes along the reduce axis (contiguous in both a and b.T's rows) and a 2 x 4
# register tile of independent accumulators, the heuristic's plan on one core. 07's a @ b plan
# (lanes along the output columns, strided in b.T) measured 0.66x the heuristic's speed,
# vectorizing alone 0.5x (AMD EPYC Zen 3, 2 cores, load 7; median of 15 interleaved rounds)
PLAN_07 = [("VECTORIZE", 2, 8), ("UPCAST", 1, 4), ("UPCAST", 0, 2)]


# 07: the heuristic on the NEON preset for the 128 x 128 matmul: a 128-bit register holds 4
# float32 lanes; 3/4 of NEON's 32 vector registers (24) may hold accumulators; the tile is the
# largest product of power-of-two UPCASTs within that budget, 8 x 2 = 16 (AVX2: 12 -> 2 x 4 = 8)
TARGET_07 = {"vector lanes": 4, "accumulator registers": 24, "vector accumulators in the tile": 16}


def memory_policy(steps, size_of, keep):
    """02: greedy in order of first use: a buffer takes any allocation of its exact size whose
    last user finished before it starts. For intervals this is optimal (interval colouring)."""
    first, last = {}, {}
    for t, keys in enumerate(steps):
        for key in keys:
            first.setdefault(key, t)
            last[key] = t
    homes: dict = {}     # allocation (its first owner) -> step of its current occupant's last use
    plan = {}
    for key in sorted((k for k in first if k not in keep), key=lambda k: first[k]):
        free = [home for home, busy_until in homes.items()
                if busy_until < first[key] and size_of[home] == size_of[key]]
        home = free[0] if free else key
        if home != key:
            plan[key] = home
        homes[home] = last[key]
    return plan


# 04: one workgroup adds its GROUP values in local memory: each round, the lower half of the
# threads adds the upper half's values, with a barrier between rounds
BLOCK_SUM = """
__kernel void block_sum(__global const float *x, __global float *partial, const int n) {
  __local float shared[64];
  int local_id = get_local_id(0), global_id = get_global_id(0);
  shared[local_id] = global_id < n ? x[global_id] : 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int stride = get_local_size(0) / 2; stride > 0; stride /= 2) {
    if (local_id < stride) shared[local_id] += shared[local_id + stride];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (local_id == 0) partial[get_group_id(0)] = shared[0];
}
"""


def cut_rule(reduce, views):
    """02: a reduce read back across its own axes (an EXPAND on the way) must be finished before
    any of its readers runs; one read through a view that reorders, pads or cuts it cannot be
    computed in the same loop nest either; a plain reshape of it can."""
    from tinylab.ir.ops import Op
    from tinylab.schedule.fusion import Reason
    kinds = {view.op for view in views}
    if Op.EXPAND in kinds:
        return Reason.BROADCAST_REDUCE
    if kinds - {Op.RESHAPE}:
        return Reason.VIEW_OF_REDUCE
    return None


def fusion_answer():
    """02: layernorm in 4 kernels: with fuse_into_reduce off, the centred y = x - mean is no longer
    computed inside the variance's sum; it gets a buffer, cut with reason RULE_OFF."""
    from tinylab.schedule.fusion import Reason, SchedulerOptions
    return SchedulerOptions(fuse_into_reduce=False), Reason.RULE_OFF


def sinc_row(x):
    """10: aten.sinc: sin(πx)/(πx), and 1 at x = 0 (where the ratio is 0/0)."""
    import math
    zero = x == 0
    scaled = zero.where(1.0, x) * math.pi
    return zero.where(1.0, scaled.sin() / scaled)


def wrong_sinc_row(x):
    """10, wrong on purpose: NaN at x = 0."""
    import math
    return (x * math.pi).sin() / (x * math.pi)


class CGaps:
    """06: the four gaps of backend_exercises.ScalarCRenderer (mixed in before it)."""

    def open_loop(self, variable, size):
        return f"for (int {variable} = 0; {variable} < {size}; {variable}++) {{"

    def load(self, name, type_name, buffer, index, valid, zero):
        value = f"data{buffer}[{index}]"
        return f"{type_name} {name} = {value if valid is None else f'(({valid}) ? {value} : {zero})'};"

    def accumulator(self, name, type_name, init):
        return f"{type_name} {name} = {init};"

    def accumulate(self, acc, value, op, dtype):
        return f"{acc} = {self.alu(op, [acc, value], dtype, dtype)};"


def reciprocal_jvp(node, tangents):
    """09: y = 1/x, dy = -dx / x² = -dx · y²."""
    return -tangents[0] * node * node


def flip_batch(node, sources, batched, size):
    """09: the batched source has the batch axis in front: each flipped axis k is its axis k+1."""
    return sources[0].flip(tuple(axis + 1 for axis in node.axes))


def expand_vjp(grad, node):
    """09: EXPAND's jvp copies v along the broadcast axes (E v); its transpose sums u over them:
    <u, E v> = sum over every copy of u·v = <sum of u over the copies, v>. Node sums keep the
    summed axes (size 1), the source's shape."""
    axes = tuple(i for i, (s, n) in enumerate(zip(node.src[0].shape, node.shape)) if s != n)
    return (grad.sum(axes),)
