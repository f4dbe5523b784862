"""Notebook 09's exercise checks (notebooks/transforms_exercises.py): the reference solutions
(notebooks/solutions.py) pass, a plausible wrong rule fails with a hint that asks a question and
does not give the answer, an unanswered one says so, and the tables are restored after every
check (the vjp check's own rule is out of reach while it runs)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "notebooks"))
import solutions  # noqa: E402
import transforms_exercises as ex  # noqa: E402
from tinylab.frontend import autograd  # noqa: E402
from tinylab.func import TABLE  # noqa: E402
from tinylab.ir.ops import Op  # noqa: E402


def wrong_jvp(node, tangents):  # forgets the minus sign
    return tangents[0] * node * node


def wrong_batch(node, sources, batched, size):  # flips the batch axis instead
    return sources[0].flip(node.axes)


def _hint(out: str) -> str:
    line = next(line for line in out.splitlines() if line.strip().startswith("hint:"))
    assert line.rstrip().endswith("?"), line
    return line


def test_jvp_check(capsys):
    before = TABLE[Op.RECIPROCAL]
    assert ex.check_jvp_rule(solutions.reciprocal_jvp)
    assert not ex.check_jvp_rule(wrong_jvp)
    out = capsys.readouterr().out
    assert "[x]" in out and "-tangents" not in _hint(out) and "-dx" not in _hint(out)
    assert not ex.check_jvp_rule(...) and "[ ]" in capsys.readouterr().out
    assert TABLE[Op.RECIPROCAL] is before


def test_batch_check(capsys):
    before = TABLE[Op.FLIP]
    assert ex.check_batch_rule(solutions.flip_batch)
    assert not ex.check_batch_rule(wrong_batch)
    out = capsys.readouterr().out
    assert "[x]" in out and "axis + 1" not in _hint(out) and "one place" not in _hint(out)
    assert TABLE[Op.FLIP] is before


def _first_copy(grad, node):
    """Picks one copy along the broadcast axes instead of summing them: a transpose of a copy is
    not a selection."""
    axes = [i for i, (s, n) in enumerate(zip(node.src[0].shape, node.shape)) if s != n]
    bounds = tuple((0, 1) if i in axes else (0, n) for i, n in enumerate(node.shape))
    return (grad.shrink(bounds),)


def _looked_up(grad, node):
    return autograd.RULES[Op.EXPAND](grad, node)   # the table's rule: its own, while checked


def test_vjp_check_both_ways(capsys):
    before, rule = TABLE[Op.EXPAND], autograd.RULES[Op.EXPAND]
    assert ex.check_vjp_rule(solutions.expand_vjp)
    capsys.readouterr()
    for wrong, says in [(_first_copy, "not yet"), (lambda grad, node: (grad,), "not yet"),
                        (_looked_up, "calls the reverse table's own rule")]:
        assert not ex.check_vjp_rule(wrong)
        out = capsys.readouterr().out
        assert says in out and "sum" not in _hint(out), out
    assert not ex.check_vjp_rule(...) and "[ ]" in capsys.readouterr().out
    assert TABLE[Op.EXPAND] is before and autograd.RULES[Op.EXPAND] is rule
