"""The parity harness: one table row per Tensor method, checked against PyTorch (forward values
and dtypes, and gradients of a random weighting of the output) over several input layouts.

A row is `Case(name, tinylab_fn, torch_fn, shapes, kinds)`. `variants(cases)` expands each row
into one pytest param per shape set, plus a non-contiguous copy of the first (inputs built as a
transpose of a contiguous buffer, or a strided slice for 1-d). Inputs come from a seeded
generator per (row, variant); `kinds` names each input's domain (see DOMAINS).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest
import torch

from tinylab import Tensor


def _signed_ints(rng, shape):
    return rng.integers(-8, 9, shape).astype(np.int32)


def _index(limit):
    return lambda rng, shape: rng.integers(0, limit, shape).astype(np.int32)


DOMAINS: dict[str, Callable] = {
    "real": lambda rng, shape: rng.standard_normal(shape).astype(np.float32),
    "positive": lambda rng, shape: rng.uniform(0.5, 2.5, shape).astype(np.float32),
    "unit": lambda rng, shape: rng.uniform(-0.9, 0.9, shape).astype(np.float32),
    "above1": lambda rng, shape: rng.uniform(1.2, 3.0, shape).astype(np.float32),
    "prob": lambda rng, shape: rng.uniform(0.05, 0.95, shape).astype(np.float32),
    "wide": lambda rng, shape: rng.uniform(-40, 40, shape).astype(np.float32),
    "halves": lambda rng, shape: (rng.integers(-12, 13, shape) / 2).astype(np.float32),
    "f16": lambda rng, shape: rng.standard_normal(shape).astype(np.float16),
    "f64": lambda rng, shape: rng.standard_normal(shape).astype(np.float64),
    "int": _signed_ints,
    "nonzero_int": lambda rng, shape: (rng.integers(1, 9, shape) *
                                       rng.choice([-1, 1], shape)).astype(np.int32),
    "small_int": lambda rng, shape: rng.integers(0, 6, shape).astype(np.int32),
    "shift": lambda rng, shape: rng.integers(0, 8, shape).astype(np.int32),
    "uint8": lambda rng, shape: rng.integers(0, 256, shape).astype(np.uint8),
    "int64": lambda rng, shape: rng.integers(-1000, 1000, shape).astype(np.int64),
    "bool": lambda rng, shape: rng.random(shape) < 0.5,
    "index2": _index(2), "index3": _index(3), "index4": _index(4), "index5": _index(5),
}


@dataclass
class Case:
    name: str
    tinylab: Callable
    torch: Callable
    shapes: list            # list of shape sets; a shape set is a tuple with one shape per input
    kinds: tuple = ("real",)
    atol: float = 1e-5
    rtol: float = 1e-4
    grad: bool = True
    noncontiguous: bool = True
    int_as_default: bool = True   # torch int64 results may be tinylab's default int32
    marks: list = field(default_factory=list)


def variants(cases: list[Case]) -> list:
    """pytest params (case, shape set, non-contiguous?) with readable ids."""
    params = []
    for case in cases:
        for k, shapes in enumerate(case.shapes):
            label = "x".join("_".join(map(str, s)) or "scalar" for s in shapes)
            params.append(pytest.param(case, shapes, False, id=f"{case.name}[{label}]",
                                       marks=case.marks))
            if k == 0 and case.noncontiguous and any(len(s) >= 1 for s in shapes):
                params.append(pytest.param(case, shapes, True, id=f"{case.name}[{label}-strided]",
                                           marks=case.marks))
    return params


def make_inputs(case: Case, shapes, strided: bool):
    """(tinylab leaves, the views of them the op reads, torch tensors): same values. Gradients
    are taken with respect to the leaves (buffers) and read back through the views."""
    seed = zlib.crc32(f"{case.name}{shapes}{strided}".encode())
    rng = np.random.default_rng(seed)
    kinds = case.kinds if len(case.kinds) == len(shapes) else case.kinds * len(shapes)
    arrays = [DOMAINS[kind](rng, shape) for kind, shape in zip(kinds, shapes)]
    leaves, views, theirs = [], [], []
    for array in arrays:
        leaf, view, torch_tensor = _layout(array, strided)
        if case.grad and array.dtype.kind == "f":
            leaf.requires_grad_(True)
            torch_tensor.requires_grad_(True)
        leaves.append(leaf)
        views.append(view)
        theirs.append(torch_tensor)
    return leaves, views, theirs


def _layout(array: np.ndarray, strided: bool):
    """A tinylab leaf, a function viewing it as `array`, and a torch tensor of `array`. Strided
    inputs read a permuted / spread-out buffer through a view (a transpose, or every other
    element for 1-d); PyTorch gets the same kind of view."""
    if not strided or array.ndim == 0:
        return Tensor(array.copy()), (lambda t: t), torch.from_numpy(array.copy())
    if array.ndim == 1:
        base = np.repeat(array, 2)
        return Tensor(base), (lambda t: t[::2]), torch.from_numpy(base)[::2]
    base = np.ascontiguousarray(np.swapaxes(array, -1, -2))
    return (Tensor(base), (lambda t: t.transpose(-1, -2)),
            torch.from_numpy(base).transpose(-1, -2))


def _as_list(out) -> list:
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _check_dtype(ours: np.ndarray, theirs: np.ndarray, case: Case, what: str) -> None:
    if ours.dtype == theirs.dtype:
        return
    if case.int_as_default and theirs.dtype == np.int64 and ours.dtype == np.int32:
        return
    raise AssertionError(f"{case.name} {what}: dtype {ours.dtype}, PyTorch gives {theirs.dtype}")


def _compare(ours: np.ndarray, theirs: np.ndarray, case: Case, what: str) -> None:
    assert ours.shape == theirs.shape, f"{case.name} {what}: shape {ours.shape} vs {theirs.shape}"
    _check_dtype(ours, theirs, case, what)
    if ours.dtype.kind == "f":
        np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64),
                                   atol=case.atol, rtol=case.rtol, err_msg=f"{case.name} {what}")
    else:
        np.testing.assert_array_equal(ours, theirs, err_msg=f"{case.name} {what}")


def run_case(case: Case, shapes, strided: bool) -> None:
    leaves, views, theirs_in = make_inputs(case, shapes, strided)
    ours_in = [view(leaf) for leaf, view in zip(leaves, views)]
    ours_out = _as_list(case.tinylab(*ours_in))
    theirs_out = _as_list(case.torch(*theirs_in))
    assert len(ours_out) == len(theirs_out), f"{case.name}: output counts differ"
    differentiable = [i for i, t in enumerate(leaves) if t.requires_grad]
    float_out = [k for k, o in enumerate(theirs_out) if o.dtype.is_floating_point]
    ours_grads, theirs_grads = [], []
    if differentiable and float_out and any(o.requires_grad for o in theirs_out):
        rng = np.random.default_rng(len(leaves))
        weights = {k: rng.standard_normal(tuple(theirs_out[k].shape)) for k in float_out}
        loss = sum((ours_out[k] * Tensor(weights[k].astype(np.float32))).sum()
                   for k in float_out)
        grads = loss.gradient(*[leaves[i] for i in differentiable])
        ours_grads = [views[i](g) for i, g in zip(differentiable, grads)]
        their_loss = sum((theirs_out[k] * torch.from_numpy(weights[k]).to(
            theirs_out[k].dtype)).sum() for k in float_out if theirs_out[k].requires_grad)
        theirs_grads = torch.autograd.grad(their_loss, [theirs_in[i] for i in differentiable],
                                           allow_unused=True)
    Tensor.realize(*ours_out, *ours_grads)
    for k, (o, t) in enumerate(zip(ours_out, theirs_out)):
        _compare(o.numpy(), t.detach().numpy(), case, f"output {k}")
    for i, o, t in zip(differentiable, ours_grads, theirs_grads):
        expected = np.zeros(ours_in[i].shape, ours_in[i].dtype.np) if t is None else \
            t.detach().numpy()
        _compare(o.numpy(), expected, case, f"gradient of input {i}")


def run_error_case(name: str, ours: Callable, theirs: Callable, error: type,
                   words: list[str], reads_data: bool = False) -> None:
    """An error row: PyTorch raises for this input (any error type), and tinylab raises `error`
    while building the op, before any kernel runs (unless the check `reads_data`), with every
    one of `words` (the op, the offending argument) in its message."""
    from tinylab import GlobalCounters
    with pytest.raises(Exception):  # noqa: B017 - PyTorch's own error types vary
        theirs()
    kernels = GlobalCounters.kernel_count
    with pytest.raises(error) as raised:
        ours()
    assert reads_data or GlobalCounters.kernel_count == kernels, f"{name}: ran kernels"
    message = str(raised.value)
    for word in words:
        assert word in message, f"{name}: {word!r} not in {message!r}"
