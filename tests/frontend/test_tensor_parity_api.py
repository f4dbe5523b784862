"""Parity with PyTorch for the API added for issue 15 (tensor side): sort / argsort / topk,
nonzero / masked_select, diag / diagonal / meshgrid, isclose / copysign / logaddexp /
logcumsumexp, isinf's and gelu's arguments, dot / matmul with 1-D operands and einsum with
'...' (forward and backward), then the errors PyTorch raises for the same bad input."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

import parity_domains_api  # noqa: F401 - registers the api_ input domains
from parity_harness import Case, run_case, run_error_check, variants
from tinylab import Tensor
from tinylab.errors import DTypeError, ShapeError


def case(name, ours, theirs, shapes, kinds=("real",), **kw):
    return Case(name, ours, theirs, shapes, kinds, **kw)


def torch_sort(x, dim=-1, descending=False):
    return torch.sort(x, dim=dim, descending=descending, stable=True)


SORT_SHAPES = [((3, 4, 5),), ((1, 6),), ((0, 3),), ((),)]
SORTING = [
    case("sort", lambda x: x.sort(), torch_sort, SORT_SHAPES),
    case("sort_descending", lambda x: x.sort(descending=True),
         lambda x: torch_sort(x, descending=True), SORT_SHAPES),
    case("sort_dim0", lambda x: x.sort(0), lambda x: torch_sort(x, 0), [((5, 3),), ((1, 4),)]),
    case("sort_negative_dim", lambda x: x.sort(-2, descending=True),
         lambda x: torch_sort(x, -2, True), [((2, 5, 3),)]),
    case("sort_stable_ties", lambda x: x.sort(stable=True), torch_sort, [((4, 9),)], ("api_ties",)),
    case("sort_descending_ties", lambda x: x.sort(descending=True, stable=True),
         lambda x: torch_sort(x, descending=True), [((4, 9),)], ("api_ties",)),
    case("sort_special", lambda x: x.sort(), torch_sort, [((3, 10),)], ("api_special",), grad=False),
    case("sort_special_descending", lambda x: x.sort(descending=True),
         lambda x: torch_sort(x, descending=True), [((3, 10),)], ("api_special",), grad=False),
    case("sort_int", lambda x: x.sort(), torch_sort, [((4, 7),)], ("int",)),
    case("sort_int64", lambda x: x.sort(0), lambda x: torch_sort(x, 0), [((6, 2),)], ("int64",)),
    case("sort_uint8", lambda x: x.sort(descending=True),
         lambda x: torch_sort(x, descending=True), [((9,),)], ("uint8",)),
    case("sort_bool", lambda x: x.sort(), torch_sort, [((3, 5),)], ("bool",)),
    case("sort_half", lambda x: x.sort(), torch_sort, [((3, 5),)], ("f16",), atol=1e-3),
    case("sort_double", lambda x: x.sort(), torch_sort, [((3, 5),)], ("f64",)),
    case("argsort", lambda x: x.argsort(), lambda x: torch.argsort(x, stable=True), SORT_SHAPES),
    case("argsort_descending_ties", lambda x: x.argsort(0, descending=True),
         lambda x: torch.argsort(x, dim=0, descending=True, stable=True), [((8, 3),)], ("api_ties",)),
    case("topk", lambda x: x.topk(3), lambda x: torch.topk(x, 3), [((4, 8),), ((2, 3, 5),)]),
    case("topk_smallest", lambda x: x.topk(2, dim=0, largest=False),
         lambda x: torch.topk(x, 2, dim=0, largest=False), [((5, 4),), ((2, 1),)]),
    case("topk_all_and_none", lambda x: (x.topk(x.shape[-1])[0], x.topk(0)[0]),
         lambda x: (torch.topk(x, x.shape[-1])[0], torch.topk(x, 0)[0]), [((3, 4),), ((2, 1),)]),
    # ties: PyTorch's order among equal values is unspecified; compare the values, and that
    # each index points at its value
    case("topk_ties", lambda x: _values_and_lookup(x, *x.topk(4)),
         lambda x: _values_and_lookup(x, *torch.topk(x, 4)), [((3, 9),)], ("api_ties",), grad=False),
    case("topk_special", lambda x: _values_and_lookup(x, *x.topk(4)),
         lambda x: _values_and_lookup(x, *torch.topk(x, 4)), [((3, 10),)], ("api_special",),
         grad=False),
    case("topk_int", lambda x: _values_and_lookup(x, *x.topk(2, largest=False)),
         lambda x: _values_and_lookup(x, *torch.topk(x, 2, largest=False)), [((3, 6),)],
         ("nonzero_int",)),
    case("topk_of_padded_slice", lambda x: x[:, 1::2].pad(((0, 0), (1, 1)), value=-5.0).topk(3),
         lambda x: torch.topk(F.pad(x[:, 1::2], (1, 1), value=-5.0), 3), [((3, 9),)]),
]


def _values_and_lookup(x, values, indices):
    return values, x.gather(-1, indices)


SELECTING = [
    case("nonzero", lambda x: x.nonzero(), lambda x: torch.nonzero(x),
         [((3, 4),), ((7,),), ((),), ((0, 3),), ((2, 3, 4),)], ("api_sparse",)),
    case("nonzero_bool", lambda x: x.nonzero(), lambda x: torch.nonzero(x), [((4, 5),)],
         ("bool",)),
    case("nonzero_int", lambda x: x.nonzero(), lambda x: torch.nonzero(x), [((4, 5),)],
         ("small_int",)),
    case("nonzero_as_tuple", lambda x: x.nonzero(as_tuple=True),
         lambda x: torch.nonzero(x, as_tuple=True), [((3, 4),), ((),)], ("api_sparse",)),
    case("nonzero_all_zero", lambda x: (x * 0).nonzero(), lambda x: torch.nonzero(x * 0),
         [((3, 4),)]),
    case("masked_select", lambda x, m: x.masked_select(m), lambda x, m: x.masked_select(m),
         [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((1, 4), (3, 1)), ((0, 2), (0, 2)), ((), (2,))],
         ("real", "bool")),
    case("masked_select_int", lambda x, m: x.masked_select(m), lambda x, m: x.masked_select(m),
         [((5, 6), (5, 6))], ("int", "bool")),
    case("masked_select_then_sum", lambda x, m: (x * 2).masked_select(m > 0).sum(),
         lambda x, m: (x * 2).masked_select(m > 0).sum(), [((4, 5), (4, 5))]),
]

MATRIX = [
    case("diagonal", lambda x: x.diagonal(), lambda x: x.diagonal(),
         [((4, 4),), ((3, 5),), ((5, 2),), ((1, 1),), ((0, 3),), ((2, 3, 4),)]),
    case("diagonal_offsets", lambda x: (x.diagonal(1), x.diagonal(-2), x.diagonal(7)),
         lambda x: (x.diagonal(1), x.diagonal(-2), x.diagonal(7)), [((4, 5),), ((5, 3),)]),
    case("diagonal_dims", lambda x: x.diagonal(-1, dim1=-1, dim2=0),
         lambda x: x.diagonal(-1, dim1=-1, dim2=0), [((4, 2, 5),), ((3, 1, 3),)]),
    case("diagonal_int", lambda x: x.diagonal(), lambda x: x.diagonal(), [((4, 4),)], ("int",)),
    case("diag", lambda x: x.diag(), lambda x: torch.diag(x), [((4,),), ((1,),), ((0,),),
                                                               ((3, 5),)]),
    case("diag_offsets", lambda x: (x.diag(2), x.diag(-1)), lambda x: (x.diag(2), x.diag(-1)),
         [((3,),), ((4, 3),)]),
    case("diag_special", lambda x: x.diag(), lambda x: torch.diag(x), [((5,),)], ("api_special",),
         grad=False),
    case("diag_of_diag", lambda x: (x.diag() * 2).diag(), lambda x: (x.diag() * 2).diag(),
         [((4,),)]),
    case("meshgrid", lambda a, b: Tensor.meshgrid(a, b), lambda a, b: torch.meshgrid(
        a, b, indexing="ij"), [((3,), (4,)), ((1,), (0,)), ((), (2,))]),
    case("meshgrid_xy", lambda a, b, c: a.meshgrid(b, c, indexing="xy"),
         lambda a, b, c: torch.meshgrid(a, b, c, indexing="xy"), [((3,), (4,), (2,))]),
    case("meshgrid_list", lambda a, b: Tensor.meshgrid([a, b], indexing="xy"),
         lambda a, b: torch.meshgrid([a, b], indexing="xy"), [((2,), (5,))], ("int", "int")),
    case("meshgrid_single", lambda a: Tensor.meshgrid(a), lambda a: torch.meshgrid(
        a, indexing="ij"), [((3,),)]),
]

ELEMENTWISE = [
    case("isclose", lambda a, b: a.isclose(a + b * 1e-5), lambda a, b: a.isclose(a + b * 1e-5),
         [((4, 5), (4, 5)), ((3, 1), (1, 4)), ((0, 2), (0, 2))]),
    case("isclose_tolerances", lambda a, b: a.isclose(b, rtol=0.5, atol=0.1),
         lambda a, b: a.isclose(b, rtol=0.5, atol=0.1), [((6, 5), (6, 5))]),
    case("isclose_special", lambda a, b: (a.isclose(b), a.isclose(a), a.isclose(a, equal_nan=True)),
         lambda a, b: (a.isclose(b), a.isclose(a), a.isclose(a, equal_nan=True)),
         [((5, 6), (5, 6))], ("api_special", "api_special")),
    case("isclose_int", lambda a, b: a.isclose(b, atol=2), lambda a, b: a.isclose(b, atol=2),
         [((5, 6), (5, 6))], ("int", "int")),
    case("isclose_bool", lambda a, b: a.isclose(b), lambda a, b: a.isclose(b),
         [((4, 4), (4, 4))], ("bool", "bool")),
    case("copysign", lambda a, b: a.copysign(b), lambda a, b: torch.copysign(a, b),
         [((4, 5), (4, 5)), ((3, 1), (1, 4)), ((), ()), ((0, 2), (0, 2))]),
    case("copysign_special", lambda a, b: a.copysign(b), lambda a, b: torch.copysign(a, b),
         [((6, 5), (6, 5))], ("api_special", "api_special"), grad=False),
    case("copysign_scalar", lambda a: (a.copysign(-1.0), a.copysign(0.0), a.copysign(-0.0)),
         lambda a: (torch.copysign(a, -1.0), torch.copysign(a, 0.0), torch.copysign(a, -0.0)),
         [((3, 4),)]),
    case("copysign_int", lambda a, b: a.copysign(b), lambda a, b: torch.copysign(a, b),
         [((3, 4), (3, 4))], ("int", "real")),
    case("copysign_zero_base", lambda a, b: (a * 0).copysign(b),
         lambda a, b: torch.copysign(a * 0, b), [((3, 4), (3, 4))]),
    case("atan2", lambda a, b: a.atan2(b), lambda a, b: torch.atan2(a, b),
         [((4, 5), (4, 5)), ((3, 1), (1, 4)), ((), ()), ((0, 2), (0, 2))]),
    case("atan2_special", lambda a, b: a.atan2(b), lambda a, b: torch.atan2(a, b),
         [((6, 5), (6, 5))], ("api_special", "api_special"), grad=False),
    case("logaddexp", lambda a, b: a.logaddexp(b), lambda a, b: torch.logaddexp(a, b),
         [((4, 5), (4, 5)), ((3, 1), (1, 4)), ((), ()), ((0, 2), (0, 2))]),
    case("logaddexp_wide", lambda a, b: a.logaddexp(b), lambda a, b: torch.logaddexp(a, b),
         [((6, 5), (6, 5))], ("wide", "wide")),
    case("logaddexp_ties", lambda a: a.logaddexp(a), lambda a: torch.logaddexp(a, a),
         [((4, 5),)]),
    case("logaddexp_special", lambda a, b: a.logaddexp(b), lambda a, b: torch.logaddexp(a, b),
         [((6, 5), (6, 5))], ("api_special", "api_special"), grad=False),
    case("logaddexp_double", lambda a, b: a.logaddexp(b), lambda a, b: torch.logaddexp(a, b),
         [((3, 4), (3, 4))], ("f64", "f64")),
    case("isinf_positive", lambda x: (x.isinf(detect_negative=False),
                                      x.isinf(detect_positive=False),
                                      x.isinf(False, False)),
         lambda x: (torch.isposinf(x), torch.isneginf(x), torch.zeros_like(x, dtype=torch.bool)),
         [((5, 6),), ((),)], ("api_special",)),
    case("isinf_int", lambda x: x.isinf(detect_negative=False), lambda x: torch.isposinf(x),
         [((3, 4),)], ("int",)),
    case("gelu_none", lambda x: x.gelu(approximate="none"), lambda x: F.gelu(x),
         [((4, 5),), ((),), ((0, 3),)], ("wide",), atol=1e-5),
    case("gelu_tanh", lambda x: x.gelu(approximate="tanh"),
         lambda x: F.gelu(x, approximate="tanh"), [((4, 5),), ((),)], ("wide",)),
    case("gelu_near_zero", lambda x: x.gelu(), lambda x: F.gelu(x), [((50,),)], ("real",)),
]

SCANS = [
    case("logcumsumexp", lambda x: x.logcumsumexp(), lambda x: torch.logcumsumexp(x, 0),
         [((5, 4),), ((1, 3),), ((0, 2),), ((),)], atol=1e-5),
    case("logcumsumexp_dims", lambda x: (x.logcumsumexp(1), x.logcumsumexp(dim=-1)),
         lambda x: (torch.logcumsumexp(x, 1), torch.logcumsumexp(x, -1)), [((2, 6, 5),)],
         atol=1e-5),
    case("logcumsumexp_mixed_scale", lambda x: x.logcumsumexp(1),
         lambda x: torch.logcumsumexp(x, 1), [((3, 12),)], ("api_mixed_scale",), atol=1e-4),
    case("logcumsumexp_underflow", lambda x: x.logcumsumexp(0),
         lambda x: torch.logcumsumexp(x, 0), [((20,),)], ("api_very_negative",), atol=1e-4),
    case("logcumsumexp_long", lambda x: x.logcumsumexp(-1), lambda x: torch.logcumsumexp(x, -1),
         [((2, 700),)], ("wide",), atol=1e-4, rtol=1e-4, noncontiguous=False),
    case("logcumsumexp_special", lambda x: x.logcumsumexp(1), lambda x: torch.logcumsumexp(x, 1),
         [((6, 7),)], ("api_special",), grad=False),
    case("logcumsumexp_int", lambda x: x.logcumsumexp(), lambda x: torch.logcumsumexp(
        x.float(), 0), [((6,),)], ("int",)),
]

LINEAR_ALGEBRA = [
    case("dot_vectors", lambda a, b: a.dot(b), lambda a, b: a.dot(b),
         [((5,), (5,)), ((1,), (1,)), ((0,), (0,))]),
    case("matmul_1d_1d", lambda a, b: a @ b, lambda a, b: a @ b, [((4,), (4,)), ((0,), (0,))]),
    case("matmul_1d_batched", lambda a, b: (a @ b, b.transpose(-1, -2) @ a),
         lambda a, b: (a @ b, b.transpose(-1, -2) @ a), [((3,), (2, 3, 4)), ((2,), (1, 2, 1))]),
    case("matmul_1d_4d", lambda a, b: b @ a, lambda a, b: b @ a, [((3,), (2, 1, 4, 3))]),
    case("einsum_ellipsis_transpose", lambda x: Tensor.einsum("...ij->...ji", x),
         lambda x: torch.einsum("...ij->...ji", x), [((2, 3, 4),), ((3, 4),)]),
    case("einsum_ellipsis_leading", lambda x: Tensor.einsum("i...->...", x),
         lambda x: torch.einsum("i...->...", x), [((3, 4, 2),), ((5,),)]),
    case("einsum_ellipsis_broadcast", lambda a, b: Tensor.einsum("...i,...i->...", a, b),
         lambda a, b: torch.einsum("...i,...i->...", a, b), [((2, 1, 4), (3, 4)),
                                                              ((4,), (2, 4))]),
    case("einsum_ellipsis_middle", lambda a, b: Tensor.einsum("b...j,...jk->b...k", a, b),
         lambda a, b: torch.einsum("b...j,...jk->b...k", a, b), [((2, 3, 4), (3, 4, 5)),
                                                                 ((2, 4), (4, 3))]),
    case("einsum_ellipsis_implicit", lambda a, b: Tensor.einsum("...ij,...jk", a, b),
         lambda a, b: torch.einsum("...ij,...jk", a, b), [((2, 3, 4), (2, 4, 5))]),
    case("einsum_ellipsis_diagonal", lambda x: Tensor.einsum("...ii->...i", x),
         lambda x: torch.einsum("...ii->...i", x), [((2, 3, 3),)]),
    case("einsum_ellipsis_scalar", lambda a, b: Tensor.einsum("...,...->...", a, b),
         lambda a, b: torch.einsum("...,...->...", a, b), [((), (3,)), ((2, 3), ())]),
]

COMPOSITIONS = [
    case("sort_then_cumsum_backward", lambda x: x.sort(1)[0].cumsum(1) * x.argsort(1),
         lambda x: torch_sort(x, 1)[0].cumsum(1) * torch.argsort(x, dim=1, stable=True),
         [((3, 6),)]),
    case("diagonal_of_matmul", lambda a, b: (a @ b).diagonal(), lambda a, b: (a @ b).diagonal(),
         [((4, 3), (3, 4))]),
    case("masked_select_of_sorted", lambda x: x.sort(0)[0].masked_select(x > 0),
         lambda x: torch_sort(x, 0)[0].masked_select(x > 0), [((4, 5),)]),
    case("index_with_nonzero", lambda x: x[(x > 0).nonzero(as_tuple=True)] * 3,
         lambda x: x[(x > 0).nonzero(as_tuple=True)] * 3, [((4, 5),), ((2, 3, 2),)]),
    case("meshgrid_distances", lambda a, b: [(g - h).square().sum() for g, h in
                                              [Tensor.meshgrid(a, b)]][0],
         lambda a, b: [(g - h).square().sum() for g, h in
                       [torch.meshgrid(a, b, indexing="ij")]][0], [((3,), (4,))]),
    case("logaddexp_reduces_to_logsumexp",
         lambda a, b: (a.logaddexp(b), a.stack(b).logsumexp(0)),
         lambda a, b: (torch.logaddexp(a, b), torch.stack([a, b]).logsumexp(0)),
         [((3, 4), (3, 4))]),
]

CASES = SORTING + SELECTING + MATRIX + ELEMENTWISE + SCANS + LINEAR_ALGEBRA + COMPOSITIONS


@pytest.mark.parametrize("case,shapes,strided", variants(CASES))
def test_api_parity(case, shapes, strided):
    run_case(case, shapes, strided)


@pytest.mark.parametrize("name", ["sort", "topk", "nonzero", "diagonal", "logcumsumexp"])
def test_api_parity_on_every_backend(device, name):
    case = next(c for c in CASES if c.name == name)
    run_case(case, case.shapes[0], False)


# ---- errors: PyTorch rejects the input, and so does tinylab, when the op is built ----
V, M, T3 = Tensor([1.0, 2.0, 3.0]), Tensor(np.ones((2, 3), np.float32)), Tensor(np.ones((2, 2, 2)))
TV, TM, TT3 = torch.tensor([1.0, 2.0, 3.0]), torch.ones(2, 3), torch.ones(2, 2, 2)
I, TI = Tensor([0, 2, 1]), torch.tensor([0, 2, 1])  # noqa: E741

ERRORS = [
    ("sort_dim", lambda: V.sort(1), lambda: TV.sort(1), IndexError, ["sort", "1"]),
    ("topk_k_too_big", lambda: V.topk(4), lambda: TV.topk(4), ValueError, ["topk", "4"]),
    ("topk_k_negative", lambda: V.topk(-1), lambda: TV.topk(-1), ValueError, ["topk", "-1"]),
    ("topk_k_float", lambda: V.topk(1.5), lambda: TV.topk(1.5), TypeError, ["topk", "1.5"]),
    ("masked_select_float_mask", lambda: V.masked_select(V), lambda: TV.masked_select(TV),
     DTypeError, ["masked_select", "float32"]),
    ("masked_select_shapes", lambda: V.masked_select(Tensor([True, False])),
     lambda: TV.masked_select(torch.tensor([True, False])), ShapeError,
     ["masked_select", "(3,)", "(2,)"]),
    ("diag_3d", lambda: T3.diag(), lambda: torch.diag(TT3), ShapeError, ["diag", "(2, 2, 2)"]),
    ("diag_0d", lambda: Tensor(1.0).diag(), lambda: torch.diag(torch.tensor(1.0)), ShapeError,
     ["diag", "()"]),
    ("diagonal_same_dims", lambda: M.diagonal(0, 1, 1), lambda: TM.diagonal(0, 1, 1),
     ShapeError, ["diagonal", "dim1=1"]),
    ("diagonal_1d", lambda: V.diagonal(), lambda: TV.diagonal(), IndexError, ["diagonal", "1"]),
    ("diagonal_dim_range", lambda: M.diagonal(0, 0, 2), lambda: TM.diagonal(0, 0, 2),
     IndexError, ["diagonal", "2"]),
    ("meshgrid_2d", lambda: Tensor.meshgrid(M), lambda: torch.meshgrid(TM, indexing="ij"),
     ShapeError, ["meshgrid", "(2, 3)"]),
    ("meshgrid_indexing", lambda: V.meshgrid(V, indexing="yx"),
     lambda: torch.meshgrid(TV, TV, indexing="yx"), ValueError, ["meshgrid", "'yx'"]),
    ("meshgrid_dtypes", lambda: V.meshgrid(I), lambda: torch.meshgrid(TV, TI, indexing="ij"),
     DTypeError, ["meshgrid", "int32"]),
    ("meshgrid_empty", lambda: Tensor.meshgrid([]), lambda: torch.meshgrid([], indexing="ij"),
     ValueError, ["meshgrid", "non-empty"]),
    ("isclose_dtypes", lambda: I.isclose(V), lambda: torch.isclose(TI, TV), DTypeError,
     ["isclose", "int32", "float32"]),
    ("isclose_negative_rtol", lambda: V.isclose(V, rtol=-1.0),
     lambda: torch.isclose(TV, TV, rtol=-1.0), ValueError, ["isclose", "rtol=-1.0"]),
    ("gelu_approximate", lambda: V.gelu(approximate="fast"),
     lambda: F.gelu(TV, approximate="fast"), ValueError, ["gelu", "'fast'"]),
    ("dot_0d", lambda: Tensor(2.0).dot(V), lambda: torch.tensor(2.0).dot(TV), ShapeError,
     ["dot", "0-D"]),
    ("dot_lengths", lambda: V.dot(Tensor([1.0, 2.0])), lambda: TV.dot(torch.tensor([1.0, 2.0])),
     ShapeError, ["dot", "3", "2"]),
    ("matmul_0d", lambda: Tensor(2.0) @ V, lambda: torch.tensor(2.0) @ TV, ShapeError,
     ["matmul", "()", "(3,)"]),
    ("matmul_1d_lengths", lambda: V @ Tensor([1.0, 2.0]), lambda: TV @ torch.tensor([1.0, 2.0]),
     ShapeError, ["matmul", "(3,)", "(2,)"]),
    ("einsum_ellipsis_twice", lambda: Tensor.einsum("......->", M),
     lambda: torch.einsum("......->", TM), ValueError, ["einsum", "..."]),
    ("one_hot_negative", lambda: Tensor([-1, 2]).one_hot(3),
     lambda: F.one_hot(torch.tensor([-1, 2]), 3), ValueError, ["one_hot", "-1"]),
    ("one_hot_too_large", lambda: Tensor([5, 2]).one_hot(3),
     lambda: F.one_hot(torch.tensor([5, 2]), 3), ValueError, ["one_hot", "num_classes=3", "5"]),
    ("one_hot_bool", lambda: Tensor([True, False]).one_hot(3),
     lambda: F.one_hot(torch.tensor([True, False]), 3), TypeError, ["one_hot", "bool"]),
    ("one_hot_float_classes", lambda: I.one_hot(3.0), lambda: F.one_hot(TI.long(), 3.0),
     TypeError, ["one_hot", "3.0"]),
    ("one_hot_empty", lambda: Tensor(np.zeros(0, np.int32)).one_hot(),
     lambda: F.one_hot(torch.zeros(0, dtype=torch.long)), ValueError, ["one_hot", "empty"]),
    ("one_hot_minus_two", lambda: I.one_hot(-2), lambda: F.one_hot(TI, -2), ValueError,
     ["one_hot", "-2"]),
    ("stack_empty", lambda: Tensor.stack([]), lambda: torch.stack([]), ValueError,
     ["stack", "non-empty"]),
    ("stack_shapes", lambda: Tensor.stack([V, Tensor([1.0])]),
     lambda: torch.stack([TV, torch.tensor([1.0])]), ShapeError, ["stack", "(3,)", "(1,)"]),
    ("stack_dim", lambda: Tensor.stack([V, V], dim=-3), lambda: torch.stack([TV, TV], dim=-3),
     IndexError, ["stack", "-3"]),
    ("linspace_float_steps", lambda: Tensor.linspace(0, 1, 2.5),
     lambda: torch.linspace(0, 1, 2.5), TypeError, ["linspace", "2.5"]),
    ("linspace_bool_steps", lambda: Tensor.linspace(0, 1, True),
     lambda: torch.linspace(0, 1, True), TypeError, ["linspace", "True"]),
    ("linspace_negative_steps", lambda: Tensor.linspace(0, 1, -1),
     lambda: torch.linspace(0, 1, -1), ValueError, ["linspace", "-1"]),
    ("linspace_1d_start", lambda: Tensor.linspace(Tensor([0.0]), 1, 3),
     lambda: torch.linspace(torch.tensor([0.0]), 1, 3), ShapeError, ["linspace", "start"]),
    ("linspace_string", lambda: Tensor.linspace("a", 1, 3), lambda: torch.linspace("a", 1, 3),
     TypeError, ["linspace", "'a'"]),
    ("linspace_bool_dtype", lambda: Tensor.linspace(0, 1, 3, dtype="bool"),
     lambda: torch.linspace(0, 1, 3, dtype=torch.bool), NotImplementedError,
     ["linspace", "bool"]),
    ("div_rounding_mode", lambda: V.div(V, rounding_mode="bogus"),
     lambda: TV.div(TV, rounding_mode="bogus"), ValueError, ["div", "'bogus'"]),
    ("div_rounding_mode_none_string", lambda: V.div(V, rounding_mode="none"),
     lambda: TV.div(TV, rounding_mode="none"), ValueError, ["div", "'none'"]),
    ("div_int_by_zero", lambda: I.div(0, rounding_mode="floor"),
     lambda: TI.div(0, rounding_mode="floor"), ZeroDivisionError, ["div", "zero"]),
    ("div_trunc_int_by_zero", lambda: I.div(0, rounding_mode="trunc"),
     lambda: TI.div(0, rounding_mode="trunc"), ZeroDivisionError, ["div", "zero"]),
    ("div_bool_floor", lambda: Tensor([True]).div(Tensor([True]), rounding_mode="floor"),
     lambda: torch.tensor([True]).div(torch.tensor([True]), rounding_mode="floor"),
     DTypeError, ["div", "bool"]),
]


@pytest.mark.parametrize("name,ours,theirs,error,words", ERRORS, ids=[e[0] for e in ERRORS])
def test_api_errors_match_pytorch(name, ours, theirs, error, words):
    run_error_check(name, ours, theirs, error, words, reads_data=name in READS_DATA)


READS_DATA = {"one_hot_negative", "one_hot_too_large"}  # PyTorch checks class values too


def test_one_hot_checks_values_only_outside_jit():
    """one_hot reads its input's smallest and largest class to check them (as PyTorch does);
    inside a TinyJit capture the values are not known yet, so the check is skipped there."""
    from tinylab import TinyJit
    labels = Tensor([0, 3, 1])
    np.testing.assert_array_equal(labels.one_hot(4).numpy(), F.one_hot(torch.tensor([0, 3, 1]),
                                                                        4).numpy())

    @TinyJit
    def encode(y):
        return y.one_hot(4).realize()
    for _ in range(3):
        out = encode(Tensor([2, 0, 1]))
    np.testing.assert_array_equal(out.numpy(), np.eye(4, dtype=np.int32)[[2, 0, 1]])


def test_nonzero_reads_one_count():
    """nonzero realizes the count (one number) before building its output, and cannot be
    captured by TinyJit (the count would be frozen)."""
    from tinylab import TinyJit
    from tinylab.errors import JitError
    x = Tensor([[0.0, 1.0], [2.0, 0.0]])
    np.testing.assert_array_equal(x.nonzero().numpy(), [[0, 1], [1, 0]])

    @TinyJit
    def positions(t):
        return t.nonzero().realize()
    with pytest.raises(JitError):
        for _ in range(3):
            positions(Tensor([[0.0, 1.0], [2.0, 0.0]]))
