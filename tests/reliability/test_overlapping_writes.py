"""Assigns whose value reads their own target (issue 29.2): overlapping slices shifted forward and
back, a flip of itself through a slice, swapping two halves, a write then a full read, and an
assign feeding two reduces that feed an assign. Each backend, fused and not, against numpy; the
copy the scheduler makes first is a recorded ASSIGN_HAZARD cut."""
import numpy as np
import pytest

from tinylab import Context, Tensor
from tinylab.engine.realize import REALIZED
from tinylab.schedule.fusion import Reason
from tinylab.schedule.schedule import schedule

F32 = np.float32
START = np.arange(10, dtype=F32)


def _shift_forward(t):
    t[1:].assign(t[:-1])


def _shift_back(t):
    t[:-1].assign(t[1:])


def _flip_through_a_slice(t):
    t[2:8].assign(t[2:8].flip(0))


def _swap_halves(t):
    first, second = t[:5], t[5:]
    a, b = second.contiguous(), first.contiguous()  # lazy: the values before the writes
    first.assign(a)
    second.assign(b)


def _setitem_overlap(t):
    t[3:] = t[:7] * 2


def _numpy_shift_forward(x):
    x[1:] = x[:-1].copy()


def _numpy_shift_back(x):
    x[:-1] = x[1:].copy()


def _numpy_flip(x):
    x[2:8] = x[2:8][::-1].copy()


def _numpy_swap(x):
    x[:5], x[5:] = x[5:].copy(), x[:5].copy()


def _numpy_setitem_overlap(x):
    x[3:] = x[:7] * 2


CASES = {"shift forward": (_shift_forward, _numpy_shift_forward),
         "shift back": (_shift_back, _numpy_shift_back),
         "flip through a slice": (_flip_through_a_slice, _numpy_flip),
         "swap halves": (_swap_halves, _numpy_swap),
         "setitem overlap": (_setitem_overlap, _numpy_setitem_overlap)}


@pytest.mark.parametrize("fuse", [1, 0])
@pytest.mark.parametrize("name", list(CASES))
def test_an_assign_reading_its_target_through_an_overlapping_view_is_right(device, name, fuse):
    ours, reference = CASES[name]
    with Context(FUSE=fuse):
        t = Tensor(START.copy()).realize()
        before = t.sum()
        ours(t)
        expected = START.copy()
        reference(expected)
        np.testing.assert_array_equal(t.numpy(), expected)
        assert before.item() == START.sum()


def test_a_write_then_a_full_read_and_reduces_feeding_an_assign(device):
    t = Tensor(START.copy()).realize()
    out = Tensor(np.zeros(2, F32)).realize()
    t[2:5] = 7.0
    total = t.sum()  # a full read after the write
    t.assign(t * 2)
    peak, low = t.max(), t.min()  # two reduces of the assigned value feed one assign
    out.assign(Tensor.stack(peak, low) + total)
    expected = START.copy()
    expected[2:5] = 7
    np.testing.assert_array_equal(out.numpy(), [2 * expected.max() + expected.sum(),
                                                2 * expected.min() + expected.sum()])
    np.testing.assert_array_equal(t.numpy(), expected * 2)


def test_an_overlapping_slice_assign_is_a_recorded_cut():
    t = Tensor(START.copy()).realize()
    t[1:].assign(t[:-1])
    sched = schedule([t.node], realized=REALIZED)
    cuts = [d for d in sched.decisions if d.reason is Reason.ASSIGN_HAZARD]
    assert len(cuts) == 1 and not cuts[0].merged
    assert "overlapping" in cuts[0].evidence["detail"]
    np.testing.assert_array_equal(t.numpy(), np.concatenate([[0], START[:-1]]))
