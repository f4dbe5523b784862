"""Shared fixtures: `device` runs a test once per backend (inside Context(DEV=...)), and
`golden` compares text with a reviewed file in tests/golden (UPDATE_GOLDEN=1 rewrites it).
At the end of a session every kernel it produced is rendered for CUDA and compiled by nvcc."""
import os
from pathlib import Path

import numpy as np
import pytest

import cuda_check
from tinylab import Context, Device

BACKENDS = ["CPU", "PYTHON", "CL", "CUDA"]  # CL and CUDA only where they can run
GOLDEN = Path(__file__).parent / "golden"


def available_backends():
    return [name for name in BACKENDS if Device[name].available]


@pytest.fixture(params=available_backends())
def device(request):
    with Context(DEV=request.param):
        yield request.param


@pytest.fixture(scope="session", autouse=True)
def every_kernel_compiles_for_cuda():
    """Teardown of the session (of each xdist worker): all kernels the tests produced, rendered
    for CUDA, compile to PTX with nvcc where it exists (CUDA_RENDER_CHECK=0 skips)."""
    yield
    if os.environ.get("CUDA_RENDER_CHECK", "1") != "0" and cuda_check.nvcc_present():
        cuda_check.compile_for_cuda(cuda_check.session_asts())


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
