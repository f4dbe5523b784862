"""Checks for notebook 09's exercises: the reader writes a jvp rule and a batching rule for a row
of tinylab.func's table; each check puts the rule in the table for the duration of the check and
runs the parity harness's jvp / vmap columns (tests/frontend/parity_harness.py) against
torch.func, then says right, not yet answered, or not quite with a hint (never the answer).
Reference solutions are at the bottom (for tests/notebooks/test_transforms_exercises.py).
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

from exercises import UNANSWERED

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "frontend"))
from parity_harness import Case, run_jvp_case, run_vmap_case  # noqa: E402

from tinylab.func import TABLE  # noqa: E402
from tinylab.ir.ops import Op  # noqa: E402

HINTS = {
    "jvp": "d(1/x) is -dx / x²: the rule gets the node (its value is 1/x) and the list of source "
           "tangents; multiply the first tangent, not the node's source",
    "batch": "the batch axis is axis 0 of the batched source, so every flipped axis moves one "
             "place to the right",
}
JVP_ROWS = [Case("reciprocal", lambda x: 1 / x, lambda x: 1 / x, [((3, 4),), ((),)], ("positive",)),
            Case("x / (1 + x²)", lambda x: x / (1 + x * x), lambda x: x / (1 + x * x),
                 [((5,),)])]
BATCH_ROWS = [Case("flip", lambda x: x.flip(0), lambda x: x.flip(0), [((3, 4),), ((1, 2),)]),
              Case("flip two axes", lambda x: x.flip((0, 1)).sum(0),
                   lambda x: x.flip((0, 1)).sum(0), [((2, 3, 4),)])]


@contextmanager
def _row(op: Op, **rule):
    saved = TABLE[op]
    TABLE[op] = saved._replace(**rule)
    try:
        yield
    finally:
        TABLE[op] = saved


def _run(question: str, kind: str, rule, op: Op, rows, runner) -> bool:
    if rule is UNANSWERED:
        print(f"[ ] {question}: write your rule in the cell above (replace the ...), then run "
              f"this cell again")
        return False
    try:
        with _row(op, **{kind: rule}):
            for case in rows:
                for shapes in case.shapes:
                    runner(case, shapes, False)
                runner(case, case.shapes[0], True)
    except Exception as error:  # a wrong number or a crash: a hint, not the answer
        print(f"[!] {question}: not yet: {type(error).__name__}: "
              f"{str(error).splitlines()[0][:160]}\n    hint: {HINTS[kind]}")
        return False
    print(f"[x] {question}: matches torch.func on {len(rows)} parity rows "
          f"(contiguous, 0-d / size-1 and strided inputs)")
    return True


def check_jvp_rule(rule) -> bool:
    """Your rule as RECIPROCAL's jvp against torch.func.jvp."""
    return _run("jvp rule of RECIPROCAL", "jvp", rule, Op.RECIPROCAL, JVP_ROWS, run_jvp_case)


def check_batch_rule(rule) -> bool:
    """Your rule as FLIP's batching rule against torch.func.vmap."""
    return _run("batching rule of FLIP", "batch", rule, Op.FLIP, BATCH_ROWS, run_vmap_case)


# ---- reference solutions (the notebook never shows them) --------------------------------------
def reference_jvp(node, tangents):
    return -tangents[0] * node * node


def reference_batch(node, sources, batched, size):
    return sources[0].flip(tuple(axis + 1 for axis in node.axes))
