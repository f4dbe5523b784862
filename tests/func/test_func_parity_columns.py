"""The parity harness's jvp and vmap columns: every parity row with a gradient (float inputs), in
every parity module, run under tinylab.func.jvp against torch.func.jvp and under tinylab.func.vmap
against torch.func.vmap. The elementwise rows run on their first shape set, on each 0-d / size-1
/ size-0 shape set and with non-contiguous inputs, in both columns. The other modules' rows run on
their first shape set in both columns, and each row on one more of its variants (0-d, size-1,
size-0 or non-contiguous, in turn) in one column (alternating), so every kind of input meets
every module in both columns while the time stays moderate. Every eval-mode nn layer row runs
under both too (test_layer_jvp_and_vmap_columns).

`make test` runs every row on its first shape set in both columns, and a sample of the variants:
each elementwise row one variant in one column (alternating, like the other modules), and every
VARIANT_STRIDE-th row of the other modules its variant (a cold compile of every variant costs
minutes; the kinds of input still all meet every module: test_the_columns_cover_...).
`make fuzz` (FUZZ_EXAMPLES set) runs every variant listed above."""
import importlib
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tinylab import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))
from parity_harness import (DOMAINS, Case, LayerCase, _compare, _reverse_jvp,  # noqa: E402
                            _torch_vmap, run_jvp_case, run_vmap_case, torch_loop)

FULL = ["test_tensor_parity_elementwise"]
# test_tensor_parity_points holds no new row: the elementwise rows again (same names) and the
# float32 edges of the transcendentals (special points); creation rows take no tensor input
SPREAD = ["test_tensor_parity_operators", "test_tensor_parity_reduce",
          "test_tensor_parity_dims", "test_tensor_parity_movement", "test_tensor_parity_views",
          "test_tensor_parity_nn", "test_tensor_parity_functional", "test_tensor_parity_api",
          "test_tensor_parity_api_nn", "test_tensor_parity_api_edges", "test_tensor_parity_issue29"]
# special points (0 * inf, ties, overflow) are the reverse-mode rows' business: composite rules
SPECIAL_POINTS = {"special", "extreme", "special_finite", "special_f64", "large", "wide", "f16",
                  "ties", "edges"}
# integer and bool inputs only: no tangent goes in (the row's gradient flag is vacuous)
NO_GRADIENT = {"int", "nonzero_int", "small_int", "shift", "uint8", "int64", "bool", "index2",
               "index3", "index4", "index5"}
# rows where torch.func itself is wrong, checked against vmap's and jvp's definitions instead
# (test_the_known_torch_bugs_are_still_there keeps this list honest)
KNOWN_TORCH_BUGS = {
    # torch.func.jvp (forward AD) of scatter_reduce(..., "prod") gives a zero tangent; central
    # differences and PyTorch's own reverse rules agree with each other, and with tinylab
    ("jvp", "scatter_reduce_prod_self"): _reverse_jvp,
    ("jvp", "scatter_reduce_prod_noself"): _reverse_jvp,
    # torch.func.jvp of logcumsumexp loses the tangent where the running sum is dominated by
    # a later element (x = [-1000, 0, 1], tangent ones: it gives [0, 1, 1], the slope is 1) and
    # raises on a size-0 dim
    **{("jvp", name): _reverse_jvp for name in ("logcumsumexp", "logcumsumexp_mixed_scale",
                                                 "logcumsumexp_underflow")},
    # torch.func.jvp of `2 + x` and `2 / x` for a 0-d float32 x gives a float64 tangent (the
    # output is float32, as PyTorch's own reverse rules and tinylab give)
    ("jvp", "radd"): _reverse_jvp,
    ("jvp", "rtruediv"): _reverse_jvp,
    # torch.func.vmap of roll(shifts) without dims over 0-d examples rolls across the batch
    ("vmap", "roll_flat"): torch_loop,
    # torch.func.vmap refuses masked_select by a batched mask even where size= fixes the
    # output's shape; tinylab batches it
    ("vmap", "masked_select_size"): torch_loop,
}
# rows whose output shape depends on the input's values (nonzero, masked_select by a mask made
# from the input): a transform traces the function once on stand-ins with no data, so jvp and
# vmap refuse them with torch.func's kind of message (torch.func.vmap refuses them too, or has
# no batching rule; torch.func.jvp runs them eagerly)
JVP_VALUE_DEPENDENT = {"masked_select_then_sum", "masked_select_of_sorted", "index_with_nonzero"}
VMAP_VALUE_DEPENDENT = JVP_VALUE_DEPENDENT | {"nonzero", "nonzero_as_tuple", "nonzero_all_zero",
                                              "nonzero_bool", "masked_select", "masked_select_int"}


def _cases(name: str) -> list[Case]:
    module = importlib.import_module(name)
    return module.CASES if hasattr(module, "CASES") else module.NAMES + module.POOLING


def _rows(modules) -> list[Case]:
    rows, seen = [], set()
    for name in modules:
        for c in _cases(name):
            if c.grad and not c.marks and not set(c.kinds) & SPECIAL_POINTS \
                    and not set(c.kinds) <= NO_GRADIENT and c.name not in seen:
                seen.add(c.name)
                rows.append(c)
    return rows


def _edge(shapes) -> bool:
    return any(len(s) == 0 or 0 in s or 1 in s for s in shapes)


def _variants(case: Case) -> list:
    """(shape set, strided) beyond the first shape set: the edge shape sets, non-contiguous."""
    return [(s, False) for s in case.shapes[1:] if _edge(s)] + [(case.shapes[0], True)]


def _param(case: Case, shapes, strided: bool):
    label = "strided" if strided else str(shapes)
    return pytest.param(case, shapes, strided, id=f"{case.name}[{label}]")


EVERY_VARIANT = "FUZZ_EXAMPLES" in os.environ   # make fuzz: all of them
VARIANT_STRIDE = 1 if EVERY_VARIANT else 2       # of the other modules' rows, those with a variant


def _kinds(shapes, strided: bool) -> set:
    """Which kinds of input a variant gives: 0-d, size-0, size-1, strided."""
    return ({"strided"} if strided else set()) | {kind for shape in shapes for kind, has in (
        ("0-d", len(shape) == 0), ("size-0", 0 in shape), ("size-1", 1 in shape)) if has}


def _one_variant(case: Case, index: int, column: int, stride: int, met: dict) -> list:
    """The variant row `index` runs in `column` (rows alternate columns; every `stride`-th
    pair of rows has one): of the row's variants, the one whose kinds of input the module has
    met least so far (`met` counts them)."""
    if index % 2 != column or (index // 2) % stride:
        return []
    variants = _variants(case)
    chosen = min(variants, key=lambda v: min(met.get(k, 0) for k in _kinds(*v)))
    for kind in _kinds(*chosen):
        met[kind] = met.get(kind, 0) + 1
    return [_param(case, *chosen)]


def _top_up(rows: list, met: dict) -> list:
    """One more variant for each kind of input the rows offer that the sample missed."""
    out = []
    for case in rows:
        for variant in _variants(case):
            if _kinds(*variant) - met.keys():
                met.update(dict.fromkeys(_kinds(*variant), 1))
                out.append(_param(case, *variant))
    return out


def _params(column: int) -> list:
    """column 0: jvp, 1: vmap."""
    full, params, met = _rows(FULL), [], {}
    for index, case in enumerate(full):
        params.append(_param(case, case.shapes[0], False))
        params += [_param(case, s, strided) for s, strided in _variants(case)] if EVERY_VARIANT \
            else _one_variant(case, index, column, 1, met)
    names = {c.name for c in full}
    for module in SPREAD:   # each module meets each kind of input
        met, rows = {}, [c for c in _rows([module]) if c.name not in names]
        names |= {c.name for c in rows}
        for index, case in enumerate(rows):
            params.append(_param(case, case.shapes[0], False))
            params += _one_variant(case, index, column, VARIANT_STRIDE, met)
        params += _top_up(rows[column::2], met)
    return params


def _refused(fn, axis, inputs):
    return RuntimeError("the output's shape depends on the values")


@pytest.mark.parametrize("case,shapes,strided", _params(0))
def test_jvp_column(case, shapes, strided):
    if case.name in JVP_VALUE_DEPENDENT:
        with pytest.raises(RuntimeError, match="^jvp: It looks like you're .* We don't support"):
            run_jvp_case(case, shapes, strided)
        return
    run_jvp_case(case, shapes, strided, KNOWN_TORCH_BUGS.get(("jvp", case.name)))


@pytest.mark.parametrize("case,shapes,strided", _params(1))
def test_vmap_column(case, shapes, strided):
    if case.name in VMAP_VALUE_DEPENDENT:   # the harness checks that tinylab refuses it
        run_vmap_case(case, shapes, strided, _refused)
        return
    run_vmap_case(case, shapes, strided, KNOWN_TORCH_BUGS.get(("vmap", case.name)))


def test_the_columns_cover_every_module_and_kind_of_input():
    for column in (0, 1):
        chosen = [p.values for p in _params(column)]
        for module in FULL + SPREAD:
            names = {c.name for c in _rows([module])}
            assert any(case.name in names for case, _, _ in chosen), module
        assert any(strided for _, _, strided in chosen)
        for kind in (lambda s: len(s) == 0, lambda s: 0 in s, lambda s: 1 in s):
            assert any(any(kind(s) for s in shapes) for _, shapes, _ in chosen)
    # the sample of variants: each module meets (in one column or the other) every kind of
    # input its rows' variants offer
    chosen = [p.values for column in (0, 1) for p in _params(column)]
    for module in FULL + SPREAD:
        rows = _rows([module])
        offered = set().union(*(_kinds(*v) for c in rows for v in _variants(c)))
        names = {c.name for c in rows}
        met = set().union(*(_kinds(shapes, strided) for case, shapes, strided in chosen
                            if case.name in names and (strided or shapes != case.shapes[0])))
        assert offered <= met, f"{module}: no {sorted(offered - met)} variant in either column"


@pytest.mark.parametrize("column, name", sorted(KNOWN_TORCH_BUGS))
def test_the_known_torch_bugs_are_still_there(column, name):
    """Each KNOWN_TORCH_BUGS row, checked against torch.func itself, fails on one of its shape
    sets (when PyTorch fixes one, its row goes back to torch.func)."""
    case = next(c for c in _rows(FULL + SPREAD) if c.name == name)
    run = run_jvp_case if column == "jvp" else run_vmap_case
    failures = 0
    for shapes, strided in [(case.shapes[0], False)] + _variants(case):
        try:
            run(case, shapes, strided)
        except (AssertionError, RuntimeError, IndexError, pytest.fail.Exception):
            failures += 1
    assert failures, f"torch.func agrees with tinylab on {name} now: drop it from the list"


# ---- nn layers: each eval-mode layer row under jvp (input tangents) and vmap (a batch of two
# of the row's inputs), against torch.func with the same weights ----
LAYER_MODULES = ["test_tensor_parity_layers", "test_tensor_parity_issue29"]


def _layer_rows() -> list:
    rows = []
    for name in LAYER_MODULES:
        module = importlib.import_module(name)
        rows += [c for c in getattr(module, "LAYERS", getattr(module, "CASES", []))
                 if isinstance(c, LayerCase) and not c.train]
    return rows


def _layers(case: LayerCase, seed: int):
    """(ours, theirs): the torch module with perturbed weights, copied into the tinylab layer."""
    from tinylab.nn.state import load_state_dict
    theirs = case.torch().eval()
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for value in theirs.state_dict().values():
            if value.dtype.is_floating_point:
                value.add_(torch.from_numpy(rng.uniform(0.1, 0.5, tuple(value.shape))
                                            .astype(np.float32)))
    ours = case.tinylab()
    load_state_dict(ours, {k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _layer_inputs(case: LayerCase, shapes, rng) -> list[np.ndarray]:
    kinds = case.kinds if len(case.kinds) == len(shapes) else case.kinds * len(shapes)
    return [np.asarray(DOMAINS[kind](rng, shape)) for kind, shape in zip(kinds, shapes)]


def _outputs(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("case", _layer_rows(), ids=lambda c: c.name)
def test_layer_jvp_and_vmap_columns(case):
    from tinylab.func import jvp, vmap
    rng = np.random.default_rng(len(case.name))
    ours, theirs = _layers(case, len(case.name))
    call = case.call or (lambda layer, *args: layer(*args))
    shapes = case.shapes[0]
    check = Case(case.name, None, None, [], atol=case.atol, rtol=case.rtol)
    # vmap: two examples of the row's inputs, stacked on a new axis 0
    stacked = [np.stack([a, b]) for a, b in zip(_layer_inputs(case, shapes, rng),
                                                _layer_inputs(case, shapes, rng))]
    with torch.no_grad():   # torch.func.vmap, or the loop where it has no rule (lstm_cell)
        expected = _torch_vmap(lambda *xs: call(theirs, *xs), 0,
                               [torch.from_numpy(s) for s in stacked])
    got = _outputs(vmap(lambda *xs: call(ours, *xs))(*[Tensor(s) for s in stacked]))
    for k, (o, t) in enumerate(zip(got, expected)):
        _compare(o.numpy(), t.numpy(), check, f"vmap output {k}")
    # jvp: random tangents on every float input
    primals = _layer_inputs(case, shapes, rng)
    if not all(p.dtype.kind == "f" for p in primals):
        return   # index inputs (Embedding): no tangent goes in
    tangents = [rng.standard_normal(p.shape).astype(np.float32) for p in primals]
    values, pushed = jvp(lambda *xs: tuple(_outputs(call(ours, *xs))),
                         tuple(Tensor(p) for p in primals), tuple(Tensor(t) for t in tangents))
    their_values, their_pushed = torch.func.jvp(
        lambda *xs: tuple(_outputs(call(theirs, *xs))),
        tuple(torch.from_numpy(p) for p in primals), tuple(torch.from_numpy(t) for t in tangents))
    for k, (o, t) in enumerate(zip(values + pushed, their_values + their_pushed)):
        _compare(o.numpy(), t.detach().numpy(), check, f"jvp output {k}")
