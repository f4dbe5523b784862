"""Shared fixtures: `device` runs a test once per backend (inside Context(DEV=...)), and
`golden` compares text with a reviewed file in tests/golden (UPDATE_GOLDEN=1 rewrites it).
A test marked `ieee_special` (NaN / inf / subnormal results) runs only on backends whose language
promises IEEE special values (WGSL lets a compiler assume finite math); `refuses(device, dtype)`
(dtype_support.py) expects the clear error of a backend whose language lacks a dtype.
At the end of a session every kernel it produced is rendered for CUDA and compiled by nvcc, and
rendered as WGSL and validated by naga (wgsl_check.py)."""
import contextlib
import os
import time
from pathlib import Path

# plan from the model: calibration (engine/calibrate.py) is timed in its own tests only
os.environ.setdefault("TINYLAB_CALIBRATE", "0")
# one build per kernel: the quick tier (engine/build_tiers.py) is tested in its own tests only
os.environ.setdefault("TINYLAB_QUICK_BUILD", "0")

import numpy as np
import pytest

import cuda_check
import session_claims
import wgsl_check
from tinylab import Context, Device

BACKENDS = ["CPU", "PYTHON", "CL", "CUDA", "WEBGPU"]  # CL, CUDA, WEBGPU only where they run
GOLDEN = Path(__file__).parent / "golden"
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


def available_backends():
    return [name for name in BACKENDS if Device[name].available]


def pytest_configure(config):
    config.addinivalue_line("markers", "ieee_special: checks NaN/inf/subnormal results; runs on "
                            "backends whose language promises them")


def pytest_generate_tests(metafunc):
    if "device" not in metafunc.fixturenames:
        return
    for marker in metafunc.definition.iter_markers("parametrize"):   # the test names its own
        names = marker.args[0]
        if "device" in ([n.strip() for n in names.split(",")] if isinstance(names, str) else names):
            return
    names = available_backends()
    if metafunc.definition.get_closest_marker("ieee_special"):
        names = [n for n in names if not Device[n].renderer.finite_math]
    metafunc.parametrize("device", names, indirect=True)


@pytest.fixture
def device(request):
    with Context(DEV=request.param):
        yield request.param


@pytest.fixture
def launch_dims(monkeypatch):
    """The launch dimensions of every Runtime.launch in the test, in order (a spy that still
    launches): the one launch path every backend, realize and BEAM share."""
    from tinylab.runtimes.base import Runtime
    seen, original = [], Runtime.launch

    def spy(self, program, dims, *handles, **options):
        seen.append(dims)
        return original(self, program, dims, *handles, **options)

    monkeypatch.setattr(Runtime, "launch", spy)
    return seen


@pytest.fixture(scope="session", autouse=True)
def every_kernel_compiles_for_cuda(request):
    """Teardown of the session (of each xdist worker): all kernels the tests produced, rendered
    for CUDA, compile to PTX with nvcc where it exists (CUDA_RENDER_CHECK=0 skips)."""
    yield
    if os.environ.get("CUDA_RENDER_CHECK", "1") != "0" and cuda_check.nvcc_present():
        with _timed_check("CUDA render + nvcc", request.config) as asts:
            cuda_check.compile_for_cuda(asts)


@pytest.fixture(scope="session", autouse=True)
def every_kernel_renders_as_validated_wgsl(request):
    """Teardown of the session (of each xdist worker): all kernels the tests produced, on any
    backend, render as WGSL, and naga validates each where wgpu runs (WGSL_RENDER_CHECK=0 skips);
    a kernel of a dtype WGSL lacks must be refused by name."""
    yield
    if os.environ.get("WGSL_RENDER_CHECK", "1") != "0":
        with _timed_check("WGSL render + naga", request.config) as asts:
            wgsl_check.check_wgsl(asts)


@contextlib.contextmanager
def _timed_check(what: str, config):
    """The session's kernel ASTs for an end-of-session check, less those another xdist worker of
    this run claimed (session_claims.py: each kernel checked once per run); its time lands in
    test-artifacts/session-checks.log (a line per xdist worker: part of the suite's time)."""
    produced, start = cuda_check.session_asts(), time.perf_counter()
    asts = session_claims.claim(produced, what, session_claims.run_folder(config))
    yield asts
    ARTIFACTS.mkdir(exist_ok=True)
    with open(ARTIFACTS / "session-checks.log", "a") as log:
        log.write(f"{time.strftime('%H:%M:%S')} {os.environ.get('PYTEST_XDIST_WORKER', 'main')}: "
                  f"{what}: {len(asts)} kernels (of {len(produced)} made here) in "
                  f"{time.perf_counter() - start:.1f} s\n")


@pytest.fixture
def golden(request):
    def check(name: str, text: str):
        path = GOLDEN / name
        rewrite = f"UPDATE_GOLDEN=1 python -m pytest '{request.node.nodeid}'"
        if os.environ.get("UPDATE_GOLDEN"):
            path.write_text(text)
        # a missing file is a failure, not a pass: it has not been reviewed
        assert path.exists(), f"no golden file {path}: `{rewrite}` writes it for review"
        expected = path.read_text()
        assert text == expected, f"{name} differs from its golden file (`{rewrite}` to accept)"
    return check


@pytest.fixture
def rng():
    return np.random.default_rng(0)
