"""Notebook 07's exercises, checked by the planner and by timing on this machine: a plan of your
own for the 128 x 128 product a @ b.T, within FACTOR of the heuristic's speed (both on one core,
timed in interleaved rounds by engine/timing.py, decided only where the spread allows), and the
heuristic's decisions under another CPU target (heuristic_facts). notebooks/solutions.py holds
the reference answers.
"""
from __future__ import annotations

import numpy as np
from exercises import UNANSWERED, passed

PLAN_SIZE = 128      # the exercise's product: PLAN_SIZE x PLAN_SIZE times its transpose
PLAN_ROUNDS = 15     # interleaved rounds of (the heuristic's plan, yours)
FACTOR = 0.8         # yours must run at >= 0.8x the heuristic's speed (its time / yours)


class MatmulKernel:
    """The kernel of a @ b.T (or a @ b), square float32, on the CPU with fresh buffers and
    numpy's answer; `launcher(plan)` compiles a plan of it; `single_core(plan)` drops a plan's
    THREAD actions (timings on one core do not depend on what else runs on the others)."""

    def __init__(self, size: int = PLAN_SIZE, seed: int = 0, transposed: bool = True):
        from tinylab import Device, Tensor, trace
        from tinylab.engine.realize import choose_plan
        from tinylab.ir.node import prod
        from tinylab.runtimes.buffer import Buffer
        rng = np.random.default_rng(seed)
        a, b = (Tensor(rng.standard_normal((size, size)).astype(np.float32)) for _ in "ab")
        with trace() as recorded:
            self.expected = (a @ (b.T if transposed else b)).numpy()
        self.kernel = recorded.kernels[0]
        item = recorded.realizes[0].schedule.items[self.kernel.schedule_index]
        self.device = Device["CPU"]
        self.buffers = [slot.existing if slot.existing is not None else
                        Buffer("CPU", prod(slot.shape), slot.dtype, self.device.allocator)
                        for slot in item.slots]
        self.plain = choose_plan("CPU", self.kernel.ast, noopt=True, beam=0)  # NOOPT
        self.heuristic = self.single_core(choose_plan("CPU", self.kernel.ast, noopt=False,
                                                      beam=0))

    def single_core(self, plan):
        return self.plain.apply_all([o for o in plan.opts if o.action.value != "THREAD"])

    def launcher(self, plan):
        """Compile `plan`; a function of no arguments that launches it once (seconds)."""
        from tinylab.codegen.linearize import linearize
        program = linearize(plan, plan.name)
        library, _ = self.device.runtime.compile(self.device.renderer.render(program))
        launch = self.device.runtime.load(library, program.name)
        handles = [buffer.handle for buffer in self.buffers]
        return lambda: launch(*handles, global_size=program.loops)

    def correct(self) -> bool:
        result = self.buffers[0].numpy().reshape(self.expected.shape)
        return bool(np.allclose(result, self.expected, atol=1e-3))


def against_heuristic(matmul: MatmulKernel, plan, rounds: int = PLAN_ROUNDS):
    """Round by round, the heuristic's time over `plan`'s (1.0: as fast; a Spread), timed in
    interleaved rounds, each the best of 3 launches."""
    from tinylab.engine.timing import interleaved
    comparison = interleaved({"heuristic": matmul.launcher(matmul.heuristic),
                              "yours": matmul.launcher(plan)}, rounds=rounds, best_of=3)
    return comparison.speedup("heuristic", "yours")


def check_plan(actions, factor: float = FACTOR, matmul: MatmulKernel | None = None) -> bool:
    """`actions` (Opt or (action, axis, amount) tuples), applied one by one to the plain plan of
    a @ b.T, must each fit the plan, compute the product (checked against numpy) and run at
    least `factor` times the heuristic's speed on one core: the lower quartile of the per-round
    ratio (heuristic's time / yours) must be above `factor` to pass, its upper quartile below it
    to fail; a spread across it is reported as undecided (run the cell again)."""
    from tinylab.codegen.plan import Opt, OptError
    from tinylab.engine.timing import verdict
    if actions is UNANSWERED:
        print("[ ] your plan: write your actions in the cell above (replace the ...), then run "
              "this cell again")
        return False
    if not actions:
        return passed("your plan", ["an empty list applies no action: that is NOOPT's plain "
                                    "plan"], "which action would you try first?")
    matmul = matmul or MatmulKernel()
    try:
        opts = [action if isinstance(action, Opt) else Opt(*action) for action in actions]
        if any(opt.action.value == "THREAD" for opt in opts):
            return passed("your plan", ["THREAD is left out here: on a shared machine a second "
                                        "core's speed depends on what else runs on it"],
                          "which actions make one core do the work faster?")
        mine = matmul.plain.apply_all(opts)
        matmul.launcher(mine)()
        if not matmul.correct():
            raise AssertionError(f"{mine.name} computed a wrong result")
    except (OptError, AssertionError, TypeError, ValueError) as error:
        return passed("your plan", [f"{type(error).__name__}: {error}"],
                      "what does print(plan.axes) show after each action, and which axis does "
                      "the next action refer to?")
    score = against_heuristic(matmul, mine)
    print(f"    {mine.name}: {score.text(1.0, 'x')} the heuristic's speed "
          f"({matmul.heuristic.name} on one core)")
    side = verdict(score, factor)
    if side == "within the spread":
        print(f"[?] your plan is at least {factor:g}x as fast as the heuristic's: this run cannot "
              "tell (the quartiles straddle it); run the cell again")
        return False
    return passed(f"your plan is at least {factor:g}x as fast as the heuristic's",
                  [] if side == "above" else [f"it runs at {score.median:.2f}x"],
                  "in a @ b.T, which axis is contiguous in both operands, so a vector load "
                  "reads consecutive floats of each, and how many independent accumulators "
                  "does your register tile keep for one pipeline's latency?")


def heuristic_facts(ast, target) -> dict:
    """What the heuristic (codegen/heuristic.py choose_opts) decides for the kernel `ast` under
    the CPU target `target`: the VECTORIZE width, the accumulator-register budget it plans
    within, and how many vector accumulators its register tile holds (the product of its UPCAST
    amounts). Computed by the planner itself, for `check_all` to compare predictions with."""
    from tinylab import Device
    from tinylab.codegen.heuristic import choose_opts
    from tinylab.codegen.heuristic_costs import accumulator_budget
    from tinylab.codegen.plan import KernelPlan
    opts = choose_opts(KernelPlan.from_ast(ast), Device["CPU"].renderer.supported_actions, target)
    lanes = [o.amount for o in opts if o.action.value == "VECTORIZE"]
    tile = int(np.prod([o.amount for o in opts if o.action.value == "UPCAST"]))
    return {"vector lanes": lanes[0] if lanes else 1,
            "accumulator registers": accumulator_budget(target),
            "vector accumulators in the tile": tile}
