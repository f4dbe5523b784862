"""tinylab: a hackable deep-learning stack you can watch compile.

    from tinylab import Tensor, nn
    x = Tensor.eye(3, requires_grad=True)
    y = Tensor([[2.0, 0, -2.0]], requires_grad=True)
    y.matmul(x).sum().backward()

The public API is listed here explicitly; everything else is reachable by module path.
"""
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

__all__ = ["Context", "DType", "Device", "GlobalCounters", "Tensor", "custom_backward", "dtypes",
           "export", "nn", "register_backend", "trace", "TinyJit", "Variable"]
__version__ = "0.1.0"


def load_ipython_extension(ipython):  # `%load_ext tinylab`
    from tinylab_widgets.magics import load_ipython_extension as load
    load(ipython)
