"""Parity with PyTorch for the reduce methods (sum, prod, max, min, mean, var, std, argmax,
any/all, logsumexp, cumulative ops, softmax) with axis/dim and keepdim, forward and backward."""
import pytest
import torch

from parity_harness import Case, run_case, variants

SHAPES = [((3, 4, 5),), ((1, 6),), ((2, 0),)]
NONEMPTY = [((3, 4, 5),), ((1, 6),)]


def case(name, ours, theirs, shapes=SHAPES, kinds=("real",), **kw):
    return Case(name, ours, theirs, shapes, kinds, **kw)


SUMS = [
    case("sum_all", lambda x: x.sum(), lambda x: x.sum()),
    case("sum_axis", lambda x: x.sum(1), lambda x: x.sum(1)),
    case("sum_dim_keepdim", lambda x: x.sum(dim=-1, keepdim=True),
         lambda x: x.sum(dim=-1, keepdim=True)),
    case("sum_axes", lambda x: x.sum(axis=(0, -1)), lambda x: x.sum(dim=(0, -1))),
    case("sum_int", lambda x: x.sum(0), lambda x: x.sum(0), kinds=("int",)),
    case("sum_bool", lambda x: x.sum(), lambda x: x.sum(), kinds=("bool",)),
    case("sum_uint8", lambda x: x.sum(), lambda x: x.sum(), kinds=("uint8",),
         int_as_default=True),
    case("sum_half", lambda x: x.sum(-1), lambda x: x.sum(-1), kinds=("f16",), atol=1e-2),
    case("sum_dtype", lambda x: x.sum(dtype="float64"), lambda x: x.sum(dtype=torch.float64)),
    case("mean_all", lambda x: x.mean(), lambda x: x.mean()),
    case("mean_axis_keepdim", lambda x: x.mean(axis=1, keepdim=True),
         lambda x: x.mean(1, keepdim=True)),
    case("mean_int", lambda x: x.mean(), lambda x: x.float().mean(), kinds=("int",)),
    case("prod_axis", lambda x: x.prod(-1), lambda x: x.prod(-1), atol=1e-4),
    case("prod_all", lambda x: x.prod(), lambda x: x.prod(), shapes=[((2, 3),), ((1, 4),)],
         atol=1e-4),
    case("prod_int", lambda x: x.prod(0), lambda x: x.prod(0), kinds=("int",), grad=False),
    case("var", lambda x: x.var(), lambda x: x.var(), NONEMPTY),
    case("var_axis", lambda x: x.var(axis=0, keepdim=True), lambda x: x.var(0, keepdim=True),
         [((3, 4, 5),), ((2, 6),)]),
    case("var_correction0", lambda x: x.var(-1, correction=0), lambda x: x.var(-1, correction=0),
         NONEMPTY),
    case("std", lambda x: x.std(1), lambda x: x.std(1), [((3, 4, 5),), ((2, 6),)]),
    case("std_correction0", lambda x: x.std(correction=0), lambda x: x.std(correction=0),
         NONEMPTY),
    case("var_mean", lambda x: x.var_mean(1), lambda x: torch.var_mean(x, 1),
         [((3, 4, 5),), ((2, 6),)]),
    case("std_mean", lambda x: x.std_mean(), lambda x: torch.std_mean(x), NONEMPTY),
]

EXTREMES = [
    case("max_all", lambda x: x.max(), lambda x: x.max(), NONEMPTY),
    case("max_axis", lambda x: x.max(1), lambda x: x.max(1).values, NONEMPTY),
    case("max_keepdim", lambda x: x.max(axis=-1, keepdim=True),
         lambda x: x.max(-1, keepdim=True).values, NONEMPTY),
    case("max_int", lambda x: x.max(0), lambda x: x.max(0).values, NONEMPTY, ("int",)),
    case("max_ties", lambda x: x.max(1), lambda x: x.amax(1), NONEMPTY, ("halves",)),
    case("min_all", lambda x: x.min(), lambda x: x.min(), NONEMPTY),
    case("min_axis", lambda x: x.min(dim=0), lambda x: x.min(0).values, NONEMPTY),
    case("min_int", lambda x: x.min(-1), lambda x: x.min(-1).values, NONEMPTY, ("int",)),
    case("min_uint8", lambda x: x.min(), lambda x: x.min(), NONEMPTY, ("uint8",)),
    case("min_bool", lambda x: x.min(1), lambda x: x.min(1).values, NONEMPTY, ("bool",)),
    case("amax", lambda x: x.amax((0, 1)), lambda x: x.amax((0, 1)), NONEMPTY),
    case("amin", lambda x: x.amin(-1, keepdim=True), lambda x: x.amin(-1, keepdim=True),
         NONEMPTY),
    case("argmax", lambda x: x.argmax(), lambda x: x.argmax(), NONEMPTY),
    case("argmax_axis", lambda x: x.argmax(1), lambda x: x.argmax(1), NONEMPTY),
    case("argmax_keepdim", lambda x: x.argmax(dim=-1, keepdim=True),
         lambda x: x.argmax(-1, keepdim=True), NONEMPTY),
    case("argmax_int", lambda x: x.argmax(-1), lambda x: x.argmax(-1), NONEMPTY, ("int64",)),
    case("argmin", lambda x: x.argmin(), lambda x: x.argmin(), NONEMPTY),
    case("argmin_axis", lambda x: x.argmin(axis=0), lambda x: x.argmin(0), NONEMPTY),
    case("any", lambda x: x.any(), lambda x: x.any(), kinds=("bool",)),
    case("any_axis", lambda x: x.any(1), lambda x: x.any(1), kinds=("small_int",)),
    case("all", lambda x: x.all(), lambda x: x.all(), kinds=("bool",)),
    case("all_axis", lambda x: x.all(-1, keepdim=True), lambda x: x.all(-1, keepdim=True),
         kinds=("small_int",)),
    case("logsumexp", lambda x: x.logsumexp(1), lambda x: x.logsumexp(1), NONEMPTY),
    case("logsumexp_all", lambda x: x.logsumexp(), lambda x: x.logsumexp((0, 1)),
         [((3, 4),), ((1, 6),)]),
    case("logsumexp_keepdim", lambda x: x.logsumexp(-1, keepdim=True),
         lambda x: x.logsumexp(-1, keepdim=True), NONEMPTY, ("wide",)),
]

NORMALIZED = [
    case("softmax", lambda x: x.softmax(), lambda x: x.softmax(-1)),
    case("softmax_axis0", lambda x: x.softmax(0), lambda x: x.softmax(0), NONEMPTY, ("wide",)),
    case("softmax_dim", lambda x: x.softmax(dim=1), lambda x: x.softmax(dim=1)),
    case("softmax_int", lambda x: x.softmax(), lambda x: x.float().softmax(-1), NONEMPTY,
         ("int",)),
    case("log_softmax", lambda x: x.log_softmax(), lambda x: x.log_softmax(-1)),
    case("log_softmax_axis", lambda x: x.log_softmax(1), lambda x: x.log_softmax(1), NONEMPTY,
         ("wide",)),
]

CUMULATIVE = [
    case("cumsum", lambda x: x.cumsum(), lambda x: x.cumsum(0)),
    case("cumsum_axis", lambda x: x.cumsum(-1), lambda x: x.cumsum(-1)),
    case("cumsum_int", lambda x: x.cumsum(1), lambda x: x.cumsum(1), NONEMPTY, ("int",)),
    case("cumsum_bool", lambda x: x.cumsum(dim=0), lambda x: x.cumsum(0), NONEMPTY, ("bool",)),
    case("cumsum_long", lambda x: x.cumsum(0), lambda x: x.cumsum(0), [((600,),), ((300, 2),)],
         atol=1e-3),
    case("cumprod", lambda x: x.cumprod(1), lambda x: x.cumprod(1), atol=1e-4),
    case("cumprod_int", lambda x: x.cumprod(-1), lambda x: x.cumprod(-1), NONEMPTY,
         ("small_int",)),
    case("cummax", lambda x: x.cummax(0)[0], lambda x: x.cummax(0).values),
    case("cummax_int", lambda x: x.cummax(-1)[0], lambda x: x.cummax(-1).values, NONEMPTY,
         ("int",)),
    case("cummin", lambda x: x.cummin(1)[0], lambda x: x.cummin(1).values, NONEMPTY),
]

CASES = SUMS + EXTREMES + NORMALIZED + CUMULATIVE


@pytest.mark.parametrize("case,shapes,strided", variants(CASES))
def test_reduce_parity(case, shapes, strided):
    run_case(case, shapes, strided)


@pytest.mark.parametrize("name", ["sum_axis", "max_axis", "argmax_axis", "softmax", "cumsum"])
def test_reduce_parity_on_every_backend(device, name):
    case = next(c for c in CASES if c.name == name)
    run_case(case, case.shapes[1], False)
