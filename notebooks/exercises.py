"""Exercise checks for the tutorial notebooks: `check(question, answer, actual, why, hint)` compares
a reader's answer with the value the notebook just computed from the real implementation. A wrong
answer gets a hint (a question about what to look at), never the answer: that comes from
`show_answer(question)` or after three wrong tries. `claim(sentence, value, expected)` checks a
sentence of the notebook's text against what the engine produced and stops the notebook where
they part. Builder exercises (the reader writes code) are checked with the project's own
machinery by the *_exercises.py modules beside this one, which report through `passed`;
notebooks/solutions.py holds their reference solutions.
"""
from __future__ import annotations



UNANSWERED = ...   # `guess = ...` in a notebook means "not answered yet"
TRIES = 3          # wrong tries before the answer is shown
GENERIC_HINT = "which output above shows this, and what does the text beside it say about it?"
_NO_EXPECTATION = object()
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
    """A builder exercise's verdict: right when its checks found nothing wrong; else what failed
    and `hint`, a question about what to look at (never the answer)."""
    if not hint.rstrip().endswith("?"):
        raise ValueError(f"passed({question!r}): a hint asks a question, got {hint!r}")
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


class ClaimError(AssertionError):
    """A sentence of a notebook no longer matches what the engine computes."""


def claim(sentence: str, value, expected=_NO_EXPECTATION) -> None:
    """Check a sentence of the text: `value` (what the engine produced) must equal `expected`, or,
    without `expected`, be true. Prints the sentence with the value it rests on; raises
    ClaimError where they part, so strict nbval (and a reader's run) stops at the sentence."""
    holds = bool(value) if expected is _NO_EXPECTATION else _same(value, expected)
    if not holds:
        wanted = "" if expected is _NO_EXPECTATION else f" (the text says {expected!r})"
        raise ClaimError(f"the text says: {sentence}; the engine gives {value!r}{wanted}")
    shown = "" if isinstance(value, bool) else f": {value!r}"
    print(f"checked: {sentence}{shown}")
