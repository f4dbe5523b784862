"""Exercise checks for the tutorial notebooks: `check(question, answer, actual, why)` compares a
reader's answer with the value the notebook just computed from the real implementation, and says
right / not quite (with the reason) / not answered yet (`...`). Imported by notebooks/NN_*.ipynb.
"""
from __future__ import annotations

UNANSWERED = ...   # `guess = ...` in a notebook means "not answered yet"


def check(question: str, answer, actual, why: str = "") -> None:
    """Print whether `answer` equals `actual` (a value computed live from tinylab)."""
    verdict(question, answer, actual, why)


def verdict(question: str, answer, actual, why: str = "") -> bool:
    """`check`, returning True when the answer is right."""
    if answer is UNANSWERED:
        print(f"[ ] {question}: write your answer in the cell above (replace the ...), "
              "then run this cell again")
        return False
    if _same(answer, actual):
        print(f"[x] {question}: {actual!r} is right" + (f" ({why})" if why else ""))
        return True
    print(f"[!] {question}: you said {answer!r}, the implementation says {actual!r}"
          + (f"\n    why: {why}" if why else ""))
    return False


def check_all(answers: dict, actuals: dict, why: dict | None = None) -> None:
    """`check` for each key of `actuals`, then how many answers were right."""
    why = why or {}
    right = sum(verdict(key, answers.get(key, UNANSWERED), value, why.get(key, ""))
                for key, value in actuals.items())
    print(f"{right}/{len(actuals)} right")


def _same(answer, actual) -> bool:
    if isinstance(actual, float) and isinstance(answer, (int, float)):
        return abs(answer - actual) <= 1e-4 * max(1.0, abs(actual))
    if isinstance(actual, tuple) and isinstance(answer, list):
        return tuple(answer) == actual
    return answer == actual
