"""schedule/axes.py: merging two adjacent axes of a kernel's view. The fast path for unmasked
static views must give exactly the View that View.reshape gives (the kernel AST holds it, and
generated code must not depend on which path made it), and read what numpy reads."""
import random

import numpy as np

from tinylab.ir.evaluate import gather
from tinylab.ir.view import View, ViewStack
from tinylab.schedule.axes import _merged


def _random_view(rng: random.Random):
    """A single-view stack over a small buffer after a random chain of permutes, expands,
    shrinks, flips and pads, beside numpy's result of the same chain."""
    shape = tuple(rng.choice([1, 2, 3, 4]) for _ in range(rng.randint(2, 4)))
    base = np.arange(1, 1 + int(np.prod(shape)))
    vs, ref = ViewStack.contiguous(shape), base.reshape(shape)
    for _ in range(rng.randint(0, 3)):
        op = rng.choice(["permute", "expand", "shrink", "flip", "pad"])
        if op == "permute":
            order = list(range(ref.ndim))
            rng.shuffle(order)
            vs, ref = vs.permute(tuple(order)), ref.transpose(order)
        elif op == "expand":
            new = tuple(rng.choice([1, 3]) if s == 1 else s for s in ref.shape)
            vs, ref = vs.expand(new), np.broadcast_to(ref, new)
        elif op == "shrink":
            bounds = []
            for s in ref.shape:
                lo = rng.randint(0, s - 1)
                bounds.append((lo, rng.randint(lo + 1, s)))
            vs = vs.shrink(tuple(bounds))
            ref = ref[tuple(slice(lo, hi) for lo, hi in bounds)]
        elif op == "flip":
            axes = tuple(i for i in range(ref.ndim) if rng.random() < 0.5)
            vs, ref = vs.flip(axes), np.flip(ref, axes)
        else:
            pads = tuple((rng.randint(0, 1), rng.randint(0, 1)) for _ in ref.shape)
            vs, ref = vs.pad(pads), np.pad(ref, pads)
    return base, vs, ref


def test_merging_two_axes_gives_view_reshape_s_view_and_numpy_s_values():
    rng = random.Random(7)
    fast = 0
    for _ in range(3000):
        base, vs, ref = _random_view(rng)
        if len(vs.views) != 1:
            continue
        top = vs.top
        for i in range(len(top.shape) - 1):
            shape = top.shape[:i] + (top.shape[i] * top.shape[i + 1],) + top.shape[i + 2:]
            got, want = _merged(top, i), top.reshape(shape)
            assert got == want, (top, i)
            if got is None:
                continue
            fast += top.mask is None
            np.testing.assert_array_equal(gather(base, ViewStack((got,))), ref.reshape(shape))
    assert fast > 500  # the fast path was exercised, not only the fallback


def test_a_broadcast_pair_merges_to_stride_zero_and_a_transposed_pair_does_not():
    broadcast = View.make((3, 4, 5), (0, 0, 1))
    assert _merged(broadcast, 0) == View.make((12, 5), (0, 1))
    transposed = View.contiguous((4, 6)).permute((1, 0))
    assert _merged(transposed, 0) is None
