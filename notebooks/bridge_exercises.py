"""Checks for notebook 10's builder exercise: the reader writes the bridge's row for an ATen op
the table lacks (aten.sinc, sin(πx)/(πx)); the check adds it to tinylab/torch/aten_table.py's
TABLE for the duration of the check, compiles a function that calls torch.sinc through
torch.compile(backend="tinylab") with no fallback, and compares its values and gradients (the
backward graph is made of ops the table has) with PyTorch eager, 0 and huge values included. It
says right, not yet answered, or not quite with a question for a hint (never the answer).
"""
from __future__ import annotations

import math
from contextlib import contextmanager

import torch

from exercises import UNANSWERED, passed

aten = torch.ops.aten
POINTS = [0.0, -0.0, 1e-8, 0.25, -0.5, 1.0, 2.5, -3.75, 1e6]
HINT = ("what is sin(πx)/(πx) at x = 0 in floating point, what does torch.sinc return there, "
        "and which Tensor method picks between two values element by element?")


@contextmanager
def _row(op, row):
    from tinylab.torch.aten_table import TABLE
    saved = TABLE.get(op)
    TABLE[op] = row
    try:
        yield
    finally:
        if saved is None:
            TABLE.pop(op, None)
        else:
            TABLE[op] = saved


def check_sinc_row(row) -> bool:
    """10: a row for aten.sinc(x)."""
    if row is UNANSWERED:
        print("[ ] sinc row: write your row in the cell above (replace the ...), then run it again")
        return False
    x = torch.tensor(POINTS)
    mine, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
    failures = []
    with _row(aten.sinc, row):
        torch._dynamo.reset()
        compiled = torch.compile(torch.sinc, backend="tinylab")
        try:
            got = compiled(mine)
            got.sum().backward()
        except Exception as error:  # noqa: BLE001 - the reader's row raised: say so
            failures.append(f"the compiled function raised {type(error).__name__}: "
                            f"{str(error).splitlines()[-1][:200]}")
    if not failures:
        expected = torch.sinc(theirs)
        expected.sum().backward()
        wrong = [p for p, a, b in zip(POINTS, got.tolist(), expected.tolist())
                 if not math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7)]
        if wrong:
            failures.append(f"sinc differs from PyTorch's at x = {wrong}")
        elif not torch.allclose(mine.grad, theirs.grad, rtol=1e-4, atol=1e-6):
            failures.append("values are right, gradients differ (the row must be built from "
                            "Tensor ops, so the backward graph's ops see the same function)")
    return passed("sinc row", failures, HINT)
