"""WebGPU in a real browser (headless Debian Chromium on SwiftShader, pages from 127.0.0.1, a
secure context): the inspector's "Run on this browser's GPU" button runs a `%%tinygrad` cell's
kernel and matches the CPU's result; the page tinylab.export.webgpu writes for the CNN gives the
CPU's predictions on 100 Fashion-MNIST test images; without WebGPU both say why.
"""
from __future__ import annotations

import functools
import http.server
import socketserver
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from pages import lab_notebook, wait_for_file  # noqa: E402

from tinylab_widgets.inspector import Inspector  # noqa: E402

from tinylab import Context, Tensor, export, nn, trace  # noqa: E402
from tinylab.examples.beautiful_mnist import Model  # noqa: E402

pytestmark = pytest.mark.xdist_group("browser")
WEBGPU_ARGS = [a for a in CHROMIUM_ARGS if a != "--disable-gpu"] + [
    "--enable-unsafe-webgpu", "--enable-unsafe-swiftshader", "--use-angle=swiftshader"]
FASHION = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
           "Bag", "Ankle boot"]


@pytest.fixture(scope="module")
def launch(tmp_path_factory):
    """launch(args) -> a Chromium context (closed with the module)."""
    import os
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed at /usr/bin/chromium (make test installs it)")
    from playwright.sync_api import sync_playwright
    browsers = []
    with sync_playwright() as playwright:
        def start(args):
            browsers.append(playwright.chromium.launch(executable_path=CHROMIUM, args=args,
                                                       headless=True, timeout=60_000))
            return browsers[-1].new_context(viewport={"width": 1400, "height": 1000})
        try:
            yield start
        finally:
            for browser in browsers:
                browser.close()


@pytest.fixture(scope="module")
def webgpu_browser(launch):
    return launch(WEBGPU_ARGS)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(folder, port): a static server on 127.0.0.1 (a secure context for WebGPU)."""
    folder = tmp_path_factory.mktemp("pages")
    server = socketserver.TCPServer(("127.0.0.1", 0), functools.partial(_Quiet,
                                                                         directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield folder, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


SETUP = """%load_ext tinylab
import numpy as np
from tinylab import Tensor
rng = np.random.default_rng(0)
a = Tensor(rng.standard_normal((16, 48)).astype(np.float32)).realize()
b = Tensor(rng.standard_normal((48, 24)).astype(np.float32)).realize()"""
CELL = """%%tinygrad
(a @ b).relu().numpy().shape"""
DONE = "kernel_done = open('cell_done.txt', 'w').write('yes')"


def test_widget_runs_a_kernel_on_the_browser_gpu(webgpu_browser, lab_server):
    with lab_notebook(webgpu_browser, lab_server, [SETUP, CELL, DONE],
                      timeout_ms=60_000) as (page, root):
        wait_for_file(root / "cell_done.txt")
        inspector = page.locator(".tl-inspector").first
        inspector.wait_for()
        inspector.locator(".tl-row[data-id='k0']").click()
        inspector.locator(".tl-tab[data-language='WGSL']").click()
        assert "@compute" in inspector.locator(".tl-source").inner_text()
        inspector.locator(".tl-gpu-run").click()
        result = inspector.locator(".tl-gpu-done, .tl-gpu-problem")
        result.wait_for(timeout=60_000)
        text = result.inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "inspector-webgpu-button.png"))
        assert "tl-gpu-done" in result.get_attribute("class"), text
        assert int(result.get_attribute("data-count")) == 16 * 24
        assert float(result.get_attribute("data-max-rel")) < 1e-3, text   # summation order
        assert float(result.get_attribute("data-max-abs")) < 1e-4, text
        assert "adapter: " in text and "swiftshader" in text.lower(), text
        assert "GPU timestamps" in text or "wall clock" in text, text


@pytest.fixture(scope="module")
def exported_cnn(served):
    """The CNN exported as a page, its 100 test images and tinylab's CPU probabilities."""
    folder, port = served
    _, _, images, labels = nn.datasets.mnist(fashion=True)
    images = images.numpy()[:100].reshape(100, 1, 28, 28)
    labels = labels.numpy()[:100]
    model = Model()
    with Context(DEV="CPU"), Tensor.test():
        Tensor.realize(*nn.state.get_parameters(model))   # else fn would draw new weights
        expected = model(Tensor(images.astype(np.float32) / 255)).softmax(1).numpy()
        export.webgpu(lambda x: model(x).softmax(1), [Tensor.zeros(1, 1, 28, 28)],
                      folder / "cnn.html", labels=FASHION, samples=images, sample_labels=labels)
    return f"http://127.0.0.1:{port}/cnn.html", expected


def test_exported_cnn_page_agrees_with_the_cpu(webgpu_browser, exported_cnn):
    url, expected = exported_cnn
    page = webgpu_browser.new_page()
    try:
        page.goto(url)
        adapter = page.evaluate("window.tinylab.ready.then((state) => state.gpu.name)")
        assert "swiftshader" in adapter.lower()
        outputs = page.evaluate("""async () => {
            const results = [];
            for (let i = 0; i < 100; i++) {
                results.push((await window.tinylab.classify(window.tinylab.sampleValues(i))).output);
            }
            return results;
        }""", )
        got = np.array(outputs, np.float32)
        agree = int((got.argmax(1) == expected.argmax(1)).sum())
        assert agree >= 99, f"{agree}/100 predictions agree with the CPU"
        np.testing.assert_allclose(got, expected, atol=1e-4)
        page.locator("#samples canvas").nth(3).click()   # the learner's path: pick an image
        page.wait_for_function("document.getElementById('result').textContent.includes('ms')")
        assert "(true: " in page.inner_text("#result")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "exported-cnn.png"))
    finally:
        page.close()


@pytest.mark.parametrize("args, host, reason", [
    (CHROMIUM_ARGS, "127.0.0.1", "found no adapter"),     # --disable-gpu: no adapter
    (WEBGPU_ARGS + ["--host-resolver-rules=MAP tinylab.test 127.0.0.1"], "tinylab.test",
     "not a secure context")], ids=["no adapter", "insecure origin"])
def test_without_webgpu_the_page_and_widget_say_why(launch, exported_cnn, served, args, host,
                                                    reason):
    folder, port = served
    if not (folder / "inspector.html").exists():
        with trace() as recorded:
            (Tensor(np.ones((4, 8), np.float32)) * 2).numpy()
        Inspector(recorded).save_html(folder / "inspector.html")
    page = launch(args).new_page()
    try:
        page.goto(f"http://{host}:{port}/cnn.html")
        page.wait_for_function("document.getElementById('problem').textContent.length > 0")
        assert reason in page.inner_text("#problem")
        assert page.evaluate("window.tinylab.ready.then(() => 'ran', (e) => e.message)") \
            .find(reason) >= 0
        page.goto(f"http://{host}:{port}/inspector.html")   # the widget's button, same reason
        page.locator(".tl-row[data-id='k0']").click()
        page.locator(".tl-gpu-run").click()
        problem = page.locator(".tl-gpu-problem")
        problem.wait_for(timeout=30_000)
        assert reason in problem.inner_text()
    finally:
        page.close()
