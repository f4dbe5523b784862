"""Parity with PyTorch for every method that takes a dim: each row runs with dim= on 0-d, empty,
size-1 and non-square inputs, and again with the same dim counted from the end (harness `dim`).
Reductions also run at their special points (NaN, ±inf, ties) and in each dtype they take."""
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from parity_harness import Case, run_case, variants

SHAPES = [((3, 4, 5),), ((),), ((2, 0, 3),), ((1, 6, 1),), ((4, 1, 2),)]
NONEMPTY = [((3, 4, 5),), ((),), ((1, 6, 1),), ((4, 1, 2),)]
POINTS = (("special",), ("extreme",), ("ties",))  # one NaN and one inf per special tensor
NUMBERS = (("int",), ("f16",), ("f64",))


def reduce(name, ours, theirs=None, shapes=SHAPES, dim=1, also=POINTS + NUMBERS, **kw):
    return Case(name, ours, theirs or ours, shapes, dim=dim, also=also, **kw)


REDUCTIONS = [
    reduce("sum", lambda x, dim: (x.sum(dim), x.sum(dim, keepdim=True)), also=POINTS + NUMBERS +
           (("bool",), ("uint8",))),
    reduce("mean", lambda x, dim: (x.mean(dim), x.mean(dim=dim, keepdim=True)),
           shapes=NONEMPTY, also=POINTS + (("f16",), ("f64",))),
    reduce("prod", lambda x, dim: x.prod(dim), shapes=NONEMPTY, also=(("int",), ("f64",)),
           atol=1e-4),
    # max(dim) gives the values (no indices); tied maxima share the gradient as with PyTorch's
    # amax, and so do NaNs, which are the max (PyTorch's max() does so; its amax gives NaN
    # gradients). The special tensors hold one NaN, so max(dim) with its index agrees.
    reduce("max", lambda x, dim: x.max(dim), lambda x, dim: x.amax(dim), shapes=NONEMPTY,
           also=(("ties",), ("int",), ("bool",), ("f64",))),
    reduce("max_nan", lambda x, dim: x.max(dim), lambda x, dim: x.max(dim).values,
           shapes=NONEMPTY, kinds=("special",), also=(("extreme",),), covers=("max",)),
    reduce("min", lambda x, dim: x.min(dim, keepdim=True),
           lambda x, dim: x.amin(dim, keepdim=True), shapes=NONEMPTY,
           also=(("ties",), ("int",), ("uint8",), ("f64",))),
    reduce("min_nan", lambda x, dim: x.min(dim), lambda x, dim: x.min(dim).values,
           shapes=NONEMPTY, kinds=("special",), also=(("extreme",),), covers=("min",)),
    reduce("max_all", lambda x: (x.max(), x.min()), lambda x: (x.max(), x.min()),
           shapes=NONEMPTY, dim=None, also=POINTS + (("int",), ("bool",)), covers=("max", "min")),
    reduce("amax", lambda x, dim: x.amax(dim), shapes=NONEMPTY, also=(("ties",), ("int",))),
    reduce("amin", lambda x, dim: x.amin(dim, keepdim=True), shapes=NONEMPTY,
           also=(("ties",), ("int",))),
    reduce("argmax", lambda x, dim: (x.argmax(dim), x.argmax(dim, keepdim=True)),
           shapes=NONEMPTY, also=POINTS + (("int",), ("f64",))),
    reduce("argmin", lambda x, dim: x.argmin(dim), shapes=NONEMPTY,
           also=POINTS + (("int",), ("uint8",))),
    reduce("any", lambda x, dim: (x.any(dim), x.any(dim, keepdim=True)), kinds=("bool",),
           also=(("int",), ("special",))),
    reduce("all", lambda x, dim: x.all(dim), kinds=("bool",), also=(("int",), ("special",))),
    reduce("var", lambda x, dim: (x.var(dim), x.var(dim, correction=0)),
           shapes=[((3, 4, 5),), ((1, 6, 1),), ((4, 2, 2),)], also=(("extreme",), ("f64",))),
    reduce("std", lambda x, dim: (x.std(dim, keepdim=True), x.std(dim, correction=0)),
           shapes=[((3, 4, 5),), ((1, 6, 1),), ((4, 2, 2),)], also=(("f64",),)),
    reduce("var_mean", lambda x, dim: x.var_mean(dim), lambda x, dim: torch.var_mean(x, dim),
           shapes=[((3, 4, 5),), ((2, 3, 1),)], also=()),
    reduce("std_mean", lambda x, dim: x.std_mean(dim, keepdim=True),
           lambda x, dim: torch.std_mean(x, dim, keepdim=True), shapes=[((3, 4, 5),)], also=()),
    reduce("logsumexp", lambda x, dim: x.logsumexp(dim), shapes=NONEMPTY,
           also=(("extreme",), ("f64",), ("int",))),
    reduce("softmax", lambda x, dim: x.softmax(dim), shapes=SHAPES,
           also=(("extreme",), ("f16",), ("f64",))),
    reduce("log_softmax", lambda x, dim: x.log_softmax(dim), shapes=SHAPES,
           also=(("extreme",), ("f64",))),
    reduce("cumsum", lambda x, dim: x.cumsum(dim), also=(("special",), ("int",), ("bool",),
                                                        ("f64",))),
    reduce("cumprod", lambda x, dim: x.cumprod(dim), also=(("int",), ("f64",)), atol=1e-4),
    reduce("cummax", lambda x, dim: x.cummax(dim)[0], lambda x, dim: x.cummax(dim).values,
           shapes=[((3, 4, 5),), ((2, 0, 3),), ((1, 6, 1),), ((4, 1, 2),)],
           also=(("special",), ("int",), ("f64",))),
    reduce("cummin", lambda x, dim: x.cummin(dim)[0], lambda x, dim: x.cummin(dim).values,
           shapes=[((3, 4, 5),), ((2, 0, 3),), ((1, 6, 1),), ((4, 1, 2),)],
           also=(("special",), ("int",), ("f64",))),
]


def move(name, ours, theirs=None, shapes=SHAPES, dim=1, also=(("int",), ("bool",), ("f64",)),
         **kw):
    return Case(name, ours, theirs or ours, shapes, dim=dim, also=also, **kw)


MOVEMENT = [
    move("flip", lambda x, dim: x.flip(dim)),
    move("transpose", lambda x, dim: x.transpose(dim, 0),
         shapes=[((3, 4, 5),), ((2, 0, 3),), ((1, 6, 1),)]),
    move("squeeze", lambda x, dim: (x.squeeze(dim), x.squeeze()),
         shapes=[((3, 1, 5),), ((),), ((2, 1, 0),), ((1, 1, 1),)]),
    move("unsqueeze", lambda x, dim: x.unsqueeze(dim)),
    move("flatten", lambda x, dim: (x.flatten(dim), x.flatten(0, dim)),
         shapes=[((3, 4, 5),), ((2, 0, 3),), ((1, 6, 1),)]),
    move("unflatten", lambda x, dim: x.unflatten(dim, (2, -1)),
         shapes=[((3, 4, 5),), ((1, 6, 1),), ((2, 2, 0),)]),
    move("split", lambda x, dim: x.split(2, dim), shapes=[((3, 4, 5),), ((1, 6, 1),)]),
    move("chunk", lambda x, dim: x.chunk(3, dim), shapes=[((3, 4, 5),), ((1, 6, 1),)]),
    move("roll", lambda x, dim: x.roll(3, dim),
         shapes=[((3, 4, 5),), ((2, 0, 3),), ((1, 6, 1),), ((4, 1, 2),)]),
    Case("roll_flat", lambda x: x.roll(3), lambda x: x.roll(3), [((3, 4),), ((),), ((0, 2),)],
         also=(("int",), ("bool",)), covers=("roll",)),
    move("repeat_interleave", lambda x, dim: x.repeat_interleave(2, dim),
         shapes=[((3, 4, 5),), ((2, 0, 3),), ((1, 6, 1),)]),
    move("cat", lambda a, b, dim: a.cat(b, dim=dim), lambda a, b, dim: torch.cat([a, b], dim),
         shapes=[((3, 4, 5), (3, 2, 5)), ((1, 0, 2), (1, 3, 2)), ((2, 1), (2, 1))],
         also=(("int", "int"), ("bool", "bool"), ("f16", "real"))),
    move("stack", lambda a, b, dim: a.stack(b, dim=dim),
         lambda a, b, dim: torch.stack([a, b], dim),
         shapes=[((3, 4), (3, 4)), ((), ()), ((0, 2), (0, 2)), ((1,), (1,))],
         also=(("int", "int"), ("bool", "bool"))),
    move("gather", lambda x, i, dim: x.gather(dim, i),
         lambda x, i, dim: x.gather(dim, i.long()),
         shapes=[((3, 4, 5), (3, 2, 5)), ((1, 4, 1), (1, 6, 1)), ((2, 4, 3), (2, 0, 3))],
         kinds=("real", "index4"), also=(("int", "index4"), ("special", "index4"))),
    move("softmax_dtype", lambda x, dim: x.softmax(dim, dtype="float64"),
         lambda x, dim: x.softmax(dim, dtype=torch.float64), shapes=[((3, 4, 5),)], also=(),
         covers=("softmax",)),
    move("layernorm", lambda x, dim: x.layernorm(axis=dim),
         lambda x, dim: F.layer_norm(x, x.shape[dim % x.ndim:]), dim=2,
         shapes=[((3, 4, 5),), ((2, 1, 6),), ((0, 3, 4),)], also=(("f64",), ("special",)),
         atol=1e-4),
]

CASES = REDUCTIONS + MOVEMENT

# Wrong numbers the wrong-numbers branch fixed (issue 15), kept as rows.
PRODUCTS_AND_SCANS = [
    # Tensor([0., 2, 3]).prod() had gradient [0, 0, 0], PyTorch [6, 0, 0] (the example;
    # prod was sign * exp(sum(log|x|)) with zeros masked out); cumprod the same: [0, 0, 0] for
    # PyTorch's [9, 0, 0]. cumprod's gradients at ±inf / NaN are compared on values only: a
    # product through inf * 0 has no gradient, and the two frameworks leave different NaNs and
    # numbers there (PyTorch's for [inf, 0, 2] weighted [1, 2, 3]: [nan, inf, 0]; ours [1, inf,
    # nan])
    reduce("prod_zero", lambda x, dim: x.prod(dim), shapes=NONEMPTY, kinds=("special",),
           also=(("ties",),), covers=("prod",)),
    reduce("cumprod_zero", lambda x, dim: x.cumprod(dim), kinds=("ties",), also=(),
           covers=("cumprod",)),
    reduce("cumprod_special", lambda x, dim: x.cumprod(dim), kinds=("special",), also=(),
           grad=False, covers=("cumprod",)),
    # Tensor(1.0).cummax(0) raised IndexError (list index out of range); PyTorch gives 1.0
    reduce("cummax_scalar", lambda x, dim: x.cummax(dim)[0], lambda x, dim: x.cummax(dim).values,
           shapes=[((),)], also=(), covers=("cummax",)),
    reduce("cummin_scalar", lambda x, dim: x.cummin(dim)[0], lambda x, dim: x.cummin(dim).values,
           shapes=[((),)], also=(), covers=("cummin",)),
    # Tensor([3., 3.]).cummax(0) had gradient [1.5, 0.5]; PyTorch gives each running max's
    # gradient to the latest tied element: [1, 1]
    reduce("cummax_ties", lambda x, dim: x.cummax(dim)[0], lambda x, dim: x.cummax(dim).values,
           kinds=("ties",), shapes=[((3, 4, 5),)], also=(), covers=("cummax",)),
    reduce("cummin_ties", lambda x, dim: x.cummin(dim)[0], lambda x, dim: x.cummin(dim).values,
           kinds=("ties",), shapes=[((3, 4, 5),)], also=(), covers=("cummin",)),
]
CASES += PRODUCTS_AND_SCANS


@pytest.mark.parametrize("case,shapes,strided", variants(CASES))
def test_dim_parity(case, shapes, strided):
    run_case(case, shapes, strided)
