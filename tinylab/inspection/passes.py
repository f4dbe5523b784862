"""The Passes view's data: a kernel's recorded compilation steps (engine/compile_record.py: AST,
plan before actions, after each action, as linearized, linear program, source) with a unified diff
from each step to the next. Called by sources.program_entry; drawn by html.py, text.py and the
widget's Passes panel.
"""
from __future__ import annotations

import difflib

MAX_DIFF_LINES = 400   # a diff longer than this is cut (the step's own text is complete)
MAX_STATIC_LINES = 16  # static HTML shows this much of a step's text (the widget: all of it)


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


def pass_lines(program: dict) -> list[str]:
    """The passes as text lines: each step's title, and for each optimization action the diff
    it made to the plan (the other steps' full text is printed above or by the widget)."""
    steps = program.get("steps") or []
    if not steps:
        return []
    lines = [f"      passes ({len(steps)} steps):"]
    for number, step in enumerate(steps, 1):
        lines.append(f"        {number}. {step['title']}")
        if step["title"].startswith("action"):
            lines += ["           " + line for line in (step["diff"] or "(no change)").splitlines()]
    return lines


def passes_html(program: dict, pre_style: str, muted_style: str) -> str:
    """Script-free HTML of the passes: one <details> per step; an action shows its diff to the
    plan (added lines green, removed red); a step whose text the kernel's view already shows
    (the loop IR, the source) or the step before it shows says so instead of repeating it; the
    others show their own text."""
    from html import escape
    steps = program.get("steps") or []
    if not steps:
        return ""
    loop_ir = (program.get("passes") or {}).get("plan")
    parts = []
    for number, step in enumerate(steps, 1):
        if step["title"].startswith("action"):
            body = (f'<div style="{muted_style}">what it changed in the plan</div>'
                    f'<pre style="{pre_style}">{_diff_html(_clipped(step["diff"]))}</pre>')
        elif step["title"].startswith("source"):
            body = f'<div style="{muted_style}">the source shown above</div>'
        elif step["text"] == loop_ir:
            body = f'<div style="{muted_style}">the loop IR shown above</div>'
        elif number > 1 and step["text"] == steps[number - 2]["text"]:
            body = f'<div style="{muted_style}">the same as step {number - 1}</div>'
        else:
            body = f'<pre style="{pre_style}">{escape(_clipped(step["text"]))}</pre>'
        parts.append(f'<details class="tinylab-pass" style="margin:2px 0 2px 12px"><summary '
                     f'style="cursor:pointer">{number}. {escape(step["title"])}</summary>{body}'
                     "</details>")
    return (f'<details class="tinylab-passes" style="margin:2px 0">'
            f'<summary style="cursor:pointer">passes '
            f'<span style="{muted_style}">({len(steps)} steps: AST, plan, each action, linear '
            f'program, source)</span></summary>{"".join(parts)}</details>')


def _clipped(text: str) -> str:
    lines = text.splitlines()
    if len(lines) <= MAX_STATIC_LINES:
        return text
    return "\n".join(lines[:MAX_STATIC_LINES] + [f"… {len(lines) - MAX_STATIC_LINES} more lines "
                                                  "(the live widget's Passes panel shows all)"])


DIFF_COLORS = {"+": "color:#166534;background:#dcfce7", "-": "color:#991b1b;background:#fee2e2",
               "@": "color:#475569"}


def _diff_html(diff: str) -> str:
    from html import escape
    if not diff:
        return "(no change)"
    lines = []
    for line in diff.splitlines():
        style = DIFF_COLORS.get(line[:1])
        lines.append(f'<span style="{style}">{escape(line)}</span>' if style else escape(line))
    return "\n".join(lines)
