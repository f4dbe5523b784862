"""The api-surface methods (sort/argsort/topk, nonzero/masked_select, diag/diagonal/meshgrid,
isclose/copysign/logaddexp/logcumsumexp, pooling 1d/3d, interpolate, nll_loss) at the edges the
harness adds to test_tensor_parity_api*.py's rows: `dim=` with the same dim counted from the end,
0-d / size-1 / non-square inputs, the special and extreme points, and float16/float64/int/bool."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

import parity_domains_api  # noqa: F401 - registers the api_ input domains
from parity_harness import DTYPES, SPECIAL, Case, run_case, variants
from test_tensor_parity_functional import _window_amax  # tied maxima share the gradient
from tinylab import Tensor

FLOATS = (("f16",), ("f64",))
EVERY = SPECIAL + DTYPES + (("int64",), ("uint8",))


def case(name, ours, theirs, shapes, kinds=("real",), **kw):
    return Case(name, ours, theirs, shapes, kinds, **kw)


def _lookup(x, values, indices, dim):
    """topk's values, and x read at its indices: equal under ties whichever index is chosen."""
    return values, x.gather(dim, indices)


SORTING = [
    case("sort_dim", lambda x, dim: x.sort(dim), lambda x, dim: torch.sort(x, dim=dim, stable=True),
         [((3, 4, 5),), ((),), ((1, 7),), ((0, 2, 3),)], dim=1, also=EVERY,
         covers=("sort",)),
    case("sort_descending_dim", lambda x, dim: x.sort(dim, descending=True, stable=True),
         lambda x, dim: torch.sort(x, dim=dim, descending=True, stable=True),
         [((5, 3),), ((6,),)], dim=0, also=SPECIAL + FLOATS, covers=("sort",)),
    case("argsort_dim", lambda x, dim: x.argsort(dim, stable=True),
         lambda x, dim: torch.argsort(x, dim=dim, stable=True),
         [((4, 6),), ((),), ((1, 1),)], dim=0, also=EVERY, covers=("argsort",)),
    case("topk_dim", lambda x, dim: _lookup(x, *x.topk(2, dim), dim),
         lambda x, dim: _lookup(x, *torch.topk(x, 2, dim), dim),
         [((4, 5, 3),), ((2, 3),)], dim=1, also=FLOATS + (("int",), ("int64",)),
         covers=("topk",)),
    case("topk_dim_special", lambda x, dim: _lookup(x, *x.topk(3, dim, largest=False), dim),
         lambda x, dim: _lookup(x, *torch.topk(x, 3, dim, largest=False), dim),
         [((5, 4),)], ("special",), dim=0, grad=False, also=(("extreme",),), covers=("topk",)),
    case("topk_0d", lambda x: (x.topk(1)[0], x.topk(0)[0]),
         lambda x: (torch.topk(x, 1)[0], torch.topk(x, 0)[0]), [((),)], covers=("topk",)),
]

SELECTING = [
    case("nonzero_dtypes", lambda x: x.nonzero(), torch.nonzero, [((4, 5),), ((1,),)],
         ("special",), also=(("extreme",), ("f16",), ("f64",), ("int64",), ("uint8",)),
         covers=("nonzero",)),
    case("masked_select_dtypes", lambda x, m: x.masked_select(m),
         lambda x, m: x.masked_select(m), [((4, 5), (4, 5)), ((1, 5), (4, 1))], ("special", "bool"),
         also=(("extreme", "bool"), ("f16", "bool"), ("f64", "bool"), ("int64", "bool"),
               ("bool", "bool")), covers=("masked_select",)),
]

MATRIX = [
    case("diagonal_dtypes", lambda x: (x.diagonal(), x.diagonal(-1, -1, -2)),
         lambda x: (x.diagonal(), x.diagonal(-1, -1, -2)), [((3, 4, 5),), ((1, 1, 1),)],
         also=EVERY, covers=("diagonal",)),
    case("diag_dtypes", lambda x: x.diag(1), lambda x: torch.diag(x, 1),
         [((4,),), ((2, 5),), ((5, 2),)], also=EVERY, covers=("diag",)),
    case("meshgrid_dtypes", lambda a, b: a.meshgrid(b), lambda a, b: torch.meshgrid(
        a, b, indexing="ij"), [((3,), (1,)), ((), ())], also=(("special", "special"),
                                                             ("f16", "f16"), ("bool", "bool")),
         covers=("meshgrid",)),
]

ELEMENTWISE = [
    case("isclose_extreme", lambda a, b: (a.isclose(b), a.isclose(a * 1.00001)),
         lambda a, b: (a.isclose(b), a.isclose(a * 1.00001)), [((4, 5), (4, 5)), ((), ())],
         ("extreme", "extreme"), also=(("special", "extreme"), ("f64", "f64"), ("f16", "f16")),
         covers=("isclose",)),
    # PyTorch's gradient of copysign(a, b) is result / a: NaN at a = ±inf, where tinylab gives
    # ±1 (the limit). The infinite magnitudes run without gradients, finite ones with.
    case("copysign_edges", lambda a, b: a.copysign(b), torch.copysign,
         [((4, 5), (4, 5)), ((1, 5), (3, 1))], ("special_finite", "special"),
         also=(("extreme", "special"), ("f16", "f16"), ("f64", "f64"), ("int", "int"),
               ("bool", "real")), covers=("copysign",)),
    case("copysign_infinite", lambda a, b: a.copysign(b), torch.copysign, [((5, 4), (5, 4))],
         ("special", "special"), grad=False, covers=("copysign",)),
    case("logaddexp_edges", lambda a, b: a.logaddexp(b), torch.logaddexp,
         [((4, 5), (4, 5)), ((1, 5), (3, 1))], ("special", "special"),
         also=(("extreme", "extreme"), ("extreme", "special"), ("f16", "f16"), ("f64", "f64")),
         covers=("logaddexp",)),
    case("logcumsumexp_dim", lambda x, dim: x.logcumsumexp(dim=dim),
         lambda x, dim: torch.logcumsumexp(x, dim), [((3, 6, 4),), ((),), ((1, 5),), ((0, 4),)],
         dim=1, atol=1e-5, also=(("special",),) + FLOATS, covers=("logcumsumexp",)),
    # values: PyTorch's. Its gradient there is wrong (1 for x = [1e30, 1, 2] weighted [1, 2, 3],
    # exactly 6); test_logcumsumexp_gradient_at_extreme_values checks ours against float64 math
    case("logcumsumexp_extreme", lambda x, dim: x.logcumsumexp(dim=dim),
         lambda x, dim: torch.logcumsumexp(x, dim), [((3, 6, 4),)], ("extreme",), dim=1,
         grad=False, covers=("logcumsumexp",)),
]

POOLING = [
    case("max_pool1d_edges", lambda x: x.max_pool1d(3, 2, padding=1),
         lambda x: F.max_pool1d(x, 3, 2, padding=1), [((2, 3, 9),), ((1, 1, 3),)],
         also=SPECIAL + FLOATS, covers=("max_pool1d",)),
    case("avg_pool1d_edges", lambda x: x.avg_pool1d(2, ceil_mode=True),
         lambda x: F.avg_pool1d(x, 2, ceil_mode=True), [((2, 3, 7),), ((0, 2, 4),)],
         also=SPECIAL + FLOATS, covers=("avg_pool1d",)),
    case("max_pool3d_edges", lambda x: x.max_pool3d(2), lambda x: F.max_pool3d(x, 2),
         [((1, 2, 4, 4, 6),), ((0, 1, 2, 2, 2),)], also=SPECIAL + FLOATS,
         covers=("max_pool3d",)),
    case("max_pool3d_ties", lambda x: x.max_pool3d(2, padding=1),
         lambda x: _window_amax(x, 2, 2, 1), [((1, 2, 4, 4, 6),)], ("ties",),
         covers=("max_pool3d",)),
    case("avg_pool3d_edges", lambda x: x.avg_pool3d((1, 2, 3)),
         lambda x: F.avg_pool3d(x, (1, 2, 3)), [((1, 2, 3, 4, 6),)],
         also=SPECIAL + (("f64",),),  # PyTorch has no float16 avg_pool3d on the CPU
         covers=("avg_pool3d",)),
    case("interpolate_edges", lambda x: (x.interpolate(size=(3, 5), mode="bilinear"),
                                         x.interpolate(scale_factor=2)),
         lambda x: (F.interpolate(x, size=(3, 5), mode="bilinear"),
                    F.interpolate(x, scale_factor=2)), [((1, 2, 4, 3),), ((2, 1, 1, 1),)],
         also=SPECIAL + FLOATS, covers=("interpolate",)),
    case("nll_loss_edges", lambda x, y: (x.nll_loss(y), x.nll_loss(y, reduction="none")),
         lambda x, y: (F.nll_loss(x, y.long()), F.nll_loss(x, y.long(), reduction="none")),
         [((6, 4), (6,)), ((1, 4), (1,)), ((0, 4), (0,))], ("real", "api_label4"),
         also=(("extreme", "api_label4"), ("special", "api_label4"), ("f64", "api_label4")),
         covers=("nll_loss",)),
]

CASES = SORTING + SELECTING + MATRIX + ELEMENTWISE + POOLING


@pytest.mark.parametrize("case,shapes,strided", variants(CASES))
def test_api_edges(case, shapes, strided):
    run_case(case, shapes, strided)


def test_logcumsumexp_gradient_at_extreme_values():
    """d/dx_j sum_i w_i y_i = sum_{i >= j} w_i softmax(x[:i+1])_j, in float64 (each prefix
    shifted by its maximum, so 3e38 twice weighs a half each)."""
    weights = np.array([1.0, 2.0, 3.0])
    for values in ([1e30, 1.0, 2.0], [3e38, 3e38, 1.0], [1e-40, 1e7, 1.0], [-1e30, 1.0, 88.8]):
        x = Tensor(np.array(values, np.float32), requires_grad=True)
        (x.logcumsumexp() * Tensor(weights.astype(np.float32))).sum().backward()
        exact = np.array(values, np.float32).astype(np.float64)
        expected = np.zeros(3)
        for i in range(3):
            shifted = np.exp(exact[:i + 1] - exact[:i + 1].max())
            expected[:i + 1] += weights[i] * shifted / shifted.sum()
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5, err_msg=str(values))
