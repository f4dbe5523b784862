"""Run by tests/examples/test_as_tinygrad.py as `python -m tinylab.as_tinygrad check_models.py`:
the tinygrad-style models of models.py, unchanged, on tinylab through the alias, against real
tinygrad's outputs (tests/golden/tinygrad/models.json, from make_reference.py). Prints one line
per output and exits 1 on a mismatch."""
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import tinygrad  # noqa: E402
from make_reference import GOLDEN, from_json  # noqa: E402
import models  # noqa: E402


def main() -> int:
    assert getattr(tinygrad, "__tinylab_alias__", False), "run me through tinylab.as_tinygrad"
    expected = from_json((GOLDEN / "models.json").read_text())
    with tempfile.TemporaryDirectory() as workdir:
        got = models.run_all(workdir)
    bad = 0
    for name, want in expected.items():
        have = got[name]
        scale = max(float(np.abs(want).max()), 1.0)
        error = float(np.abs(have - want).max()) / scale if have.shape == want.shape else np.inf
        ok = have.shape == want.shape and error <= 3e-6
        bad += not ok
        print(f"{name:26s} {'ok' if ok else 'DIFFERS'}  max error / scale {error:.2e}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
