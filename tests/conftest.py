"""Shared fixtures: `device` runs a test once per backend (inside Context(DEV=...)), and
`golden` compares text with a reviewed file in tests/golden (UPDATE_GOLDEN=1 rewrites it).
A test marked `ieee_special` (NaN / inf / subnormal results) runs only on backends whose language
promises IEEE special values (WGSL lets a compiler assume finite math); `refuses(device, dtype)`
(dtype_support.py) expects the clear error of a backend whose language lacks a dtype.
Every kernel a session produced is rendered for CUDA and compiled by nvcc, and rendered as WGSL
and validated by naga (wgsl_check.py): in batches as a worker makes them, the rest at its end."""
import contextlib
import gc
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
from tinylab.engine import realize

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


# (name, switch, whether it can run here, the check): every kernel a session produces is rendered
# for CUDA and compiled to PTX by nvcc where nvcc exists (CUDA_RENDER_CHECK=0 skips), and renders
# as WGSL that naga validates where wgpu runs (WGSL_RENDER_CHECK=0 skips; a dtype WGSL lacks must
# be refused by name)
KERNEL_CHECKS = (("CUDA render + nvcc", "CUDA_RENDER_CHECK", cuda_check.nvcc_present,
                  cuda_check.compile_for_cuda),
                 ("WGSL render + naga", "WGSL_RENDER_CHECK", lambda: True, wgsl_check.check_wgsl))
# a worker checks its kernels each time it has made this many more: at the end it checks only
# the rest (all at the end, the worker that made most kept the run going a minute alone)
CHECK_EVERY = 1500
_CHECKED: dict = {}       # kernel ASTs this worker has checked (or left to the worker that claimed)
_RUNNERS_SEEN = [0]        # how many kernels this process held at the last check


def _check_new_kernels(config) -> None:
    new = [ast for ast in cuda_check.session_asts() if ast not in _CHECKED]
    _CHECKED.update(dict.fromkeys(new))
    _RUNNERS_SEEN[0] = len(realize.STATE.runners)
    for what, switch, runs_here, check in KERNEL_CHECKS:
        if os.environ.get(switch, "1") != "0" and runs_here():
            with _timed_check(what, config, new) as asts:
                check(asts)


@pytest.fixture(autouse=True)
def kernels_checked_as_they_come(request):
    """After a test: once this worker holds CHECK_EVERY kernels more than at its last check,
    the new ones are checked (KERNEL_CHECKS)."""
    yield
    if len(realize.STATE.runners) >= _RUNNERS_SEEN[0] + CHECK_EVERY:
        _check_new_kernels(request.config)


@pytest.fixture(scope="session", autouse=True)
def every_kernel_checked_for_cuda_and_wgsl(request):
    """Teardown of the session (of each xdist worker): the kernels not checked yet."""
    yield
    _check_new_kernels(request.config)


@contextlib.contextmanager
def _timed_check(what: str, config, produced: list):
    """Kernel ASTs of this worker for a check, less those another xdist worker of this run
    claimed (session_claims.py: each kernel checked once per run); its time lands in
    test-artifacts/session-checks.log (a line per check and xdist worker: part of the suite's
    time)."""
    start = time.perf_counter()
    asts = session_claims.claim(produced, what, session_claims.run_folder(config))
    yield asts
    ARTIFACTS.mkdir(exist_ok=True)
    with open(ARTIFACTS / "session-checks.log", "a") as log:
        log.write(f"{time.strftime('%H:%M:%S')} {os.environ.get('PYTEST_XDIST_WORKER', 'main')}: "
                  f"{what}: {len(asts)} kernels (of {len(produced)} new here) in "
                  f"{time.perf_counter() - start:.1f} s\n")


# Python's collector traverses every object a worker holds on each full collection: late in
# `make test` (kernel runners and their ASTs, ~1.5 GB a worker) one took ~1.5 s. Every
# FREEZE_EVERY tests a worker collects and freezes what it holds (gc.freeze), so later collections
# traverse only what came after; garbage found later among frozen objects is freed by reference
# counts alone (TINYLAB_TEST_GC_FREEZE=0: no freezing).
FREEZE_EVERY = int(os.environ.get("TINYLAB_TEST_GC_FREEZE", "250"))
_TESTS_RUN = [0]


def pytest_runtest_teardown(item, nextitem):
    _TESTS_RUN[0] += 1
    if FREEZE_EVERY and _TESTS_RUN[0] % FREEZE_EVERY == 0:
        gc.collect()
        gc.freeze()


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
