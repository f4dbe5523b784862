"""The parity harness: one table row per Tensor method, checked against PyTorch (forward values
and dtypes, and gradients of a random weighting of the output) over several input layouts.

A row is `Case(name, tinylab_fn, torch_fn, shapes, kinds)`. `variants(cases)` expands each row
into one pytest param per shape set, plus a non-contiguous copy of the first (inputs built as a
transpose of a contiguous buffer, or a strided slice for 1-d). Inputs come from a seeded
generator per (row, variant); `kinds` names each input's domain (see DOMAINS).
A row covers the method named `name`, or those in `covers` (the walk in test_tensor_parity_walk
checks every public method has one). `also` reruns the first shape set with other domains
(special values, other dtypes); `dim` passes `dim=` to both functions and adds a variant with the
same dim counted from the end. `ErrorCase` rows check that tinylab rejects, when the op is built,
what PyTorch rejects; `LayerCase` rows check an nn layer against the torch module.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import pytest
import torch

from tinylab import GlobalCounters, Tensor
from tinylab.errors import TinylabError


# the special points of float ops: zeros of both signs, ±inf, NaN, the bounds of the piecewise
# activations (±1, ±3, ±6), ties, tiny steps; and large / small magnitudes (overflow, subnormals)
SPECIAL_VALUES = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 3.0, -3.0, 6.0, -6.0, 0.5, -0.5,
                  2.0, -2.0, 1e-7, -1e-7, 20.0, -20.0, 0.5]
EXTREME_VALUES = [1e30, -1e30, 3e38, -3e38, 1e-30, -1e-30, 1e-40, -1e-40, 88.8, -88.8, 100.0,
                  -100.0, 10000.5, -12345.25, 1e7, -1e7, 1e-20, 50.0, -50.0, 1.5]
# the float32 edges of the transcendentals, either side: e^x overflows above ln(max) = 88.7228 and
# reaches the smallest normal at -87.3365 and the smallest subnormal at -103.2789; sinh / cosh
# overflow above ln(2 max) = 89.4159; 2^x at 128, -126 and -149; the smallest normal and
# subnormal, the largest subnormal and the largest float (log's edges); tanh / erf saturate by 9
EDGE_VALUES = [88.72, 88.73, -87.33, -87.34, -103.27, -103.98, 89.41, 89.42, 127.99, 128.0,
               -126.0, -149.0, -150.0, 1.1754944e-38, 1.4e-45, 1.1754942e-38, 3.4028235e38,
               -3.4028235e38, 9.0, -9.0]


def _cycle(values):
    """Every value of the list (shuffled), repeated to fill the shape."""
    def make(rng, shape):
        return np.resize(rng.permutation(np.array(values, np.float32)), shape).astype(np.float32)
    return make


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
    "special": _cycle(SPECIAL_VALUES), "extreme": _cycle(EXTREME_VALUES),
    "edges": _cycle(EDGE_VALUES),
    "special_finite": _cycle([v if np.isfinite(v) else np.copysign(1e4, v) for v in SPECIAL_VALUES]),
    "large": lambda rng, shape: (rng.uniform(1e3, 4e6, shape) *
                                 rng.choice([-1, 1], shape)).astype(np.float32),
    "binary": lambda rng, shape: (rng.random(shape) < 0.5).astype(np.float32),
    "ties": lambda rng, shape: rng.integers(-2, 3, shape).astype(np.float32),
    "special_f64": lambda rng, shape: _cycle(SPECIAL_VALUES)(rng, shape).astype(np.float64),
}
SPECIAL = (("special",), ("extreme",))  # `also` for float rows: their special points
DTYPES = (("int",), ("bool",), ("f16",), ("f64",))  # `also` for rows taking any dtype
TOLERANCE = {np.float16: (2e-3, 2e-3)}  # (atol, rtol) floors for inputs of a dtype


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
    covers: tuple[str, ...] = ()  # the methods this row covers when `name` is not one
    also: tuple = ()              # kinds tuples the first shape set runs with too
    dim: int | None = None        # passed as dim= to both functions; a negative variant too


def _label(shapes) -> str:
    return "x".join("_".join(map(str, s)) or "scalar" for s in shapes)


def variants(cases: list[Case]) -> list:
    """pytest params (case, shape set, non-contiguous?) with readable ids: every shape set, a
    strided copy of the first, the first with each `also` domain and with a negative dim."""
    params = []
    for case in cases:
        for k, shapes in enumerate(case.shapes):
            label = _label(shapes)
            params.append(pytest.param(case, shapes, False, id=f"{case.name}[{label}]",
                                       marks=case.marks))
            if k == 0 and case.noncontiguous and any(len(s) >= 1 for s in shapes):
                params.append(pytest.param(case, shapes, True, id=f"{case.name}[{label}-strided]",
                                           marks=case.marks))
        params += _extra_variants(case)
    return params


def _extra_variants(case: Case) -> list:
    shapes, label = case.shapes[0], _label(case.shapes[0])
    params = []
    for kinds in case.also:
        variant = replace(case, kinds=kinds, also=())
        params.append(pytest.param(variant, shapes, False, marks=case.marks,
                                   id=f"{case.name}[{label}-{'-'.join(kinds)}]"))
    ndim = len(shapes[0]) if shapes else 0
    if case.dim is not None and case.dim >= 0 and ndim:
        variant = replace(case, dim=case.dim - ndim, also=())
        params.append(pytest.param(variant, shapes, False, marks=case.marks,
                                   id=f"{case.name}[{label}-dim{case.dim - ndim}]"))
    return params


def make_inputs(case: Case, shapes, strided: bool):
    """(tinylab leaves, the views of them the op reads, torch tensors): same values. Gradients
    are taken with respect to the leaves (buffers) and read back through the views."""
    seed = zlib.crc32(f"{case.name}{shapes}{strided}{case.kinds}".encode())
    rng = np.random.default_rng(seed)
    kinds = case.kinds if len(case.kinds) == len(shapes) else case.kinds * len(shapes)
    arrays = [np.asarray(DOMAINS[kind](rng, shape)) for kind, shape in zip(kinds, shapes)]
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


def _compare(ours: np.ndarray, theirs: np.ndarray, case: Case, what: str,
             tolerance=(0.0, 0.0), undefined=None) -> None:
    """Equal shapes and dtypes; floats within the row's tolerance (at least `tolerance`), NaN
    where PyTorch has NaN, infinities of the same sign. `undefined` masks elements out."""
    assert ours.shape == theirs.shape, f"{case.name} {what}: shape {ours.shape} vs {theirs.shape}"
    _check_dtype(ours, theirs, case, what)
    if undefined is not None:
        ours, theirs = ours[~undefined], theirs[~undefined]
    if ours.dtype.kind == "f":
        np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64),
                                   atol=max(case.atol, tolerance[0]),
                                   rtol=max(case.rtol, tolerance[1]), err_msg=f"{case.name} {what}")
    else:
        np.testing.assert_array_equal(ours, theirs, err_msg=f"{case.name} {what}")


def _tolerance(arrays) -> tuple[float, float]:
    floors = [TOLERANCE[a.dtype.type] for a in arrays if a.dtype.type in TOLERANCE]
    return (max(f[0] for f in floors), max(f[1] for f in floors)) if floors else (0.0, 0.0)


def _undefined_gradient(array: np.ndarray, theirs_out: list) -> np.ndarray:
    """Elements whose gradient is not compared: NaN inputs, and for ops whose output has the
    input's shape, elements where PyTorch's value is NaN (outside the op's domain), where each
    framework's formula leaves a different meaningless number."""
    undefined = np.isnan(array) if array.dtype.kind == "f" else np.zeros(array.shape, bool)
    for out in theirs_out:
        value = out.detach().numpy()
        if value.shape == array.shape and value.dtype.kind == "f":
            undefined = undefined | np.isnan(value)
    return undefined


def _dim_arguments(case: Case, shapes) -> dict:
    """{"dim": case.dim}, with a 0-d first input taking dim 0 (or -1 for a negative dim)."""
    if case.dim is None:
        return {}
    if shapes and len(shapes[0]) == 0:
        return {"dim": 0 if case.dim >= 0 else -1}
    return {"dim": case.dim}


def run_case(case: Case, shapes, strided: bool) -> None:
    leaves, views, theirs_in = make_inputs(case, shapes, strided)
    ours_in = [view(leaf) for leaf, view in zip(leaves, views)]
    arguments = _dim_arguments(case, shapes)
    ours_out = _as_list(case.tinylab(*ours_in, **arguments))
    theirs_out = _as_list(case.torch(*theirs_in, **arguments))
    assert len(ours_out) == len(theirs_out), f"{case.name}: output counts differ"
    differentiable = [i for i, t in enumerate(leaves) if t.requires_grad]
    float_out = [k for k, o in enumerate(theirs_out) if o.dtype.is_floating_point]
    ours_grads, theirs_grads = [], []
    if differentiable and float_out and any(o.requires_grad for o in theirs_out):
        rng = np.random.default_rng(len(leaves))
        weights = {k: rng.standard_normal(tuple(theirs_out[k].shape)) for k in float_out}
        loss = sum((ours_out[k] * Tensor(weights[k].astype(ours_out[k].dtype.np))).sum()
                   for k in float_out)
        grads = loss.gradient(*[leaves[i] for i in differentiable])
        ours_grads = [views[i](g) for i, g in zip(differentiable, grads)]
        their_loss = sum((theirs_out[k] * torch.from_numpy(weights[k]).to(
            theirs_out[k].dtype)).sum() for k in float_out if theirs_out[k].requires_grad)
        theirs_grads = torch.autograd.grad(their_loss, [theirs_in[i] for i in differentiable],
                                           allow_unused=True)
    Tensor.realize(*ours_out, *ours_grads)
    arrays = [t.detach().numpy() for t in theirs_in]
    tolerance = _tolerance(arrays)
    for k, (o, t) in enumerate(zip(ours_out, theirs_out)):
        _compare(o.numpy(), t.detach().numpy(), case, f"output {k}", tolerance)
    for i, o, t in zip(differentiable, ours_grads, theirs_grads):
        expected = np.zeros(ours_in[i].shape, ours_in[i].dtype.np) if t is None else \
            t.detach().numpy()
        _compare(o.numpy(), expected, case, f"gradient of input {i}", tolerance,
                 _undefined_gradient(arrays[i], theirs_out))


# ---- errors: what PyTorch rejects, tinylab rejects when the op is built ----
@dataclass
class ErrorCase:
    name: str                 # the row's id
    op: str                   # tinylab's message must name it
    tinylab: Callable
    torch: Callable
    shapes: tuple             # one shape set
    kinds: tuple = ("real",)
    words: tuple = ()         # further words the message must hold (shapes, values)
    same_type: bool = True    # tinylab's error is an instance of PyTorch's error class


def error_params(cases: list[ErrorCase]) -> list:
    return [pytest.param(case, id=case.name) for case in cases]


def run_error_case(case: ErrorCase) -> None:
    """PyTorch raises; tinylab raises, while building the op and before any kernel runs, an
    error of PyTorch's class (or a subclass: RuntimeError, IndexError, TypeError, ValueError,
    NotImplementedError) naming the op and the `words`."""
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    kinds = case.kinds if len(case.kinds) == len(case.shapes) else case.kinds * len(case.shapes)
    arrays = [np.asarray(DOMAINS[kind](rng, shape)) for kind, shape in zip(kinds, case.shapes)]
    with pytest.raises(Exception) as theirs:  # noqa: B017 - any error PyTorch raises
        case.torch(*[torch.from_numpy(a.copy()) for a in arrays])
    ours = [Tensor(a.copy()) for a in arrays]
    kernels = GlobalCounters.kernel_count
    with pytest.raises((ValueError, IndexError, TypeError, TinylabError)) as raised:
        case.tinylab(*ours)
    assert GlobalCounters.kernel_count == kernels, f"{case.name}: kernels ran before the error"
    if case.same_type:
        assert isinstance(raised.value, theirs.type), (
            f"{case.name}: PyTorch raises {theirs.type.__name__}, tinylab "
            f"{type(raised.value).__name__} (its classes: "
            f"{[c.__name__ for c in type(raised.value).__mro__]})")
    message = str(raised.value)
    missing = [word for word in (case.op, *case.words) if word not in message]
    assert not missing, f"{case.name}: message {message!r} does not mention {missing}"


# ---- nn layers: forward and every gradient against the torch module with the same weights ----
@dataclass
class LayerCase:
    name: str                 # the nn class it covers
    tinylab: Callable         # () -> a tinylab layer
    torch: Callable           # () -> the torch module
    shapes: list              # input shape sets
    kinds: tuple = ("real",)
    train: bool = False
    covers: tuple[str, ...] = ()
    atol: float = 1e-5
    rtol: float = 1e-4
    call: Callable | None = None  # (layer, *inputs) -> output; default layer(*inputs)


def _grad(tensor: Tensor, grad, view=lambda t: t) -> np.ndarray:
    """A gradient as numpy; None (a loss over an empty batch folds to a constant that no
    parameter reaches, where PyTorch keeps zeros) as zeros."""
    if grad is None:
        return np.zeros(tensor.shape, tensor.dtype.np)
    return view(grad).numpy()


def layer_variants(cases: list[LayerCase]) -> list:
    params = []
    for case in cases:
        for k, shapes in enumerate(case.shapes):
            params.append(pytest.param(case, shapes, False, id=f"{case.name}[{_label(shapes)}]"))
            if k == 0 and len(shapes[0]) >= 2 and DOMAINS[case.kinds[0]] is DOMAINS["real"]:
                params.append(pytest.param(case, shapes, True,
                                           id=f"{case.name}[{_label(shapes)}-strided]"))
    return params


def run_layer_case(case: LayerCase, shapes, strided: bool) -> None:
    """Copy the torch module's (perturbed) weights into the tinylab layer, then compare the
    outputs, the inputs' gradients and every parameter's gradient of sum(output * weights)."""
    from tinylab.nn.state import get_state_dict, load_state_dict
    theirs = case.torch()
    rng = np.random.default_rng(zlib.crc32(f"{case.name}{shapes}{strided}".encode()))
    with torch.no_grad():  # non-trivial affine parameters and running statistics
        for value in theirs.state_dict().values():
            if value.dtype.is_floating_point:
                value.add_(torch.from_numpy(rng.uniform(0.1, 0.5, tuple(value.shape))
                                            .astype(np.float32)))
    ours = case.tinylab()
    load_state_dict(ours, {k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    theirs.train(case.train)
    kinds = case.kinds if len(case.kinds) == len(shapes) else case.kinds * len(shapes)
    arrays = [np.asarray(DOMAINS[kind](rng, shape)) for kind, shape in zip(kinds, shapes)]
    inputs = [_layout(a, strided and a.dtype.kind == "f") for a in arrays]
    for leaf, _, theirs_input in inputs:
        if theirs_input.dtype.is_floating_point:
            leaf.requires_grad_(True)
            theirs_input.requires_grad_(True)
    call = case.call or (lambda layer, *args: layer(*args))
    with Tensor.train(case.train):
        ours_out = _as_list(call(ours, *[view(leaf) for leaf, view, _ in inputs]))
    theirs_out = _as_list(call(theirs, *[t for _, _, t in inputs]))
    weights = [rng.standard_normal(tuple(t.shape)).astype(np.float32) for t in theirs_out]
    sum((o * Tensor(w)).sum() for o, w in zip(ours_out, weights)).backward()
    sum((t * torch.from_numpy(w)).sum() for t, w in zip(theirs_out, weights)).backward()
    check = Case(case.name, None, None, [], atol=case.atol, rtol=case.rtol)
    for k, (o, t) in enumerate(zip(ours_out, theirs_out)):
        _compare(o.numpy(), t.detach().numpy(), check, f"output {k}")
    for k, (leaf, view, t) in enumerate(inputs):
        if t.requires_grad:
            _compare(_grad(view(leaf), leaf.grad, view), t.grad.numpy(), check,
                     f"gradient of input {k}")
    state = get_state_dict(ours)
    for name, parameter in theirs.named_parameters():
        _compare(_grad(state[name], state[name].grad), parameter.grad.numpy(), check,
                 f"gradient of {name}")
    for name, buffer in theirs.named_buffers():  # running statistics after a training step
        _compare(state[name].numpy(), buffer.numpy(), check, f"buffer {name}")


# ---- error rows given as two callables (the api rows): the same checks as run_error_case ----
def run_error_check(name: str, ours: Callable, theirs: Callable, error: type,
                    words: list[str], reads_data: bool = False) -> None:
    """An error row: PyTorch raises for this input (any error type), and tinylab raises `error`
    while building the op, before any kernel runs (unless the check `reads_data`), with every
    one of `words` (the op, the offending argument) in its message."""
    with pytest.raises(Exception):  # noqa: B017 - PyTorch's own error types vary
        theirs()
    kernels = GlobalCounters.kernel_count
    with pytest.raises(error) as raised:
        ours()
    assert reads_data or GlobalCounters.kernel_count == kernels, f"{name}: ran kernels"
    message = str(raised.value)
    for word in words:
        assert word in message, f"{name}: {word!r} not in {message!r}"


# ---- transform columns: each row with a gradient, under tinylab.func.jvp and tinylab.func.vmap --
def _float_outputs(out) -> tuple:
    return tuple(o for o in _as_list(out) if o.dtype.is_floating_point
                 if isinstance(o, torch.Tensor)) if any(isinstance(o, torch.Tensor)
                                                        for o in _as_list(out)) else \
        tuple(o for o in _as_list(out) if o.dtype.is_float)


def _with_inputs(fn, fixed: list, where: list[int], arguments: dict):
    """fn of the inputs at positions `where` only (the others fixed), giving its float outputs."""
    def partial(*xs):
        args = list(fixed)
        for i, x in zip(where, xs):
            args[i] = x
        return _float_outputs(fn(*args, **arguments))
    return partial


def _reverse_jvp(fn, primals, tangents):
    """PyTorch's jvp through its reverse rules (the double-vjp of torch.autograd.functional.jvp):
    the reference for rows whose torch.func.jvp (forward AD) is wrong, see KNOWN_TORCH_BUGS."""
    return torch.autograd.functional.jvp(fn, primals, tangents)


def run_jvp_case(case: Case, shapes, strided: bool, reference=None) -> None:
    """tinylab.func.jvp of the row against torch.func.jvp (or `reference`, a function with its
    signature): values and tangents (random tangents on every float input)."""
    from tinylab.func import jvp
    leaves, views, theirs_in = make_inputs(replace(case, grad=False), shapes, strided)
    ours_in = [view(leaf) for leaf, view in zip(leaves, views)]
    where = [i for i, t in enumerate(ours_in) if t.dtype.is_float]
    rng = np.random.default_rng(len(shapes) + 11)
    seeds = [rng.standard_normal(ours_in[i].shape).astype(ours_in[i].dtype.np) for i in where]
    arguments = _dim_arguments(case, shapes)
    their_outputs = _with_inputs(case.torch, theirs_in, where, arguments)(
        *[theirs_in[i] for i in where])
    if not their_outputs:  # a predicate (isnan...): no tangent; ours must have no float output
        assert not _with_inputs(case.tinylab, ours_in, where, arguments)(
            *[ours_in[i] for i in where]), f"{case.name}: float outputs PyTorch does not give"
        return
    ours = jvp(_with_inputs(case.tinylab, ours_in, where, arguments),
               tuple(ours_in[i] for i in where), tuple(Tensor(s) for s in seeds))
    theirs = (reference or torch.func.jvp)(_with_inputs(case.torch, theirs_in, where, arguments),
                            tuple(theirs_in[i] for i in where),
                            tuple(torch.from_numpy(s) for s in seeds))
    tolerance = _tolerance([t.numpy() for t in theirs_in])
    for k, (value, tangent, their_value, their_tangent) in enumerate(zip(*ours, *theirs)):
        their_tangent = their_tangent.detach().numpy()
        undefined = np.isnan(their_tangent) | np.isnan(their_value.detach().numpy())
        _compare(value.numpy(), their_value.detach().numpy(), case, f"jvp value {k}", tolerance)
        _compare(tangent.numpy(), their_tangent, case, f"jvp tangent {k}", tolerance, undefined)


def torch_loop(fn, axis: int, inputs):
    """vmap's definition: fn on each example (the slices at `axis`), the results stacked."""
    examples = [_as_list(fn(*[x.select(axis, b) for x in inputs]))
                for b in range(inputs[0].shape[axis])]
    return [torch.stack(outs) for outs in zip(*examples)]


# torch.func.vmap's refusals of a function whose result depends on a batched value's data: its
# .item(), `if t:`, or an output shape that depends on the values (nonzero, masked_select)
DATA_DEPENDENT = ("calling .item()", "data-dependent control flow", "output dynamic shape",
                  "differently shaped Tensor")


def _torch_vmap(fn, axis: int, inputs):
    """torch.func.vmap of fn; where torch's vmap has no rule for the op (or its rule rejects a
    0-d example's dim), the stacked loop. A function torch.func refuses because it reads a
    batched value (.item(), `if t:`) gives the RuntimeError instead: vmap must refuse it too."""
    try:
        return _as_list(torch.func.vmap(fn, in_dims=axis)(*inputs))
    except RuntimeError as error:
        if any(words in str(error) for words in DATA_DEPENDENT):
            return error
        return torch_loop(fn, axis, inputs)
    except (NotImplementedError, ValueError, IndexError):
        return torch_loop(fn, axis, inputs)


def run_vmap_case(case: Case, shapes, strided: bool, reference=None) -> None:
    """tinylab.func.vmap of the row over a batch of 2 examples against torch.func.vmap (or
    `reference`, as `_torch_vmap`); strided: the batch is the last axis of each input (every
    example a non-contiguous view)."""
    from tinylab.func import vmap
    examples = [make_inputs(replace(case, name=f"{case.name}#{b}", grad=False), shapes, False)[2]
                for b in range(2)]
    axis = -1 if strided else 0
    stacked = [np.ascontiguousarray(np.stack([e[i].numpy() for e in examples], axis=axis))
               for i in range(len(shapes))]
    arguments = _dim_arguments(case, shapes)
    theirs = (reference or _torch_vmap)(lambda *xs: case.torch(*xs, **arguments), axis,
                                        [torch.from_numpy(s) for s in stacked])
    mapped = vmap(lambda *xs: case.tinylab(*xs, **arguments), in_dims=axis)
    if isinstance(theirs, RuntimeError):   # reads a batched value: refused, in torch's words
        with pytest.raises(RuntimeError) as raised:
            mapped(*[Tensor(s) for s in stacked])
        assert str(raised.value).startswith("vmap: It looks like you're") and \
            "We don't support" in str(raised.value), \
            f"{case.name}: torch.func refuses ({theirs}); ours says {raised.value}"
        return
    ours = _as_list(mapped(*[Tensor(s) for s in stacked]))
    assert len(ours) == len(theirs), f"{case.name}: vmap output counts differ"
    tolerance = _tolerance(stacked)
    for k, (o, t) in enumerate(zip(ours, theirs)):
        _compare(o.numpy(), t.detach().numpy(), case, f"vmap output {k}", tolerance)
