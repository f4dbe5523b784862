"""Shared fixtures: `device` runs a test once per backend (inside Context(DEV=...)), and
`golden` compares text with a reviewed file in tests/golden (UPDATE_GOLDEN=1 rewrites it)."""
import os
from pathlib import Path

import numpy as np
import pytest

from tinylab import Context, Device

BACKENDS = ["CPU", "PYTHON"]
GOLDEN = Path(__file__).parent / "golden"


def available_backends():
    return [name for name in BACKENDS if Device[name].available]


@pytest.fixture(params=available_backends())
def device(request):
    with Context(DEV=request.param):
        yield request.param


@pytest.fixture
def golden():
    def check(name: str, text: str):
        path = GOLDEN / name
        if os.environ.get("UPDATE_GOLDEN") or not path.exists():
            path.write_text(text)
        expected = path.read_text()
        assert text == expected, f"{name} differs from its golden file (UPDATE_GOLDEN=1 to accept)"
    return check


@pytest.fixture
def rng():
    return np.random.default_rng(0)
