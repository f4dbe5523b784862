"""tinylab_widgets: the Jupyter layer of tinylab (installed from widgets/). `Inspector` shows a
Trace (graph collapsed by kernel, kernels with source, fusion decisions, what-if);
`TrainingMonitor` follows a training loop live; magics.py adds `%%tinygrad` / `%tinygrad`.
`%load_ext tinylab` (or `%load_ext tinylab_widgets`) registers the magics.
"""
from .inspector import Inspector, static_bundle
from .monitor import TrainingMonitor


def load_ipython_extension(ipython):
    from .magics import load_ipython_extension as load
    load(ipython)


__all__ = ["Inspector", "TrainingMonitor", "static_bundle", "load_ipython_extension"]
