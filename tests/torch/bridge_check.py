"""Helpers the bridge tests share: run a PyTorch function through AOTAutograd with the bridge
compiling its ATen graphs (forward and backward), beside PyTorch eager, and compare within the
bars of the issue (forward relative error 1e-4, gradients 1e-3, ints and bools exact, NaN where
NaN, the dtype PyTorch gives).
"""
from __future__ import annotations

import zlib

import numpy as np
import torch
from functorch.compile import aot_function
from torch_reference import aten_kernels

from tinylab.torch import dynamo_backend
from tinylab.torch.graph_program import Options


def flat(value) -> list:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in flat(v)]
    return [value]


def run_both(fn, inputs: list, grad: bool = False, options: Options | None = None,
             frozen=()):
    """(tinylab's values, PyTorch eager's values, the ATen graphs the bridge compiled): fn's
    outputs through AOTAutograd (aot_function, the path torch.compile takes after Dynamo) with
    the bridge compiling each graph, then (grad=True) the gradients of Σ out·cotangent with
    respect to every float input, the cotangents fixed random tensors."""
    options = options or Options(jit=False)
    graphs: list = []

    def compiler(kind):
        make = dynamo_backend._compiler(kind, options)

        def compile_graph(gm, example_inputs):
            graphs.append(gm)
            return make(gm, example_inputs)
        return compile_graph
    compiled = aot_function(fn, fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                            inference_compiler=compiler("inference"))
    with aten_kernels():
        expected = _values(fn, inputs, grad, frozen)
    return _values(compiled, inputs, grad, frozen), expected, graphs


def _values(fn, inputs: list, grad: bool, frozen=()) -> list:
    floats = [x.is_floating_point() and i not in frozen for i, x in enumerate(inputs)]
    inputs = [x.detach().clone().requires_grad_(grad and f) for x, f in zip(inputs, floats)]
    with torch.set_grad_enabled(grad):
        outs = flat(fn(*inputs))
    values = [o.detach() for o in outs]
    if not grad:
        return values
    differentiable = [o for o in outs if o.is_floating_point() and o.requires_grad]
    generator = torch.Generator().manual_seed(1)
    loss = sum((o * torch.randn(o.shape, generator=generator, dtype=o.dtype)).sum()
               for o in differentiable)
    leaves = [x for x, f in zip(inputs, floats) if f]
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    return values + [g if g is not None else torch.zeros_like(x) for g, x in zip(grads, leaves)]


def assert_close(got, expected, tolerance: float = 1e-4, atol: float = 0.0, what: str = "",
                 elementwise: bool = False):
    """got and expected (torch tensors) agree: shape and dtype equal, ints/bools exactly, floats
    within `tolerance` of the largest finite |expected| (+atol) or, `elementwise` (special
    values), of each element's own size; NaN and ±inf where expected."""
    assert isinstance(got, torch.Tensor), f"{what}: got {type(got).__name__}"
    assert tuple(got.shape) == tuple(expected.shape), f"{what}: shape {tuple(got.shape)} " \
                                                      f"!= {tuple(expected.shape)}"
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != {expected.dtype}"
    a, b = got.numpy(), expected.numpy()
    if not expected.is_floating_point():
        np.testing.assert_array_equal(a, b, err_msg=what)
        return
    finite = np.isfinite(b)
    scale = float(np.abs(b[finite]).max()) if finite.any() and not elementwise else 0.0
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=tolerance,
                               atol=tolerance * scale + atol, equal_nan=True, err_msg=what)


def seeded(name: str) -> torch.Generator:
    return torch.Generator().manual_seed(zlib.crc32(name.encode()))


def assert_gradients_close(eager, compiled, tolerance: float = 1e-3):
    """Each parameter's gradient within `tolerance` of its own scale, with a floor of 1e-3 of
    the largest gradient of the model: a gradient that is zero analytically (a bias before a
    batch norm, an attention key's bias) is noise on both sides."""
    pairs = [(name, p.grad, q.grad) for (name, p), q in zip(eager.named_parameters(),
                                                            compiled.parameters())
             if p.grad is not None]
    floor = 1e-3 * max(float(g.abs().max()) for _, g, _ in pairs)
    for name, expected, got in pairs:
        assert got is not None, f"{name}: no gradient through the compiled model"
        assert_close(got, expected, tolerance, tolerance * floor, f"gradient of {name}")
