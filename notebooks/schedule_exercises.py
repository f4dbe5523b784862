"""Notebook 02's builder exercises, checked by the scheduler and the memory planner: a fusion
switch (the kernel count and cut reasons of the schedule it makes, its kernels run against numpy),
a memory-sharing policy (the planner's rules on random programs) and a cut rule (a scheduler whose
only choice is the reader's rule, on the notebook's table of expressions, against the real
scheduler's kernel counts and cut reasons). notebooks/solutions.py holds the reference solutions.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict

import numpy as np
from exercises import UNANSWERED, passed


def check_fusion_options(options, reason, build, reference, inputs, kernels: int) -> bool:
    """`options` (a SchedulerOptions) flips exactly one rule so that `build(*inputs)` (on
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
                  "a cut. Which merge does layernorm's schedule make exactly once, and which "
                  "Reason does the scheduler give a merge that a switch turned off?")


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
    """`policy(steps, size_of, keep)` -> {key: key whose allocation it reuses} (share_by_
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
    return passed("memory policy", failures, "which buffers are finished (last used) before "
                  "this one is first written, and could one of theirs be its home?")



# ---- the cut rule -----------------------------------------------------------------------------

def _paths(node, users: dict, views: tuple = (), seen: set | None = None):
    """The movement ops (`views`) on every path from node's value to where a kernel would stop
    reading it: another reduce, or the output. Elementwise ops on the way are fused after the
    reduce (they keep the path going); movement ops add to its views."""
    from tinylab.ir.ops import MOVEMENT, REDUCE
    seen = set() if seen is None else seen
    if (node, views) in seen:
        return
    seen.add((node, views))
    if node not in users and views:
        yield views                            # the output, read through views
    for user in users.get(node, ()):
        if user.op in MOVEMENT:
            yield from _paths(user, users, views + (user,), seen)
        elif user.op in REDUCE:
            yield views                        # another reduce reads it
        elif user not in users:
            yield views                        # the output: an elementwise op after the reduce
        else:
            yield from _paths(user, users, views, seen)


def kernels_by_rule(rule, out) -> tuple[int, Counter]:
    """The kernels and cut reasons of a scheduler whose only choice is `rule`: the output gets a
    kernel (requested), and a reduce for which `rule(reduce, views)` names a Reason on some path
    of its value (views: the movement ops on the way, _paths) gets a buffer and a kernel of its
    own; everything else fuses."""
    from tinylab.ir.ops import REDUCE
    order = out.toposort()
    users: dict = {}
    for node in order:
        for source in dict.fromkeys(node.src):
            users.setdefault(source, []).append(node)
    reasons = Counter()
    for node in order:
        if node.op not in REDUCE or node is out:
            continue
        named = [reason for reason in (rule(node, views) for views in _paths(node, users))
                 if reason is not None]
        if named:
            reasons[named[0].value] += 1
    return 1 + sum(reasons.values()), reasons


def _real(fn, shapes) -> tuple[int, Counter]:
    from tinylab import Tensor, trace
    rng = np.random.default_rng(0)
    inputs = [Tensor(rng.standard_normal(shape).astype(np.float32)) for shape in shapes]
    with trace() as recorded:
        fn(*inputs).realize()
    cuts = Counter(d.reason.value for d in recorded.decisions
                   if not d.merged and d.reason.value != "requested")
    return len(recorded.kernels), cuts


def check_cut_rule(rule, expressions: dict, shapes=((8, 8),) * 3) -> bool:
    """`rule(reduce, views)` -> the Reason the scheduler records for cutting after `reduce` when it
    is read through the movement ops `views`, or None to fuse. Checked on `expressions` (text ->
    a function of Tensors): the kernels and cut reasons of kernels_by_rule against the real
    scheduler's, every row."""
    from tinylab import Tensor
    if rule is UNANSWERED:
        print("[ ] cut rule: write my_cut_rule in the cell above (replace the ...)")
        return False
    rng = np.random.default_rng(0)
    failures, hint = [], ""
    for text, fn in expressions.items():
        real, real_cuts = _real(fn, shapes)
        inputs = [Tensor(rng.standard_normal(shape).astype(np.float32)) for shape in shapes]
        try:
            mine, my_cuts = kernels_by_rule(rule, fn(*inputs).node)
        except Exception as error:
            return passed("cut rule", [f"{text}: {type(error).__name__}: {error}"],
                          "does your rule return a Reason (or None) for every reduce and views?")
        if (mine, my_cuts) == (real, real_cuts):
            continue
        failures.append(f"{text}: your rule gives {mine} kernel(s) {dict(my_cuts)}, the "
                        f"scheduler {real} {dict(real_cuts)}")
        hint = hint or (_hint_more(text) if mine > real else _hint_fewer(text) if mine < real
                        else _hint_reason())
    print(f"    {len(expressions) - len(failures)} of {len(expressions)} rows match the scheduler")
    return passed("cut rule", failures[:3], hint or "?")


def _hint_more(text: str) -> str:
    return (f"in {text}, which output element needs the whole reduce before it can be "
            "computed, and is a reshape of a finished row's sum such a case?")


def _hint_fewer(text: str) -> str:
    return (f"in {text}, the reduce's result is read at indices other than where each value was "
            "computed: can one loop nest read a value that another iteration has not finished?")


def _hint_reason() -> str:
    return ("the counts match: which Reason names a reduce read back across its own axes, and "
            "which one a reduce read through a view that reorders it?")
