"""Realized views stay views, and values keep what they read (issue 52): a realize of a view of
realized storage has nothing to compute and leaves it a view (tinygrad's behaviour; PyTorch has
no copy either), views made of a lazy tensor alias it once it is realized, a chain that folds
back to the base (t.T.T) is a view, a bitcast is a view (torch's `view(dtype)`), and values that
fold to a buffer (t * 1) or copy it in the same realize as a write keep the old values. Each
case checked against the same program in PyTorch."""
import numpy as np
import pytest
import torch

from tinylab import Tensor, TinyJit, dtypes

START = np.arange(8, dtype=np.float32).reshape(4, 2)


def test_the_issue_example_a_realized_row_stays_a_view_of_its_base():
    t = Tensor(START.copy()).contiguous().realize()
    r = t[3].realize()
    t[3] = t[1]
    t[0] = r.realize()
    expected = torch.tensor(START)
    r_torch = expected[3]
    expected[3] = expected[1]
    expected[0] = r_torch
    np.testing.assert_array_equal(t.numpy(), expected.numpy())  # [[2,3],[2,3],[4,5],[2,3]]


VIEWS = {  # each is a view in PyTorch (flip is one here too; read through the same index map)
    "row": lambda t: t[1],
    "T": lambda t: t.T,
    "slice": lambda t: t[1:3],
    "step": lambda t: t[::2],
    "reshape": lambda t: t.reshape(8),
    "detach": lambda t: t.detach(),
    "expand": lambda t: t[:1].expand(3, 2),
    "T of T": lambda t: t.T.T,  # folds back to the base's own node
    "reshape round trip": lambda t: t.reshape(8).reshape(4, 2),
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_a_realized_view_reads_later_writes_to_its_base(name):
    make = VIEWS[name]
    t, expected = Tensor(START.copy()).realize(), torch.tensor(START)
    view, view_torch = make(t).realize(), make(expected)
    before = view.numpy()
    t[1] = Tensor([-1.0, -2.0])
    expected[1] = torch.tensor([-1.0, -2.0])
    np.testing.assert_array_equal(before, make(torch.tensor(START)).numpy())
    np.testing.assert_array_equal(view.numpy(), view_torch.numpy())
    np.testing.assert_array_equal((view * 2).numpy(), (view_torch * 2).numpy())


@pytest.mark.parametrize("name", ["row", "T", "slice", "step", "reshape", "detach", "T of T",
                                  "reshape round trip"])
def test_writes_through_a_realized_view_land_in_the_base(name):
    make = VIEWS[name]
    t, expected = Tensor(START.copy()).realize(), torch.tensor(START)
    view, view_torch = make(t).realize(), make(expected)
    view.assign(Tensor(np.full(view.shape, 7.0, np.float32)))
    view_torch.copy_(torch.full(view_torch.shape, 7.0))
    np.testing.assert_array_equal(t.numpy(), expected.numpy())
    view += 1
    view_torch += 1
    np.testing.assert_array_equal(t.numpy(), expected.numpy())
    np.testing.assert_array_equal(view.numpy(), view_torch.numpy())


def test_realizing_a_view_realizes_the_write_pending_in_its_base():
    t = Tensor(START.copy()).realize()
    row = t[2]
    t.assign(t * 10)
    row.realize()
    np.testing.assert_array_equal(row.numpy(), START[2] * 10)
    t[2] = Tensor([0.5, 0.25])
    np.testing.assert_array_equal(row.numpy(), [0.5, 0.25])


def test_views_of_a_lazy_tensor_alias_it_once_it_is_realized():
    x = Tensor(START.copy())
    t, expected = x.contiguous(), torch.tensor(START).contiguous()
    row, row_torch = t[1], expected[1]
    t.realize()
    t[1] = Tensor([9.0, 9.0])
    expected[1] = torch.tensor([9.0, 9.0])
    np.testing.assert_array_equal(row.numpy(), row_torch.numpy())


def test_a_bitcast_is_a_view_that_writes_go_through():
    a = Tensor([0.5, 8.0], dtype=dtypes.float32).realize()
    bits = np.array([2.0, -1.5], np.float32).view(np.uint32)
    a.bitcast(dtypes.uint32).assign(Tensor(bits, dtype=dtypes.uint32)).realize()
    np.testing.assert_array_equal(a.numpy(), [2.0, -1.5])   # the issue's example


@pytest.mark.parametrize("write", ["setitem", "assign", "iadd"])
def test_bitcast_views_match_torch_view_dtype(write):
    start = np.array([[1.0, -2.0, 3.5], [0.25, 8.0, -0.5]], np.float32)
    t, expected = Tensor(start.copy()).realize(), torch.tensor(start)
    view, view_torch = t.T.bitcast(dtypes.int32), expected.T.view(torch.int32)
    realized = view.realize()  # still the view
    if write == "setitem":
        view[1] = Tensor([1 << 30, -7], dtype=dtypes.int32)
        view_torch[1] = torch.tensor([1 << 30, -7], dtype=torch.int32)
    elif write == "assign":
        value = np.arange(6, dtype=np.int32).reshape(3, 2) << 23
        view.assign(Tensor(value))
        view_torch.copy_(torch.tensor(value))
    else:
        view += 1 << 23  # doubles each float
        view_torch += 1 << 23
    np.testing.assert_array_equal(t.numpy(), expected.numpy())
    np.testing.assert_array_equal(realized.numpy(), view_torch.numpy())


def test_values_folded_onto_a_buffer_keep_the_old_value_after_an_assign():
    t, expected = Tensor(START.copy()).realize(), torch.tensor(START)
    same, same_torch = t * 1, expected * 1   # folds to t's own buffer node here
    t.assign(t + 100)
    expected.add_(100)
    Tensor.realize(t, same)
    np.testing.assert_array_equal(same.numpy(), same_torch.numpy())
    np.testing.assert_array_equal(t.numpy(), expected.numpy())


def test_the_issue_example_two_assigns_realized_together_read_copies_made_before():
    def run(tensor, full, realize):
        p, q, w = full((4, 4), 10.0), full((4,), 1.0), full((4,), 2.0)
        r0, r1 = (p - w.contiguous()).sum(1), (p - q.contiguous()).sum(1)
        q.assign(r0 * q) if hasattr(q, "assign") else q.copy_(r0 * q)
        w.assign(r1 * w) if hasattr(w, "assign") else w.copy_(r1 * w)
        realize(q, w)
        return q.numpy(), w.numpy()
    ours = run(Tensor, lambda s, v: Tensor.full(s, v).contiguous().realize(), Tensor.realize)
    theirs = run(torch, lambda s, v: torch.full(s, v), lambda *a: None)
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])   # 72, not -176


def test_a_copy_asked_for_with_the_write_keeps_the_old_value():
    t = Tensor(np.array([-7.0, -6.0, -5.0, -3.0], np.float32)).realize()
    copy = t.contiguous()
    t.assign(copy * t + 1)
    Tensor.realize(t, copy)
    np.testing.assert_array_equal(copy.numpy(), [-7.0, -6.0, -5.0, -3.0])
    np.testing.assert_array_equal(t.numpy(), [50.0, 37.0, 26.0, 10.0])


def test_a_kernel_reading_old_and_new_values_of_one_buffer():
    """A reduce of the old value is read both by the assign and, with the new value, by a later
    reduce: no kernel order serves both reads, so the old value is copied first."""
    start = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    t = Tensor(start.copy()).realize()
    old_sum = t.sum(-1, keepdim=True) + t * 0
    t.assign(old_sum * t + 1)
    later = (t - old_sum).sum(-1, keepdim=True) + t * 0
    Tensor.realize(t, later)
    old = start.sum()
    new = old * start + 1
    np.testing.assert_array_equal(t.numpy(), new)
    np.testing.assert_array_equal(later.numpy(), np.full(4, (new - old).sum()))
    np.testing.assert_array_equal(old_sum.numpy(), np.full(4, old))


def test_a_jitted_step_takes_views_as_inputs_and_returns_views_as_copies():
    base = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4)).realize()

    @TinyJit
    def step(x):
        return x.reshape(4) * 2, x.reshape(2, 2)

    for i in range(4):
        base[i % 3] = Tensor(np.full(4, float(i), np.float32))
        doubled, square = step(base[i % 3])
        np.testing.assert_array_equal(doubled.numpy(), np.full(4, 2.0 * i))
        np.testing.assert_array_equal(square.numpy(), np.full((2, 2), float(i)))
