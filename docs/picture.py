"""Writes docs/inspector.png, the README's picture of the inspector: a traced matmul, bias, relu
and softmax shown by the inspector widget's standalone page (Inspector.save_html) with its first
kernel selected, photographed by headless Chromium (`make` installs it; playwright drives it).
`make picture` (.venv/bin/python docs/picture.py); planned for CPU_TARGET=avx2 like the notebooks."""
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

import tinylab
from tinylab import Context, Tensor
from tinylab_widgets import Inspector

HERE = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"


def main() -> None:
    with Context(CPU_TARGET="avx2", TINYLAB_CALIBRATE=0):
        x, w = Tensor.rand(64, 64).realize(), Tensor.rand(64, 64).realize()
        with tinylab.trace() as recorded:
            (x @ w + 1).relu().softmax(1).numpy()
    inspector = Inspector(recorded)
    inspector.select("kernel", "k0")
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        page_file = Path(folder) / "inspector.html"
        inspector.save_html(page_file)
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 1000})
        page.goto(page_file.as_uri())
        page.wait_for_timeout(1500)
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(HERE / "inspector.png"))
        browser.close()
    print(f"wrote {HERE / 'inspector.png'}")


if __name__ == "__main__":
    main()
