"""ir/view.py: random chains of movement ops on a view give the same elements as numpy doing
the same ops on an array (including padding masks and reshapes that need stacked views)."""
import random

import numpy as np

from tinylab.ir.evaluate import gather
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
