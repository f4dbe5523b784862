"""Which dtypes a backend's language can express, for tests that run on every backend: `lacks`
says whether it cannot, `refuses` expects the clear error it then gives (WGSL has no float64)."""
from contextlib import nullcontext

import pytest

from tinylab import Device


def lacks(device: str, dtype_name: str) -> bool:
    """The device's language cannot express this dtype (Renderer.lacks_dtypes; a learner's
    renderer, as in notebook 06, keeps the base's empty default: it lacks nothing it does not
    say)."""
    return dtype_name in Device[device].renderer.lacks_dtypes


def refuses(device: str, *dtype_names: str):
    """pytest.raises for the error of a backend whose language lacks one of these dtypes (the
    whole test must then fail with it, early and by name), else a no-op context."""
    lacking = [d for d in dtype_names if lacks(device, d)]
    if not lacking:
        return nullcontext()
    return pytest.raises((NotImplementedError, MemoryError), match=f"has no {lacking[0]}")
