"""Notebook 10's exercise check (notebooks/bridge_exercises.py): the reference row for aten.sinc
(notebooks/solutions.py) passes, a row without sinc(0) = 1 fails with a hint that asks rather than
tells, an unanswered one says so, and the bridge's table is left as it was."""
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "notebooks"))
import bridge_exercises as ex  # noqa: E402
import solutions  # noqa: E402
from tinylab.torch.aten_table import TABLE  # noqa: E402


def test_sinc_row_check(capsys):
    assert torch.ops.aten.sinc not in TABLE
    assert ex.check_sinc_row(solutions.sinc_row)
    assert not ex.check_sinc_row(solutions.wrong_sinc_row)
    out = capsys.readouterr().out
    assert "[x]" in out and "hint:" in out and "?" in out.split("hint:")[1]
    assert "where(1.0" not in out   # the hint does not give the answer
    assert not ex.check_sinc_row(...) and "[ ]" in capsys.readouterr().out
    assert torch.ops.aten.sinc not in TABLE
