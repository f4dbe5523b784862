"""Fixtures for the widget tests: headless Debian Chromium driven by Playwright (never a
downloaded browser) and a JupyterLab server on a free loopback port with its own config, data and
runtime folders, killed with its kernels afterwards (skips only when /usr/bin/chromium is missing);
and the trace of one softmax on the CPU the in-process tests inspect.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import tinylab
from tinylab import Context, Tensor

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
SERVER_START_S = 90


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def softmax_trace():
    x = Tensor(np.arange(20, dtype=np.float32).reshape(4, 5)).realize()
    with Context(DEV="CPU"), tinylab.trace() as recorded:
        x.softmax(1).numpy()
    return recorded


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed at /usr/bin/chromium (make test installs it)")
    from playwright.sync_api import sync_playwright
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
            viewport={"width": 1400, "height": 1000}, timeout=60_000)
        try:
            yield context
        finally:
            context.close()


def _wait_for_server(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter lab exited early:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                json.load(response)
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"jupyter lab did not start in {SERVER_START_S}s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """(base url, token, notebook folder) of a private JupyterLab server."""
    home = tmp_path_factory.mktemp("jupyter")
    root = home / "notebooks"
    root.mkdir()
    env = dict(os.environ)
    for name, folder in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                         ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                         ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"), ("IPYTHONDIR", "ipython")):
        (home / folder).mkdir()
        env[name] = str(home / folder)
    # draw every cell (JupyterLab 4 otherwise detaches cells scrolled out of view)
    tracker = home / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    notifications = home / "settings" / "@jupyterlab" / "apputils-extension"
    notifications.mkdir(parents=True)
    (notifications / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    port, token = free_port(), "tinylab-test-token"
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
               "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               "--LabApp.extension_manager=readonly"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log = home / "server.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(command, env=env, cwd=root, stdout=output,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for_server(f"{base}/api/status?token={token}", process, log)
        yield base, token, root
    finally:
        _shutdown_kernels(base, token)
        _stop(process)


def _shutdown_kernels(base: str, token: str) -> None:
    try:
        with urllib.request.urlopen(f"{base}/api/kernels?token={token}", timeout=5) as response:
            kernels = json.load(response)
        for kernel in kernels:
            request = urllib.request.Request(f"{base}/api/kernels/{kernel['id']}?token={token}",
                                             method="DELETE")
            urllib.request.urlopen(request, timeout=10).close()
    except OSError:
        pass  # the server is gone already; its kernels exit with their parent


def _stop(process: subprocess.Popen) -> None:
    """Stop the server and every kernel it started (its own process group)."""
    for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
