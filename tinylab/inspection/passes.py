"""The Passes view's data: a kernel's recorded compilation steps (engine/passes.py: kernel AST,
plan before actions, the plan after each action, linear program, source) with a unified diff
from each step to the next. Called by sources.program_entry; drawn by html.py, text.py and the
widget's Passes panel.
"""
from __future__ import annotations

import difflib

MAX_DIFF_LINES = 400   # a diff longer than this is cut (the step's own text is complete)


def pass_steps(steps) -> list[dict]:
    """[{"title", "text", "diff"}] in order; the first step's diff is empty."""
    out, previous = [], None
    for title, text in steps or ():
        diff = "" if previous is None else step_diff(previous, text)
        out.append({"title": title, "text": text, "diff": diff})
        previous = text
    return out


def step_diff(before: str, after: str) -> str:
    """Unified diff lines ('-' removed, '+' added, ' ' kept), without file headers."""
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2))
    lines = lines[2:]   # drop the ---/+++ headers
    if len(lines) > MAX_DIFF_LINES:
        lines = lines[:MAX_DIFF_LINES] + [f"… {len(lines) - MAX_DIFF_LINES} more diff lines"]
    return "\n".join(lines)
