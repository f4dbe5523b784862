"""ir/view.py: random chains of movement ops on a view give the same elements as numpy doing
the same ops on an array (including padding masks and reshapes that need stacked views), checked
after every step by a hypothesis property (FUZZ_EXAMPLES raises its count)."""
import os
import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinylab.ir.evaluate import gather, view_indices
from tinylab.ir.view import View, ViewStack


def _apply_random(vs, ref):
    op = random.choice(["permute", "expand", "pad", "shrink", "flip", "reshape"])
    if op == "permute":
        order = list(range(ref.ndim))
        random.shuffle(order)
        return vs.permute(tuple(order)), ref.transpose(order)
    if op == "expand":
        shape = tuple(random.choice([1, 3]) if s == 1 else s for s in ref.shape)
        return vs.expand(shape), np.broadcast_to(ref, shape)
    if op == "pad":
        pads = tuple((random.randint(0, 2), random.randint(0, 2)) for _ in ref.shape)
        return vs.pad(pads), np.pad(ref, pads)
    if op == "shrink":
        bounds = []
        for s in ref.shape:
            lo = random.randint(0, s - 1)
            bounds.append((lo, random.randint(lo + 1, s)))
        return vs.shrink(tuple(bounds)), ref[tuple(slice(lo, hi) for lo, hi in bounds)]
    if op == "flip":
        axes = tuple(i for i in range(ref.ndim) if random.random() < 0.5)
        return vs.flip(axes), np.flip(ref, axes)
    n = ref.size
    a = random.choice([d for d in range(1, n + 1) if n % d == 0])
    shape = (a, n // a) + ((1,) if random.random() < 0.3 else ())
    return vs.reshape(shape), ref.reshape(shape)


def test_random_movement_chains_match_numpy():
    random.seed(0)
    for _ in range(1500):
        shape = tuple(random.choice([1, 2, 3, 4]) for _ in range(random.randint(1, 3)))
        base = np.arange(1, 1 + int(np.prod(shape)))
        ref = base.reshape(shape)
        vs = ViewStack.contiguous(shape)
        for _ in range(5):
            vs, ref = _apply_random(vs, ref)
            assert (gather(base, vs) == ref).all(), str(vs)


def test_reshape_merges_and_splits_without_stacking():
    v = View.contiguous((4, 6))
    assert v.reshape((24,)).strides == (1,)
    assert v.reshape((2, 2, 6)).strides == (12, 6, 1)
    t = v.permute((1, 0))
    assert t.reshape((24,)) is None  # a transposed view cannot flatten without a new view
    assert len(ViewStack.contiguous((4, 6)).permute((1, 0)).reshape((24,)).views) == 2


def test_pad_masks_and_shrink_clears_them():
    v = View.contiguous((3,)).pad(((2, 1),))
    assert v.shape == (6,) and v.mask == ((2, 5),)
    assert v.shrink(((2, 5),)).mask is None


# ---- property: any chain of movement ops reads what numpy's model of each op reads ----------
# The model is an array of flat buffer indices (-1 = padding); a view must read exactly those,
# after every step. Shapes include 0-d, size-0 and size-1 axes; shrinks may be empty.
VIEW_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", 0)) or 600
MOVES = ["permute", "expand", "pad", "shrink", "flip", "reshape", "reshape", "index"]


def _factorization(draw, total: int) -> tuple:
    sizes = []
    while total > 1:
        factor = draw(st.sampled_from([d for d in range(2, total + 1) if total % d == 0]))
        sizes.append(factor)
        total //= factor
    if total == 0:
        sizes = [0] + ([draw(st.integers(1, 3))] if draw(st.booleans()) else [])
    for _ in range(draw(st.integers(0, 2))):
        sizes.insert(draw(st.integers(0, len(sizes))), 1)
    return tuple(sizes)


@st.composite
def _move(draw, shape: tuple):
    op = draw(st.sampled_from(MOVES))
    if not shape and op != "reshape":
        op = "reshape"
    if op == "permute":
        return op, tuple(draw(st.permutations(range(len(shape)))))
    if op == "expand":
        return op, tuple(draw(st.sampled_from([1, 2, 3])) if s == 1 else s for s in shape)
    if op == "pad":
        return op, tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in shape)
    if op == "shrink":
        bounds = []
        for s in shape:
            lo = draw(st.integers(0, s))
            bounds.append((lo, draw(st.integers(lo, s))))
        return op, tuple(bounds)
    if op == "flip":
        return op, tuple(a for a in range(len(shape)) if draw(st.booleans()))
    if op == "index" and 0 not in shape:  # x[i, j]: a one-element shrink, then a reshape
        count = draw(st.integers(1, len(shape)))
        return op, tuple(draw(st.integers(0, s - 1)) for s in shape[:count])
    return "reshape", _factorization(draw, int(np.prod(shape)))


def _model(ref: np.ndarray, op: str, arg) -> np.ndarray:
    if op == "permute":
        return ref.transpose(arg)
    if op == "expand":
        return np.broadcast_to(ref, arg)
    if op == "pad":
        return np.pad(ref, arg, constant_values=-1)
    if op == "shrink":
        return ref[tuple(slice(lo, hi) for lo, hi in arg)]
    if op == "flip":
        return np.flip(ref, arg)
    if op == "index":
        return ref[arg]
    return ref.reshape(arg)


def _apply(view: ViewStack, op: str, arg) -> ViewStack:
    if op != "index":
        return getattr(view, op)(arg)   # the chain names ViewStack methods
    bounds = [(i, i + 1) for i in arg] + [(0, s) for s in view.shape[len(arg):]]
    return view.shrink(tuple(bounds)).reshape(view.shape[len(arg):])


@st.composite
def _view_chains(draw):
    shape = tuple(draw(st.sampled_from([0, 1, 1, 2, 3, 4, 6]))
                  for _ in range(draw(st.integers(0, 3))))
    moves, current = [], shape
    for _ in range(draw(st.integers(1, 8))):
        op, arg = draw(_move(current))
        moves.append((op, arg))
        current = _model(np.zeros(current), op, arg).shape
        if int(np.prod(current)) > 4096:
            break
    return shape, moves


def _reads(view: ViewStack) -> np.ndarray:
    index, valid = view_indices(view)
    return np.where(valid, index, -1)


@settings(max_examples=VIEW_EXAMPLES, deadline=None, database=None,
          derandomize="FUZZ_EXAMPLES" not in os.environ,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_view_chains())
def test_view_chains_read_what_numpy_reads_after_every_step(chain):
    shape, moves = chain
    view, ref = ViewStack.contiguous(shape), np.arange(int(np.prod(shape))).reshape(shape)
    for step, (op, arg) in enumerate(moves):
        view, ref = _apply(view, op, arg), _model(ref, op, arg)
        assert view.shape == ref.shape
        np.testing.assert_array_equal(_reads(view), ref, err_msg=f"after {moves[:step + 1]}: "
                                                                 f"{view}")


def test_index_inside_padding_reads_pad_value_in_a_0d_view():
    """A shrink wholly inside the padding, reshaped to 0-d, still reads nothing (was: the empty
    mask had no axis to live on, so the view read the buffer's element 0)."""
    inside_pad = View.contiguous((1,)).pad(((1, 0),)).shrink(((0, 1),))
    assert inside_pad.is_empty
    scalar = inside_pad.reshape(())
    assert scalar.is_empty and scalar.to_index([])[1].is_false
    assert _reads(ViewStack((scalar,))).tolist() == -1
    assert scalar.reshape((1, 1)).is_empty and scalar.expand(()).is_empty


def test_view_on_an_empty_view_below_reads_nothing():
    below = View.contiguous((3,)).pad(((0, 2),)).shrink(((3, 5),))  # all padding
    stacked = ViewStack((below, View.contiguous((2,)).permute((0,))))._merged()
    assert _reads(stacked).tolist() == [-1, -1]


def test_view_index_memo_and_broadcast_dims_give_the_unmemoized_answer():
    """view_index keys its memo with index 0 on dimensions the top view ignores (stride 0,
    a mask that holds everywhere): the answer must be the very expression the plain
    composition (to_index on the given indices, then simplify_valid) makes, lane by lane,
    including lanes past a dimension's end."""
    from tinylab.ir import symbolic as sym
    from tinylab.ir.simplify_valid import simplify_valid
    from tinylab.ir.view import view_index
    random.seed(3)
    checked = 0
    for _ in range(60):
        shape = tuple(random.choice([1, 2, 3, 4]) for _ in range(3))
        vs, ref = ViewStack.contiguous(shape), np.arange(int(np.prod(shape))).reshape(shape)
        for _ in range(random.randint(1, 5)):
            vs, ref = _apply_random(vs, ref)
        loops = [sym.var(f"tl_view_memo{d}", 0, max(s // 2, 1)) for d, s in enumerate(vs.shape)]
        for lane in range(4):  # lanes: a constant on top of the loop index (may run past s)
            idxs = [v * 2 + (lane if d == len(loops) - 1 else 0) for d, v in enumerate(loops)]
            fixed = [sym.ZERO if s == 1 else i for s, i in zip(vs.shape, idxs)]
            expected = simplify_valid(*vs.to_index(fixed))
            for _ in range(2):  # the first answer and the memoized one
                index, valid = view_index(vs, idxs)
                assert index is expected[0] and valid is expected[1], (vs, idxs)
            checked += 1
    assert checked == 240
