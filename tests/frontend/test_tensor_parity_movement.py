"""Parity with PyTorch for movement and indexing: reshape/permute/expand/pad/shrink/flip and
their derivatives, cat/stack/split/chunk/roll, getitem (basic and advanced), gather, scatter,
scatter_reduce, tril/triu (forward and backward). setitem is checked against numpy."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from parity_harness import Case, run_case, variants
from tinylab import Tensor

SHAPES = [((3, 4, 5),), ((1, 4, 1),), ((0, 4, 5),)]
SQUARE = [((3, 4, 4),), ((1, 4, 4),), ((0, 4, 4),)]


def case(name, ours, theirs=None, shapes=SHAPES, kinds=("real",), **kw):
    return Case(name, ours, theirs or ours, shapes, kinds, **kw)


PRIMITIVES = [
    case("reshape", lambda x: x.reshape(-1, x.shape[-1]), lambda x: x.reshape(-1, x.shape[-1])),
    case("reshape_args", lambda x: x.reshape(-1, x.shape[1] * x.shape[2]),
         lambda x: x.reshape(-1, x.shape[1] * x.shape[2])),
    case("view", lambda x: x.view(x.shape[0], x.shape[1] * x.shape[2]),
         lambda x: x.reshape(x.shape[0], x.shape[1] * x.shape[2])),
    case("permute", lambda x: x.permute(2, 0, 1)),
    case("permute_tuple", lambda x: x.permute((1, 2, 0))),
    case("permute_negative", lambda x: x.permute(-1, -3, -2)),
    case("expand", lambda x: x.reshape(*x.shape, 1).expand(*x.shape, 3),
         lambda x: x.reshape(*x.shape, 1).expand(*x.shape, 3)),
    case("expand_new_dims", lambda x: x.expand(2, -1, -1, -1)),
    case("pad_pairs", lambda x: x.pad(((1, 2), None, (0, 1))),
         lambda x: F.pad(x, (0, 1, 0, 0, 1, 2))),
    case("pad_flat", lambda x: x.pad((1, 2, 3, 0)), lambda x: F.pad(x, (1, 2, 3, 0))),
    case("pad_value", lambda x: x.pad((2, 1), value=-3.5), lambda x: F.pad(x, (2, 1), value=-3.5)),
    case("pad_crop", lambda x: x.pad((-1, 2, 1, -2)), lambda x: F.pad(x, (-1, 2, 1, -2))),
    case("pad_reflect", lambda x: x.pad((2, 3), mode="reflect"),
         lambda x: F.pad(x, (2, 3), mode="reflect"), [((3, 4, 5),), ((1, 4, 4),)]),
    case("pad_reflect_2d", lambda x: x.pad((1, 2, 2, 1), mode="reflect"),
         lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"), [((3, 4, 5),), ((1, 3, 3),)]),
    case("pad_replicate", lambda x: x.pad((2, 3, 1, 0), mode="replicate"),
         lambda x: F.pad(x, (2, 3, 1, 0), mode="replicate"), [((3, 4, 5),), ((1, 4, 1),)]),
    case("pad_circular", lambda x: x.pad((2, 1), mode="circular"),
         lambda x: F.pad(x, (2, 1), mode="circular"), [((3, 4, 5),), ((1, 4, 2),)]),
    case("shrink", lambda x: x.shrink(((0, x.shape[0]), (1, 3), None)), lambda x: x[:, 1:3]),
    case("flip", lambda x: x.flip(1)),
    case("flip_axes", lambda x: x.flip((0, -1)), lambda x: x.flip((0, -1))),
]

DERIVED = [
    case("transpose", lambda x: x.transpose(0, 2)),
    case("transpose_default", lambda x: x.flatten(1).transpose(),
         lambda x: x.flatten(1).transpose(1, 0)),
    case("T", lambda x: x.T, lambda x: x.permute(2, 1, 0)),
    case("flatten", lambda x: x.flatten()),
    case("flatten_range", lambda x: x.flatten(1), lambda x: x.flatten(1)),
    case("flatten_start_end", lambda x: x.flatten(0, 1), lambda x: x.flatten(0, 1)),
    case("unflatten", lambda x: x.unflatten(1, (2, 2)), lambda x: x.unflatten(1, (2, 2))),
    case("squeeze", lambda x: x.squeeze()),
    case("squeeze_dim", lambda x: x.squeeze(0), lambda x: x.squeeze(0)),
    case("squeeze_dims", lambda x: x.squeeze((0, 2)), lambda x: x.squeeze((0, 2))),
    case("unsqueeze", lambda x: x.unsqueeze(1)),
    case("unsqueeze_end", lambda x: x.unsqueeze(-1)),
    case("repeat", lambda x: x.repeat(2, 1, 3)),
    case("repeat_more_dims", lambda x: x.repeat(2, 1, 1, 2)),
    case("repeat_interleave", lambda x: x.repeat_interleave(2, dim=1),
         lambda x: x.repeat_interleave(2, dim=1)),
    case("repeat_interleave_flat", lambda x: x.repeat_interleave(3),
         lambda x: x.repeat_interleave(3)),
    case("cat", lambda a, b: a.cat(b, dim=1), lambda a, b: torch.cat([a, b], 1),
         [((3, 4, 5), (3, 2, 5)), ((1, 1, 2), (1, 3, 2)), ((2, 0, 3), (2, 2, 3))]),
    case("cat_class", lambda a, b, c: Tensor.cat(a, b, c, dim=-1),
         lambda a, b, c: torch.cat([a, b, c], -1),
         [((3, 4), (3, 1), (3, 2)), ((1, 1), (1, 0), (1, 1))]),
    case("cat_list", lambda a, b: Tensor.cat([a, b], dim=-1), lambda a, b: torch.cat([a, b], -1),
         [((2, 3), (2, 1))]),
    case("stack_list", lambda a, b: Tensor.stack((a, b)), lambda a, b: torch.stack((a, b)),
         [((2, 3), (2, 3))]),
    case("cat_promote", lambda a, b: a.cat(b), lambda a, b: torch.cat([a, b]),
         [((3, 4), (2, 4))], ("int", "real")),
    case("stack", lambda a, b: a.stack(b, dim=1), lambda a, b: torch.stack([a, b], 1),
         [((3, 4), (3, 4)), ((1, 1), (1, 1)), ((0, 2), (0, 2))]),
    case("stack_end", lambda a, b, c: Tensor.stack(a, b, c, dim=-1),
         lambda a, b, c: torch.stack([a, b, c], -1), [((2, 3), (2, 3), (2, 3))]),
    case("split", lambda x: x.split(3, dim=1), lambda x: x.split(3, dim=1)),
    case("split_sizes", lambda x: x.split([1, 3], dim=1), lambda x: x.split([1, 3], dim=1)),
    case("split_last", lambda x: x.split(2, -1), lambda x: x.split(2, -1),
         [((3, 4, 5),), ((2, 2, 1),)]),
    case("chunk", lambda x: x.chunk(3, dim=-1), lambda x: x.chunk(3, dim=-1),
         [((3, 4, 5),), ((2, 2, 6),)]),
    case("chunk_uneven", lambda x: x.chunk(3, 1), lambda x: x.chunk(3, 1)),
    case("roll", lambda x: x.roll(2, 2), lambda x: x.roll(2, 2)),
    case("roll_dims", lambda x: x.roll((1, -3), (0, 1)), lambda x: x.roll((1, -3), (0, 1))),
    case("roll_flat", lambda x: x.roll(7), lambda x: x.roll(7)),
    case("contiguous", lambda x: x.contiguous() * 2, lambda x: x.contiguous() * 2),
    case("clone", lambda x: x.clone() + 1, lambda x: x.clone() + 1),
    case("detach", lambda x: x.detach() * x, lambda x: x.detach() * x),
    case("triu", lambda x: x.triu(), lambda x: x.triu(), SQUARE),
    case("triu_diagonal", lambda x: x.triu(1), lambda x: x.triu(1)),
    case("tril", lambda x: x.tril(), lambda x: x.tril(), SQUARE),
    case("tril_diagonal", lambda x: x.tril(-2), lambda x: x.tril(-2)),
]


def index_case(name, index, shapes=SHAPES, **kw):
    """x[index] where index may hold lists / numpy int arrays (torch gets LongTensors)."""
    def theirs_index(i):
        if isinstance(i, (list, np.ndarray)):
            return torch.as_tensor(np.asarray(i)).long()
        return i
    ours = tuple(Tensor(np.asarray(i, np.int32)) if isinstance(i, np.ndarray) else i
                 for i in index)
    theirs = tuple(theirs_index(i) for i in index)
    return case(f"getitem_{name}", lambda x: x[ours], lambda x: x[theirs], shapes, **kw)


NONEMPTY = [((3, 4, 5),), ((2, 4, 1),)]

INDEXING = [
    index_case("int", (1,), NONEMPTY),
    index_case("negative_int", (-1, 2), NONEMPTY),
    index_case("slice", (slice(1, None), slice(None, 3))),
    index_case("slice_step", (slice(None), slice(None, None, 2), slice(1, None, 3))),
    case("getitem_negative_step", lambda x: x[::-1, 3:0:-2],  # torch has no negative steps
         lambda x: x.flip(0)[:, torch.tensor([3, 1])]),
    index_case("none_ellipsis", (None, Ellipsis, None, 0)),
    index_case("ellipsis_middle", (0, Ellipsis, slice(1, 2)), NONEMPTY),
    index_case("list", ([0, 2, -1],), [((3, 4, 5),), ((3, 1, 2),)]),
    index_case("tensor", (np.array([[1, 0], [2, 2]]),), [((3, 4, 5),), ((3, 1, 1),)]),
    index_case("repeated", (slice(None), [1, 1, 3, 1]), [((3, 4, 5),), ((0, 4, 2),)]),
    index_case("two_tensors", (np.array([0, 2, 1]), slice(None), np.array([4, 0, 1])),
               [((3, 4, 5),)]),
    index_case("adjacent", (slice(None), np.array([[0], [3]]), np.array([1, 2, 0])),
               [((3, 4, 5),), ((1, 4, 3),)]),
    index_case("int_and_list", (1, slice(None), [0, 2]), [((3, 4, 5),), ((2, 1, 3),)]),
    index_case("with_none", (None, [0, 1], None), [((3, 4, 5),), ((2, 1, 1),)]),
    index_case("with_step", (slice(None, None, 2), [3, 0]), [((3, 4, 5),), ((1, 4, 2),)]),
]


def _unique_index(shape, size, axis, seed=0):
    """An index tensor of `shape` whose entries along `axis` are distinct, in [0, size)."""
    rng = np.random.default_rng(seed)
    keys = rng.random(shape[:axis] + (size,) + shape[axis + 1:]).argsort(axis)
    return np.take(keys, np.arange(shape[axis]), axis=axis).astype(np.int32)


UNIQUE = _unique_index((2, 3, 5), 4, 1)
UNIQUE_0 = _unique_index((3, 2), 3, 0, seed=1)


def scatter_case(name, ours, theirs, **kw):
    return case(name, ours, theirs, [((3, 4, 5), (2, 3, 5))], ("real", "real"), **kw)


def _ours(index):
    return Tensor(index)


def _theirs(index):
    return torch.from_numpy(index.astype(np.int64))


GATHER_SCATTER = [
    case("gather", lambda x, i: x.gather(1, i), lambda x, i: x.gather(1, i.long()),
         [((3, 4, 5), (3, 2, 5)), ((2, 4, 1), (1, 6, 1)), ((0, 4, 5), (0, 2, 5))],
         ("real", "index4")),
    case("gather_last", lambda x, i: x.gather(-1, i), lambda x, i: x.gather(-1, i.long()),
         [((3, 4, 5), (3, 4, 3)), ((1, 2, 5), (1, 2, 1))], ("real", "index5")),
    case("gather_int", lambda x, i: x.gather(0, i), lambda x, i: x.gather(0, i.long()),
         [((3, 4), (5, 4))], ("int", "index3")),
    scatter_case("scatter", lambda x, s: x.scatter(1, _ours(UNIQUE), s),
                 lambda x, s: x.scatter(1, _theirs(UNIQUE), s)),
    case("scatter_value", lambda x: x.scatter(0, _ours(UNIQUE_0), 2.5),
         lambda x: x.scatter(0, _theirs(UNIQUE_0), 2.5), [((3, 4),)]),
    scatter_case("scatter_add", lambda x, s: x.scatter(1, _ours(UNIQUE), s, reduce="add"),
                 lambda x, s: x.scatter_add(1, _theirs(UNIQUE), s)),
]
for reduce in ("sum", "prod", "mean", "amax", "amin"):
    for include_self in (True, False):
        GATHER_SCATTER.append(case(
            f"scatter_reduce_{reduce}_{'self' if include_self else 'noself'}",
            lambda x, i, s, r=reduce, k=include_self: x.scatter_reduce(1, i, s, r, k),
            lambda x, i, s, r=reduce, k=include_self: x.scatter_reduce(1, i.long(), s, r,
                                                                       include_self=k),
            [((3, 4, 5), (2, 6, 5), (2, 6, 5))], ("real", "index4", "real"), atol=1e-4))

CASES = PRIMITIVES + DERIVED + INDEXING + GATHER_SCATTER


@pytest.mark.parametrize("case,shapes,strided", variants(CASES))
def test_movement_parity(case, shapes, strided):
    run_case(case, shapes, strided)


@pytest.mark.parametrize("name", ["pad_reflect", "getitem_slice_step", "getitem_two_tensors",
                                  "gather", "cat"])
def test_movement_parity_on_every_backend(device, name):
    case = next(c for c in CASES if c.name == name)
    run_case(case, case.shapes[0], False)


SETITEM = [
    ((0,), 7.0), ((slice(None), 1), np.arange(5, dtype=np.float32)),
    ((Ellipsis, slice(None, None, -2)), -1.0), ((slice(1, None, 2), slice(None, None, 3)), 5.0),
    (([0, 2],), 9.0), ((slice(None), [3, 1]), np.full((3, 2, 5), 4, np.float32)),
    ((0, [1, 2], slice(None)), np.arange(10, dtype=np.float32).reshape(2, 5)),
    (([0, 1], [1, 2]), np.arange(10, dtype=np.float32).reshape(2, 5)), ((None, 1), 3.0),
    ((slice(None, None, -1), 2, slice(1, 4)), np.arange(3, dtype=np.float32)),
    ((np.array([True, False, True]),), 2.0), ((slice(None), slice(2, 2)), 1.0),
]


@pytest.mark.parametrize("realized", [True, False], ids=["buffer", "lazy"])
@pytest.mark.parametrize("index,value", SETITEM, ids=[str(i) for i in range(len(SETITEM))])
def test_setitem_matches_numpy(index, value, realized):
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x = Tensor(base.copy()) if realized else Tensor(base.copy()) * 1
    ours = tuple(Tensor(i) if isinstance(i, np.ndarray) and i.dtype == bool else i for i in index)
    x[ours] = Tensor(value) if isinstance(value, np.ndarray) else value
    expected = base.copy()
    expected[tuple(np.array(i) if isinstance(i, list) else i for i in index)] = value
    np.testing.assert_array_equal(x.numpy(), expected)


def test_setitem_writes_the_buffer_in_place():
    x = Tensor(np.zeros((2, 3), np.float32)).realize()
    buffer = x.node.buffer
    x[1, 1:] = Tensor([4.0, 5.0])
    x[:, 0] = 1
    np.testing.assert_array_equal(x.numpy(), [[1, 0, 0], [1, 4, 5]])
    assert x.node.buffer is buffer


def test_setitem_casts_and_broadcasts_values():
    x = Tensor(np.zeros((2, 3), np.int32))
    x[:, 1] = 2.7
    x[0] = Tensor([[7, 8, 9]]).reshape(3)
    np.testing.assert_array_equal(x.numpy(), [[7, 8, 9], [0, 2, 0]])
