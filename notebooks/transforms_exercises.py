"""Checks for notebook 09's exercises: the reader writes a jvp rule, a batching rule and a vjp
rule (derived by transposing the jvp) for rows of tinylab.func's table; each check puts the rule
in the table for the duration of the check (the vjp: in autograd's reverse table, whose own rule
is out of reach meanwhile) and runs the parity harness's jvp / vmap / gradient columns
(tests/frontend/parity_harness.py) against torch, then says right, not yet answered, or not
quite with a hint that asks a question (never the answer). notebooks/solutions.py holds the
reference solutions.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

from exercises import UNANSWERED

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "frontend"))
from parity_harness import Case, run_case, run_jvp_case, run_vmap_case  # noqa: E402

from tinylab.frontend import autograd  # noqa: E402
from tinylab.func import TABLE  # noqa: E402
from tinylab.ir.ops import Op  # noqa: E402
from tinylab.ir.primitives import structure_rows  # noqa: E402

HINTS = {
    "jvp": "what is d(1/x) in terms of dx and of y = 1/x itself, and which of node, node.src[0] "
           "and tangents[0] holds each of them?",
    "batch": "the batched source carries the batch as its axis 0: which axis of it is the "
             "example's axis k?",
    "vjp": "the jvp copies each element of x to every position along the broadcast axes: in "
           "<u, E v>, which entries of u meet one entry of v, and what shape must the "
           "cotangent of x have?",
}
JVP_ROWS = [Case("reciprocal", lambda x: 1 / x, lambda x: 1 / x, [((3, 4),), ((),)], ("positive",)),
            Case("x / (1 + x²)", lambda x: x / (1 + x * x), lambda x: x / (1 + x * x),
                 [((5,),)])]
BATCH_ROWS = [Case("flip", lambda x: x.flip(0), lambda x: x.flip(0), [((3, 4),), ((1, 2),)]),
              Case("flip two axes", lambda x: x.flip((0, 1)).sum(0),
                   lambda x: x.flip((0, 1)).sum(0), [((2, 3, 4),)])]
VJP_ROWS = [Case("expand", lambda x: x.expand(3, 4), lambda x: x.expand(3, 4),
                 [((1, 4),), ((3, 1),), ((1, 1),)]),
            Case("broadcast add", lambda x, y: x + y, lambda x, y: x + y, [((3, 1), (1, 4))]),
            Case("a new leading axis", lambda x: x.expand(2, 3, 4) * 2,
                 lambda x: x.expand(2, 3, 4) * 2, [((3, 4),)])]


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


@contextmanager
def _reverse_rule(op: Op, rule):
    """`rule` as op's reverse rule in autograd's table (which grad, vjp and backward read) and in
    TABLE; the project's own rule is out of reach meanwhile: calling the table's rule from your
    rule calls yours again."""
    saved, saved_row, saved_expand = autograd.RULES[op], TABLE[op], structure_rows._expand_reverse
    autograd.RULES[op] = rule
    TABLE[op] = saved_row._replace(vjp=rule)
    structure_rows._expand_reverse = rule
    try:
        yield
    finally:
        autograd.RULES[op], TABLE[op], structure_rows._expand_reverse = saved, saved_row, saved_expand


def check_vjp_rule(rule) -> bool:
    """Your rule as EXPAND's reverse rule, rule(grad, node) -> (cotangent of node.src[0],), in
    gradients against torch.autograd (the parity harness's gradient column)."""
    question = "vjp rule of EXPAND"
    if rule is UNANSWERED:
        print(f"[ ] {question}: write your rule in the cell above (replace the ...), then run "
              "this cell again")
        return False
    try:
        with _reverse_rule(Op.EXPAND, rule):
            for case in VJP_ROWS:
                for shapes in case.shapes:
                    run_case(case, shapes, False)
                run_case(case, case.shapes[0], True)
    except RecursionError:
        print(f"[!] {question}: not yet: your rule calls the reverse table's own rule, which is "
              "yours while it is checked\n    hint: can you write the transpose of the jvp "
              "(t.expand(node.shape)) from grad and the shapes alone?")
        return False
    except Exception as error:  # a wrong number or a crash: a hint, not the answer
        print(f"[!] {question}: not yet: {type(error).__name__}: "
              f"{str(error).splitlines()[0][:160]}\n    hint: {HINTS['vjp']}")
        return False
    print(f"[x] {question}: gradients match torch on {len(VJP_ROWS)} parity rows "
          "(contiguous, size-1 and strided inputs)")
    return True
