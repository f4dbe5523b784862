"""Checks for notebook 10's builder exercise: the reader writes the bridge's rows for an ATen op
the table lacks (aten.logit and its backward, aten.logit_backward); the check adds them to
tinylab/torch/aten_table.py's TABLE for the duration of the check, compiles a function that
calls torch.logit through torch.compile(backend="tinylab") with no fallback, and compares its
values and gradients with PyTorch eager, inside and at the edges of the eps clamp. It says
right, not yet answered, or not quite with a question for a hint (never the answer).
"""
from __future__ import annotations

from contextlib import contextmanager

import torch

from exercises import UNANSWERED, passed

aten = torch.ops.aten
HINT_FORWARD = ("logit(x) = log(x / (1 - x)): where does torch.logit clamp x when eps is given, "
                "and what does your row do with eps=None?")
HINT_BACKWARD = ("d logit / dx = 1 / (x (1 - x)) inside the clamp: which x does the gradient "
                 "see outside [eps, 1 - eps], and what does PyTorch give there?")


@contextmanager
def _rows(rows: dict):
    from tinylab.torch.aten_table import TABLE
    saved = {op: TABLE.get(op) for op in rows}
    TABLE.update(rows)
    try:
        yield
    finally:
        for op, row in saved.items():
            if row is None:
                TABLE.pop(op, None)
            else:
                TABLE[op] = row


def _compare(forward_row, backward_row, eps) -> list[str]:
    failures = []
    x = torch.tensor([0.001, 0.02, 0.3, 0.5, 0.77, 0.98, 0.9995])
    with _rows({aten.logit: forward_row, aten.logit_backward: backward_row}):
        torch._dynamo.reset()
        compiled = torch.compile(lambda t: torch.logit(t, eps), backend="tinylab")
        mine = x.clone().requires_grad_()
        theirs = x.clone().requires_grad_()
        try:
            got = compiled(mine)
            got.sum().backward()
        except Exception as error:  # noqa: BLE001 - the reader's row raised: say so
            return [f"the compiled function raised {type(error).__name__}: "
                    f"{str(error).splitlines()[-1][:200]}"]
        expected = torch.logit(theirs, eps)
        expected.sum().backward()
    if not torch.allclose(got, expected, rtol=1e-4, atol=1e-5):
        failures.append(f"logit values differ from PyTorch's with eps={eps}")
    if not torch.allclose(mine.grad, theirs.grad, rtol=1e-3, atol=1e-4):
        failures.append(f"logit gradients differ from PyTorch's with eps={eps}")
    return failures


def check_logit_rows(forward_row, backward_row) -> bool:
    """10: rows for aten.logit(x, eps=None) and aten.logit_backward(grad, x, eps=None)."""
    if forward_row is UNANSWERED or backward_row is UNANSWERED:
        print("[ ] logit rows: write both rows in the cell above (replace the ...), then run it "
              "again")
        return False
    failures = _compare(forward_row, backward_row, None) + _compare(forward_row, backward_row,
                                                                    0.01)
    hint = HINT_BACKWARD if all("gradient" in f for f in failures) else HINT_FORWARD
    return passed("logit rows", failures, hint)
