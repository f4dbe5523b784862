"""Real-browser test of the live inspector with symbolic shapes (issue 16 item 4; headless Debian
Chromium via Playwright; the fixtures of conftest.py, the pages of pages.py): a trace that runs
one symbolic kernel with two lengths shows that kernel's name twice in the kernels table, each
with its bound value."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import ARTIFACTS  # noqa: E402
from pages import inspector_state, standalone  # noqa: E402

from tinylab import Context, Tensor, Variable, trace  # noqa: E402
from tinylab_widgets import Inspector  # noqa: E402

pytestmark = pytest.mark.xdist_group("browser")


def test_kernels_table_shows_each_launchs_bound_values(browser, tmp_path):
    values = np.arange(32, dtype=np.float32).reshape(4, 8)
    x = Tensor(values).realize()
    length = Variable("i", 1, 8)
    with Context(DEV="CPU"), trace() as recorded:
        for n in (3, 5):
            out = (x[:, :length.bind(n)] * 2).sum(1).numpy()
            np.testing.assert_allclose(out, (values[:, :n] * 2).sum(1))
    inspector = Inspector(recorded)
    entries = inspector.data["kernels"]
    assert [k.var_vals for k in recorded.kernels] == [{"i": 3}, {"i": 5}]
    assert [k["variables"] for k in entries] == [{"i": 3}, {"i": 5}]
    assert entries[0]["name"] == entries[1]["name"] == recorded.kernels[0].name
    with standalone(browser, tmp_path,
                    inspector_state(inspector.data, inspector.panels)) as page:
        names = page.locator(".tl-row .tl-col-name")
        assert names.count() == 2
        texts = [names.nth(row).inner_text().strip() for row in range(2)]
        assert texts == [f"{entries[0]['name']} i=3", f"{entries[1]['name']} i=5"], texts
        assert [page.locator(".tl-row .tl-variables").nth(row).inner_text().strip()
                for row in range(2)] == ["i=3", "i=5"]
        page.locator(".tl-row[data-id='k1']").click()   # the details card says it too
        title = page.locator(".tl-kernel-title").inner_text()
        assert entries[1]["name"] in title and "· i=5 ·" in title, title
        page.screenshot(path=str(ARTIFACTS / "inspector-symbolic.png"))
