"""Parity with PyTorch for the movement, copy and masking methods on 0-d, empty, size-1 and
non-square tensors, in every dtype, with special values moving through them unchanged (NaN,
±inf and -0.0 must survive a view, a pad's mask or a copy). Forward and backward."""
import numpy as np
import pytest
import torch

from parity_harness import Case, run_case, variants
from tinylab import Tensor

SHAPES = [((3, 4, 5),), ((2, 0, 3),), ((1, 4, 1),)]
ANY = (("special",), ("int",), ("bool",), ("f16",), ("f64",))
SQUARE_ANY = [((3, 4, 4),), ((0, 2, 2),), ((1, 1, 1),), ((2, 3, 5),)]


def view(name, ours, theirs=None, shapes=SHAPES, also=ANY, **kw):
    return Case(name, ours, theirs or ours, shapes, also=also, **kw)


VIEWS = [
    view("reshape", lambda x: (x.reshape(-1), x.reshape(x.shape[0], -1), x.reshape(*x.shape, 1))),
    view("reshape_scalar", lambda x: (x.reshape(1), x.reshape(1, 1), x.reshape(())),
         shapes=[((),), ((1,),)], covers=("reshape", "view")),
    view("view", lambda x: x.view(x.shape[0], -1), lambda x: x.reshape(x.shape[0], -1)),
    view("permute", lambda x: (x.permute(2, 0, 1), x.permute(-1, 0, -2))),
    view("T", lambda x: x.T, lambda x: x.permute(tuple(reversed(range(x.ndim)))),
         shapes=SHAPES + [((),), ((4,),)]),
    view("expand", lambda x: (x.expand(2, *x.shape), x.reshape(*x.shape, 1).expand(
        *x.shape, 3)), lambda x: (x.expand(2, *x.shape), x.reshape(*x.shape, 1).expand(
            *x.shape, 3))),
    view("expand_scalar", lambda x: x.expand(2, 3), lambda x: x.expand(2, 3), shapes=[((),)],
         covers=("expand",)),
    view("shrink", lambda x: x.shrink(((0, x.shape[0]), (0, x.shape[1] // 2), None)),
         lambda x: x[:, :x.shape[1] // 2]),
    view("contiguous", lambda x: x.contiguous(), shapes=SHAPES + [((),)]),
    view("clone", lambda x: x.clone(), shapes=SHAPES + [((),)]),
    view("detach", lambda x: (x.detach(), x.detach() * 2) if x.dtype.is_float else x.detach(),
         lambda x: (x.detach(), x.detach() * 2) if x.dtype.is_floating_point else x.detach(),
         shapes=SHAPES + [((),)]),
    view("repeat", lambda x: (x.repeat(2, 1, 3), x.repeat(1, 2, 1, 1))),
    view("repeat_scalar", lambda x: x.repeat(3), lambda x: x.repeat(3), shapes=[((),)],
         covers=("repeat",)),
    view("flatten_scalar", lambda x: x.flatten(), lambda x: x.flatten(), shapes=[((),)],
         covers=("flatten",)),
    view("squeeze_scalar", lambda x: (x.squeeze(), x.squeeze(0)), shapes=[((),)],
         covers=("squeeze",)),
    view("unsqueeze_scalar", lambda x: (x.unsqueeze(0), x.unsqueeze(-1)), shapes=[((),)],
         covers=("unsqueeze",)),
    view("transpose_scalar", lambda x: x.transpose(0, -1), shapes=[((),), ((3,),)],
         covers=("transpose",)),
    view("flip_special", lambda x: x.flip((0, -1)), covers=("flip",)),
    view("triu", lambda x: (x.triu(), x.triu(2), x.triu(-1)), shapes=SQUARE_ANY),
    view("tril", lambda x: (x.tril(), x.tril(1), x.tril(-2)), shapes=SQUARE_ANY),
    view("chunk", lambda x: (*x.chunk(2, 0), *x.chunk(3, -1)),
         shapes=[((3, 4, 5),), ((0, 2),), ((1, 4, 1),)]),
    view("split", lambda x: x.split([1, 2], 0), shapes=[((3, 4, 5),), ((3, 0),)]),
    view("cat_special", lambda a, b: a.cat(b, dim=-1), lambda a, b: torch.cat([a, b], -1),
         shapes=[((3, 4), (3, 2)), ((0, 2), (0, 1))], kinds=("special", "real"),
         also=(("int", "int"), ("bool", "bool"), ("f16", "f16")), covers=("cat",)),
    view("stack_special", lambda a, b: a.stack(b, dim=-1), lambda a, b: torch.stack([a, b], -1),
         shapes=[((3, 4), (3, 4)), ((), ())], kinds=("special", "real"),
         also=(("int", "int"), ("f16", "f16")), covers=("stack",)),
    view("unflatten_special", lambda x: x.unflatten(-1, (5, 1)), shapes=[((3, 4, 5),)],
         covers=("unflatten",)),
]


def masked(name, ours, theirs, shapes, kinds, **kw):
    return Case(name, ours, theirs, shapes, kinds, **kw)


MASKS = [
    masked("masked_fill", lambda x, m: (x.masked_fill(m, -1.5), x.masked_fill(m, float("inf"))),
           lambda x, m: (x.masked_fill(m, -1.5), x.masked_fill(m, float("inf"))),
           [((3, 4), (3, 4)), ((3, 4), (4,)), ((), ()), ((0, 2), (1, 2))], ("real", "bool"),
           also=(("special", "bool"), ("f64", "bool"))),
    masked("masked_fill_int", lambda x, m: x.masked_fill(m, 7), lambda x, m: x.masked_fill(m, 7),
           [((3, 4), (3, 4))], ("int", "bool"), also=(("bool", "bool"),),
           covers=("masked_fill",)),
    masked("logical_not", lambda x: x.logical_not(), torch.logical_not,
           [((3, 4),), ((),), ((0, 2),)], ("bool",), also=(("int",), ("special",), ("f64",))),
    masked("logical_and", lambda a, b: (a.logical_and(b), a.logical_or(b), a.logical_xor(b)),
           lambda a, b: (a.logical_and(b), a.logical_or(b), a.logical_xor(b)),
           [((3, 4), (3, 4)), ((), (2, 2)), ((0, 1), (1, 3))], ("bool", "bool"),
           also=(("special", "special"), ("int", "real"), ("f16", "bool")),
           covers=("logical_or", "logical_xor")),
    masked("lerp", lambda a, b: (a.lerp(b, 0.25), a.lerp(b, 1.5)),
           lambda a, b: (a.lerp(b, 0.25), a.lerp(b, 1.5)),
           [((3, 4), (3, 4)), ((), (2, 2)), ((0, 1), (1, 3))], ("real", "real"),
           also=(("special", "special"), ("f64", "f64"))),
    masked("scatter", lambda x, s: x.scatter(1, Tensor(_index()), s),
           lambda x, s: x.scatter(1, torch.from_numpy(_index()).long(), s),
           [((2, 4, 3), (2, 2, 3))], ("real", "real"),
           also=(("special", "special"), ("int", "int"), ("f64", "f64"))),
    masked("scatter_scalar", lambda x: x.scatter(0, Tensor(_index_0()), 2.5),
           lambda x: x.scatter(0, torch.from_numpy(_index_0()).long(), 2.5), [((3, 2),)],
           ("real",), also=(("special",), ("int",)), covers=("scatter",)),
]


def _index():
    """Distinct indices along dim 1 (scatter without duplicates is deterministic)."""
    return np.array([[[0, 3, 1], [2, 0, 3]], [[1, 1, 0], [3, 2, 2]]], np.int32)


def _index_0():
    return np.array([[2, 0], [0, 1]], np.int32)


CASES = VIEWS + MASKS


@pytest.mark.parametrize("case,shapes,strided", variants(CASES))
def test_view_parity(case, shapes, strided):
    run_case(case, shapes, strided)
