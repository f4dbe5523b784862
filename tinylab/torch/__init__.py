"""The PyTorch bridge: `torch.compile(model, backend="tinylab")` runs a model's ATen graphs
(forward and backward, from AOTAutograd) on tinylab's lazy engine, so the inspector shows a
PyTorch model's kernels, fusion reasons and source, each traced to the line of its forward.
Importing this package imports torch; nothing else in tinylab does.

    import torch
    model = torch.compile(model, backend="tinylab")   # found through torch's entry points
    tinylab.torch.explain(model, x)                   # graph breaks and the kernels that ran
"""
from .aten_table import TABLE
from .dynamo_backend import backend
from .explain import explain

__all__ = ["TABLE", "backend", "explain"]
