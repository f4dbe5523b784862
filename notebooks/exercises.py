"""Exercise checks for the tutorial notebooks: `check(question, answer, actual, why, hint)` compares
a reader's answer with the value the notebook just computed from the real implementation. A wrong
answer gets a hint (what to look at), never the answer: that comes from `show_answer(question)` or
after three wrong tries. Builder exercises (the reader writes code) are checked by the functions
below with the project's own machinery; notebooks/solutions.py holds their reference solutions.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict

import numpy as np

UNANSWERED = ...   # `guess = ...` in a notebook means "not answered yet"
TRIES = 3          # wrong tries before the answer is shown
GENERIC_HINT = "look again at the output of the cells above and the text that explains it"
_tries: dict[str, int] = {}
_answers: dict[str, tuple[object, str]] = {}


def check(question: str, answer, actual, why: str = "", hint: str = "") -> None:
    """Print whether `answer` equals `actual` (a value computed live from tinylab)."""
    verdict(question, answer, actual, why, hint)


def verdict(question: str, answer, actual, why: str = "", hint: str = "") -> bool:
    """`check`, returning True when the answer is right."""
    _answers[question] = (actual, why)
    if answer is UNANSWERED:
        print(f"[ ] {question}: write your answer in the cell above (replace the ...), "
              "then run this cell again")
        return False
    if _same(answer, actual):
        print(f"[x] {question}: {actual!r} is right" + (f" ({why})" if why else ""))
        return True
    _tries[question] = _tries.get(question, 0) + 1
    print(f"[!] {question}: you said {answer!r}, which is not what the implementation computes"
          f"\n    hint: {hint or GENERIC_HINT}")
    if _tries[question] >= TRIES:
        show_answer(question)
    else:
        print(f"    (try {_tries[question]} of {TRIES}; show_answer({question!r}) shows the answer)")
    return False


def show_answer(question: str) -> None:
    """The answer (and why) of a question checked in this session."""
    if question not in _answers:
        print(f"no question {question!r} has been checked yet: run its check cell first")
        return
    actual, why = _answers[question]
    print(f"    answer: {actual!r}" + (f"\n    why: {why}" if why else ""))


def check_all(answers: dict, actuals: dict, why: dict | None = None,
              hints: dict | None = None) -> None:
    """`check` for each key of `actuals`, then how many answers were right."""
    why, hints = why or {}, hints or {}
    right = sum(verdict(key, answers.get(key, UNANSWERED), value, why.get(key, ""),
                        hints.get(key, "")) for key, value in actuals.items())
    print(f"{right}/{len(actuals)} right")


def passed(question: str, failures: list[str], hint: str) -> bool:
    """A builder exercise's verdict: right when its checks found nothing wrong."""
    if not failures:
        print(f"[x] {question}: every check passes")
        return True
    _tries[question] = _tries.get(question, 0) + 1
    print(f"[!] {question}: " + "; ".join(failures) + f"\n    hint: {hint}")
    return False


def _same(answer, actual) -> bool:
    if isinstance(actual, float) and isinstance(answer, (int, float)):
        return abs(answer - actual) <= 1e-4 * max(1.0, abs(actual))
    if isinstance(actual, tuple) and isinstance(answer, list):
        return tuple(answer) == actual
    return answer == actual


# ---- builder exercises: the reader's code, checked by the project's machinery ----

def primitive_ops(tensor) -> list[str]:
    """The primitive ops in a tensor's lazy graph (what the kernels will compute)."""
    return sorted({node.op.name for node in tensor.node.toposort()} - {"BUFFER", "CONST"})


def check_my_sigmoid(fn) -> bool:
    """01: `fn` builds sigmoid from exp, +, - and reciprocal. Values and gradients must match
    Tensor.sigmoid, and the gradient must come from the primitives' own rules: Tensor.sigmoid
    registers a composite backward, so `return t.sigmoid()` does not count."""
    from tinylab import Tensor
    from tinylab.frontend import autograd
    data = np.linspace(-4, 4, 9, dtype=np.float32)
    mine_in, ref_in = Tensor(data, requires_grad=True), Tensor(data, requires_grad=True)
    out = fn(mine_in)
    if not isinstance(out, Tensor):
        print("[ ] my_sigmoid: return a Tensor built from t (replace the ...)")
        return False
    failures = []
    if out.node in autograd.COMPOSITE:
        failures.append("the graph ends in a registered composite (Tensor.sigmoid or another "
                        "method with its own backward), not in the primitives' rules")
    if "RECIPROCAL" not in primitive_ops(out) or "EXP2" not in primitive_ops(out):
        failures.append(f"the graph uses {primitive_ops(out)}: no EXP2 or no RECIPROCAL")
    reference = ref_in.sigmoid()
    out.sum().backward()
    reference.sum().backward()
    if not np.allclose(out.numpy(), reference.numpy(), atol=1e-6):
        failures.append("the values differ from Tensor.sigmoid")
    elif not np.allclose(mine_in.grad.numpy(), ref_in.grad.numpy(), atol=1e-6):
        failures.append("the gradients differ from Tensor.sigmoid")
    return passed("my_sigmoid", failures, "write it as (1 + (-t).exp()).reciprocal(), "
                  "with no activation method")


def central_differences(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d sum(f(x)) / dx, one coordinate at a time (float64)."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up).sum() - f(down).sum()) / (2 * eps)
    return grad


def check_reverse_rule(rule) -> bool:
    """01: `rule(grad, x, out)` is the backward of softsign(x) = x / (1 + |x|), attached to the
    forward chain with `tinylab.custom_backward`, as Tensor methods attach theirs. Checked in
    float64 against central differences of the numpy softsign, weighted by a random upstream
    gradient."""
    from tinylab import Tensor, custom_backward, dtypes
    rng = np.random.default_rng(0)
    data, weights = rng.standard_normal((3, 5)) * 2, rng.standard_normal((3, 5))
    x = Tensor(data, dtype=dtypes.float64, requires_grad=True)
    forward = x / (1 + x.abs())
    try:
        out = custom_backward(forward, x, lambda grad: rule(grad, x, forward))
        (out * Tensor(weights, dtype=dtypes.float64)).sum().backward()
        mine = x.grad.numpy()
    except Exception as error:   # a rule that does not build is a wrong rule
        return passed("softsign reverse rule", [f"{type(error).__name__}: {error}"],
                      "return a Tensor of x's shape, built from grad, x and out")
    numeric = central_differences(lambda a: weights * a / (1 + np.abs(a)), data)
    failures = [] if np.allclose(mine, numeric, rtol=1e-6, atol=1e-8) else \
        [f"largest gradient error {np.abs(mine - numeric).max():.3g} against central differences"]
    return passed("softsign reverse rule", failures,
                  "differentiate x / (1 + |x|) with the quotient rule; for x < 0 and x > 0 "
                  "it simplifies to one expression in |x|, then multiply by grad")


def check_div_rewrite(rewrite, cases: int = 400, seed: int = 0) -> bool:
    """03: `rewrite(x, c)` is a simplifier rule for the index expression `x // c` (x a
    tinylab.ir.symbolic.Lin over bounded variables): it returns a simpler Lin equal to `x // c`
    for every value the variables can take, or None where it does not apply. Fuzzed: random
    sums of variables with random bounds, each result compared with floor division over random
    assignments inside the bounds; the rule must also fire wherever x stays within one multiple
    of c (where `x // c` is a constant)."""
    from tinylab.ir import symbolic as sym
    rng = np.random.default_rng(seed)
    failures, should_fire, fired = [], 0, 0
    for case in range(cases):
        names = [f"v{case}_{k}" for k in range(int(rng.integers(1, 3)))]
        bounds = [sorted(int(b) for b in rng.integers(0, 40, 2)) for _ in names]
        x = sym.const(int(rng.integers(-8, 40)))
        for name, (lo, hi) in zip(names, bounds):
            x = x + sym.var(name, lo, hi) * int(rng.integers(1, 5))
        c = int(rng.integers(2, 12))
        constant = x.lo // c == x.hi // c
        should_fire += constant
        try:
            result = rewrite(x, c)
        except Exception as error:
            failures.append(f"rewrite({x}, {c}) raised {type(error).__name__}: {error}")
            break
        if result is None:
            if constant:
                failures.append(f"rewrite({x}, {c}) gave None, but {x} stays in "
                                f"[{x.lo}, {x.hi}]: one multiple of {c}")
                break
            continue
        fired += 1
        for _ in range(8):
            env = {n: int(rng.integers(lo, hi + 1))
                   for n, (lo, hi) in zip(names, bounds)}
            if sym.evaluate(sym.lin(result), env) != sym.evaluate(x, env) // c:
                failures.append(f"rewrite({x}, {c}) = {result}, which differs from floor "
                                f"division at {env}")
                break
        if failures:
            break
    print(f"    fuzzed {case + 1} expressions: the rule fired on {fired} "
          f"({should_fire} had a constant quotient)")
    return passed("x // c rewrite", failures, "x.lo and x.hi are the bounds of x; when they "
                  "fall within one multiple of c, what is x // c?")


def check_fusion_options(options, reason, build, reference, inputs, kernels: int) -> bool:
    """02: `options` (a SchedulerOptions) flips exactly one rule so that `build(*inputs)` (on
    Tensors) is scheduled into `kernels` kernels; `reason` is the Reason the scheduler records
    for the new boundaries; `reference(*inputs)` is numpy's answer. Checked on the schedule
    the scheduler makes with those options (its kernel count and its cut reasons), and by
    running that schedule's kernels (fresh buffers, inputs copied in) against numpy."""
    from tinylab import Tensor
    from tinylab.inspection.what_if_run import prepare_schedule, run_prepared
    from tinylab.schedule.fusion import Reason, SchedulerOptions
    from tinylab.schedule.schedule import schedule
    if not isinstance(options, SchedulerOptions) or not isinstance(reason, Reason):
        print("[ ] fusion rule: set my_options to a SchedulerOptions(...) and my_reason to a "
              "Reason (replace the ...)")
        return False
    default, chosen = asdict(SchedulerOptions()), asdict(options)
    flipped = [name for name in default if chosen[name] != default[name]]
    out = build(*[Tensor(value) for value in inputs])
    real, mine = schedule([out.node]), schedule([out.node], options)
    failures = []
    if len(flipped) != 1:
        failures.append(f"{len(flipped)} switches differ from the default ({flipped}): flip one")
    if len(mine.kernels) != kernels:
        failures.append(f"these options give {len(mine.kernels)} kernels, not {kernels}")
    new_cuts = Counter(d.reason for d in mine.decisions if not d.merged) - \
        Counter(d.reason for d in real.decisions if not d.merged)
    if set(new_cuts) != {reason}:
        failures.append(f"the new cuts' reasons are {sorted(r.value for r in new_cuts)}, "
                        f"not {[reason.value]}")
    items, buffers = prepare_schedule(mine, {})
    run_prepared(items, buffers)
    got = buffers[id(mine.outputs[out.node])].numpy().reshape(out.shape)
    expected = reference(*inputs)
    if not np.allclose(got, expected, rtol=1e-5, atol=1e-6):
        failures.append("the schedule's result differs from numpy's")
    return passed("fusion rule", failures, "each switch names a merge; off, that merge becomes "
                  "a cut. Which merge does this schedule make exactly once?")


def _lifetimes(steps: list[list]) -> tuple[dict, dict]:
    first, last = {}, {}
    for t, keys in enumerate(steps):
        for key in keys:
            first.setdefault(key, t)
            last[key] = t
    return first, last


def _random_program(rng) -> tuple[list[list], dict, set]:
    """Steps over buffers with random lifetimes and a few sizes; the first two are kept."""
    count = int(rng.integers(3, 12))
    sizes = [("CPU", int(rng.choice([64, 256, 1024]))) for _ in range(count)]
    spans = [sorted(int(t) for t in rng.integers(0, 10, 2)) for _ in range(count)]
    steps = [[k for k, (lo, hi) in enumerate(spans) if lo <= t <= hi] for t in range(10)]
    return steps, dict(enumerate(sizes)), {0, 1}


def plan_problems(plan, steps: list[list], size_of: dict, keep: set) -> list[str]:
    """What is wrong with `plan` (key -> the key whose allocation it uses), if anything."""
    first, last = _lifetimes(steps)
    unknown = sorted(str(key) for pair in plan.items() for key in pair if key not in size_of)
    if unknown:
        return [f"the plan names buffers that do not exist: {', '.join(unknown)}"]
    problems = []
    for key, home in plan.items():
        if key in keep or home in keep:
            problems.append(f"buffer {key} shares with {home}, but kept buffers own their memory")
        elif plan.get(home, home) != home:
            problems.append(f"buffer {key} points at {home}, which itself points elsewhere")
        elif size_of[key] != size_of[home]:
            problems.append(f"buffer {key} {size_of[key]} is put in {home}'s {size_of[home]}")
    users: dict = {}
    for key in first:
        users.setdefault(plan.get(key, key), []).append(key)
    for home, keys in users.items():
        keys.sort(key=lambda k: first[k])
        for before, after in zip(keys, keys[1:]):
            if first[after] <= last[before]:
                problems.append(f"buffers {before} (steps {first[before]}-{last[before]}) and "
                                f"{after} (steps {first[after]}-{last[after]}) share {home} "
                                "while both are live")
    return problems


def allocated_bytes(plan, size_of: dict) -> int:
    """Bytes allocated under `plan`: one allocation per key that uses no other key's memory."""
    return sum(size_of[key][1] for key in size_of if plan.get(key, key) == key)


def check_memory_policy(policy, programs: int = 200, seed: int = 0) -> bool:
    """02: `policy(steps, size_of, keep)` -> {key: key whose allocation it reuses} (share_by_
    lifetime's first result). Checked on random programs: kept buffers keep their memory,
    sharers have the same (device, nbytes), no two sharers are live at one step, and the plan
    allocates no more bytes than the project's planner (schedule/memory.py)."""
    from tinylab.schedule.memory import share_by_lifetime
    rng = np.random.default_rng(seed)
    failures = []
    for _ in range(programs):
        steps, size_of, keep = _random_program(rng)
        try:
            plan = dict(policy(steps, size_of, keep))
        except Exception as error:
            failures = [f"policy raised {type(error).__name__}: {error}"]
            break
        failures = plan_problems(plan, steps, size_of, keep)[:2]
        planner = allocated_bytes(share_by_lifetime(steps, size_of, keep)[0], size_of)
        if not failures and allocated_bytes(plan, size_of) > planner:
            failures = [f"your plan allocates {allocated_bytes(plan, size_of)} bytes for "
                        f"{len(size_of)} buffers over {len(steps)} steps where the planner "
                        f"needs {planner}"]
        if failures:
            break
    return passed("memory policy", failures, "walk the buffers in order of first use; one whose "
                  "last use came before that first use hands its allocation on")


GROUP = 64                      # threads per workgroup the reduction checker launches
SIZES = (1, 63, 64, 1000, 4099)  # several groups, and n not a multiple of GROUP


def check_block_sum(source: str) -> bool:
    """04: `source` is OpenCL C for `block_sum(__global const float *x, __global float *partial,
    int n)`: launched with workgroups of GROUP threads over ceil(n / GROUP) groups, each group
    writes the sum of its GROUP inputs (zero past n) to partial[get_group_id(0)], the threads
    adding in local memory with a barrier. Built and run by pyopencl on the project's OpenCL
    device (PoCL on a CPU), compared with numpy for several n."""
    from tinylab import Device
    if source is UNANSWERED:
        print("[ ] block sum: write the kernel source in the cell above (replace the ...)")
        return False
    failures = [f"the source never uses {word}" for word in ("get_local_id", "__local",
                                                             "barrier") if word not in source]
    if failures:
        return passed("block sum", failures, "each thread loads one value into a __local "
                      "array; barrier(CLK_LOCAL_MEM_FENCE) before any thread reads another's")
    cl, _, context, queue = Device["CL"].runtime.open()   # pyopencl, device, context, queue
    try:
        kernel = cl.Program(context, source).build().block_sum
    except cl.Error as error:
        return passed("block sum", [f"the build failed: {str(error)[-600:]}"],
                      "the build log above names the line")
    rng = np.random.default_rng(0)
    for n in SIZES:
        x = rng.standard_normal(n).astype(np.float32)
        groups = -(-n // GROUP)
        padded = np.zeros(groups * GROUP, np.float32)
        padded[:n] = x
        expected = padded.reshape(groups, GROUP).sum(axis=1)
        flags = cl.mem_flags
        x_buffer = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=x)
        partial = np.full(groups, np.nan, np.float32)
        out_buffer = cl.Buffer(context, flags.WRITE_ONLY, partial.nbytes)
        kernel(queue, (groups * GROUP,), (GROUP,), x_buffer, out_buffer, np.int32(n))
        cl.enqueue_copy(queue, partial, out_buffer)
        queue.finish()
        if not np.allclose(partial, expected, rtol=1e-5, atol=1e-5):
            wrong = int(np.argmax(~np.isclose(partial, expected, rtol=1e-5, atol=1e-5)))
            failures.append(f"n={n}: group {wrong} wrote {partial[wrong]:.5g}, numpy's sum of "
                            f"its {GROUP} values is {expected[wrong]:.5g}")
            break
    return passed("block sum", failures, "index with get_global_id(0), load 0 past n, halve "
                  "the number of adding threads each round with a barrier between rounds")


PLAN_SIZE = 128       # the 07 exercise's matmul: PLAN_SIZE x PLAN_SIZE times PLAN_SIZE x PLAN_SIZE
PLAN_ROUNDS = 21      # interleaved rounds of (NOOPT, yours); the median of their ratios counts


class MatmulKernel:
    """07: the kernel of a @ b (square, float32) on the CPU, with fresh buffers and numpy's
    answer; `run(plan, repeats)` compiles a plan of it, checks the result and gives the best of
    `repeats` launches in seconds."""

    def __init__(self, size: int = PLAN_SIZE, seed: int = 0):
        from tinylab import Device, Tensor, trace
        from tinylab.engine.realize import choose_plan
        from tinylab.ir.node import prod
        from tinylab.runtimes.buffer import Buffer
        rng = np.random.default_rng(seed)
        a, b = (Tensor(rng.standard_normal((size, size)).astype(np.float32)) for _ in "ab")
        with trace() as recorded:
            self.expected = (a @ b).numpy()
        self.kernel = recorded.kernels[0]
        item = recorded.realizes[0].schedule.items[self.kernel.schedule_index]
        self.device = Device["CPU"]
        self.buffers = [slot.existing if slot.existing is not None else
                        Buffer("CPU", prod(slot.shape), slot.dtype, self.device.allocator)
                        for slot in item.slots]
        self.plain = choose_plan("CPU", self.kernel.ast, noopt=True, beam=0)  # NOOPT
        self.heuristic = choose_plan("CPU", self.kernel.ast, noopt=False, beam=0)

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

    def run(self, plan, repeats: int = 5) -> float:
        launch = self.launcher(plan)
        seconds = min(launch() for _ in range(repeats))
        assert self.correct(), f"{plan.name} computed a wrong result"
        return seconds


def speedup_over_noopt(matmul: MatmulKernel, plan, rounds: int = PLAN_ROUNDS) -> float:
    """How many times faster `plan` runs than NOOPT, measured in this run: `rounds` rounds, each
    timing NOOPT then `plan` (best of 3 launches each), back to back so that a load on the machine
    slows both; the median of the rounds' ratios (one disturbed round cannot decide it)."""
    plain, mine = matmul.launcher(matmul.plain), matmul.launcher(plan)
    plain(), mine()   # first touch
    ratios = []
    for _ in range(rounds):
        plain_s = min(plain() for _ in range(3))
        mine_s = min(mine() for _ in range(3))
        ratios.append(plain_s / mine_s)
    return float(np.median(ratios))


def heuristic_facts(ast, target) -> dict:
    """07: what the heuristic (codegen/heuristic.py choose_opts) decides for the kernel `ast`
    under the CPU target `target`: the VECTORIZE width, the accumulator-register budget it plans
    within, and how many vector accumulators its register tile holds (the product of its UPCAST
    amounts). Computed by the planner itself, for `check_all` to compare predictions with."""
    from tinylab import Device
    from tinylab.codegen.heuristic import accumulator_budget, choose_opts
    from tinylab.codegen.plan import KernelPlan
    opts = choose_opts(KernelPlan.from_ast(ast), Device["CPU"].renderer.supported_actions, target)
    lanes = [o.amount for o in opts if o.action.value == "VECTORIZE"]
    tile = int(np.prod([o.amount for o in opts if o.action.value == "UPCAST"]))
    return {"vector lanes": lanes[0] if lanes else 1,
            "accumulator registers": accumulator_budget(target),
            "vector accumulators in the tile": tile}


def check_plan(actions, factor: float = 2.0, matmul: MatmulKernel | None = None) -> bool:
    """07: `actions` (Opt or (action, axis, amount) tuples), applied one by one to the plain
    (NOOPT) plan of the 128 x 128 matmul, must each fit the plan, compute a @ b (checked against
    numpy) and make it at least `factor` times faster than NOOPT, timed against NOOPT in the same
    run (speedup_over_noopt). An empty list is NOOPT itself."""
    from tinylab.codegen.plan import Opt, OptError
    if actions is UNANSWERED:
        print("[ ] your plan: write your actions in the cell above (replace the ...), then run "
              "this cell again")
        return False
    if not actions:
        return passed("your plan", ["an empty list applies no action: that is NOOPT's plain "
                                    "plan"], "pick at least one action")
    matmul = matmul or MatmulKernel()
    mine = matmul.plain
    try:
        for action in actions:
            mine = mine.apply(action if isinstance(action, Opt) else Opt(*action))
        matmul.run(mine, repeats=1)
    except (OptError, AssertionError, TypeError) as error:
        return passed("your plan", [f"{type(error).__name__}: {error}"],
                      "print(plan.axes) after each action shows the axis numbers the next "
                      "one refers to")
    print(f"    {mine.name}: {mine.describe()}")
    speedup = speedup_over_noopt(matmul, mine)
    print(f"    {speedup:.1f}x as fast as NOOPT (median of {PLAN_ROUNDS} interleaved rounds)")
    return passed(f"your plan is at least {factor:g}x faster than NOOPT",
                  [] if speedup >= factor else [f"it is {speedup:.2f}x"],
                  "vector lanes (VECTORIZE) and independent accumulators (UPCAST of an output "
                  "axis) are where the heuristic's speed comes from; threads only pay on idle "
                  "cores")
