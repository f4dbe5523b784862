"""Reference solutions of the notebooks' builder exercises, in one place: tests/notebooks/
test_exercises.py runs each checker of notebooks/exercises.py with the solution here (it must pass)
and with a trivial or wrong answer (it must fail). Read them after trying the exercise.
"""
from __future__ import annotations


def my_sigmoid(t):
    """01: sigmoid from primitives; autograd differentiates the chain with the primitives' rules."""
    return (1 + (-t).exp()).reciprocal()


def softsign_reverse_rule(grad, x, out):
    """01: d/dx x / (1 + |x|) = ((1 + |x|) - x sign(x)) / (1 + |x|)² = 1 / (1 + |x|)²."""
    return grad / ((1 + x.abs()) * (1 + x.abs()))


def div_rewrite(x, c):
    """03: x // c is the constant x.lo // c when every value of x lies in one multiple of c."""
    from tinylab.ir import symbolic as sym
    return sym.const(x.lo // c) if x.lo // c == x.hi // c else None


MAX_ROW = "({0} if ({0} > {1} or {0} != {0}) else {1})"   # 06: NaN in either input wins
WRONG_MAX_ROW = "max({0}, {1})"   # 06: Python's max drops a NaN in its second argument

# 07: actions for the 128 x 128 matmul's plain plan, as (action, axis, amount): a vector of
# 8 columns and a 4 x 2 register tile of independent accumulators (the heuristic's plan without
# its THREAD: two threads on a machine whose cores are busy run slower than one; measured 40x
# NOOPT for these three, 0.2x with the THREAD added, at load 6 on 2 cores)
PLAN_07 = [("VECTORIZE", 1, 8), ("UPCAST", 1, 2), ("UPCAST", 0, 4)]


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
