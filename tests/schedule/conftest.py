"""Fixtures of the schedule tests: `lanes(count)` makes the engine relay out (RELAYOUT=1) for
`count` float32 lanes, whatever this CPU has (relayout_support.py)."""
import pytest

from relayout_support import caps_with_lanes
from tinylab import Context, Device


@pytest.fixture
def lanes(monkeypatch):
    def use(count):
        table = caps_with_lanes(count)
        monkeypatch.setattr(Device, "caps", lambda: table)
    with Context(RELAYOUT=1):
        yield use
