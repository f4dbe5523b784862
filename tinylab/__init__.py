"""tinylab: a hackable deep-learning stack you can watch compile.

    from tinylab import Tensor, nn
    x = Tensor.eye(3, requires_grad=True)
    y = Tensor([[2.0, 0, -2.0]], requires_grad=True)
    y.matmul(x).sum().backward()

The public API is listed here explicitly; everything else is reachable by module path.
`import tinylab` gives tinylab.func, tinylab.nn and tinylab.inspection too: func and inspection
load on first use (PEP 562; importing them eagerly made `import tinylab` ~1.2x slower). Nothing
of Jupyter is imported: the `%load_ext tinylab` hook imports tinylab_widgets when IPython calls it.
"""
__version__ = "0.1.0"   # the one place of the version (pyproject.toml reads it; CHANGELOG.md)

from .config import Context
from .dtype import DType, dtypes
from .engine.counters import GlobalCounters
from .engine.devices import Device, register_backend
from .engine.trace import trace
from .frontend.composite import custom_backward
from .frontend.jit import TinyJit
from .frontend.tensor import Tensor
from .ir.symbolic import Variable
from . import nn  # noqa: E402  (after Tensor: nn builds on it)
from . import export  # noqa: E402  (export.webgpu: a jitted function as an offline WebGPU page)

LAZY = ("func", "inspection")   # tinylab.func: grad, vjp, jvp, vmap, ...; tinylab.inspection

__all__ = ["Context", "DType", "Device", "GlobalCounters", "Tensor", "custom_backward", "dtypes",
           "export", "func", "inspection", "nn", "register_backend", "trace", "TinyJit", "Variable"]


def __getattr__(name: str):
    """tinylab.func and tinylab.inspection, imported on first use."""
    if name in LAZY:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'tinylab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(LAZY))


def load_ipython_extension(ipython):  # `%load_ext tinylab`
    try:
        from tinylab_widgets.magics import load_ipython_extension as load
    except ImportError as error:  # the Jupyter layer's own packages are the lab extra
        raise ImportError(f"%load_ext tinylab needs the lab extra ({error}): "
                          'pip install "tinylab[lab]"') from error
    load(ipython)
