"""Notebook 09's exercise checks (notebooks/transforms_exercises.py): the reference solutions
pass, a wrong rule fails with a hint and without the answer, an unanswered one says so, and the
table is restored after every check."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "notebooks"))
import transforms_exercises as ex  # noqa: E402
from tinylab.func import TABLE  # noqa: E402
from tinylab.ir.ops import Op  # noqa: E402


def wrong_jvp(node, tangents):  # forgets the minus sign
    return tangents[0] * node * node


def wrong_batch(node, sources, batched, size):  # flips the batch axis instead
    return sources[0].flip(node.axes)


def test_jvp_check(capsys):
    before = TABLE[Op.RECIPROCAL]
    assert ex.check_jvp_rule(ex.reference_jvp)
    assert not ex.check_jvp_rule(wrong_jvp)
    out = capsys.readouterr().out
    assert "[x]" in out and "hint:" in out and "-tangents" not in out
    assert not ex.check_jvp_rule(...) and "[ ]" in capsys.readouterr().out
    assert TABLE[Op.RECIPROCAL] is before


def test_batch_check(capsys):
    before = TABLE[Op.FLIP]
    assert ex.check_batch_rule(ex.reference_batch)
    assert not ex.check_batch_rule(wrong_batch)
    out = capsys.readouterr().out
    assert "[x]" in out and "hint:" in out and "axis + 1" not in out
    assert TABLE[Op.FLIP] is before
