"""Writes through views (issue 29): setitem, assign and `+=` on a view of a realized tensor land in
its base, as in PyTorch; lazy values made before keep their values; a write two elements would
share, or one into padding, raises before anything is written. Checked against PyTorch."""
import numpy as np
import pytest
import torch

from tinylab import Tensor
from tinylab.errors import WriteError

F32 = np.float32
START = np.arange(12, dtype=F32).reshape(3, 4)

VIEWS = {  # name: (tinylab view, the same PyTorch view)
    "row": (lambda t: t[1], lambda t: t[1]),
    "T": (lambda t: t.T, lambda t: t.T),
    "permute": (lambda t: t.permute(1, 0), lambda t: t.permute(1, 0)),
    "flip": (lambda t: t.flip(0), lambda t: t.flip(0)),  # PyTorch copies: see _torch_write
    "step": (lambda t: t[::2], lambda t: t[::2]),
    "negative step": (lambda t: t[:, ::-2], lambda t: t.flip(1)[:, ::2]),
    "reshape": (lambda t: t.reshape(12), lambda t: t.reshape(12)),
    "reshape of T": (lambda t: t.T.reshape(2, 6), lambda t: t.T.reshape(2, 6)),
    "detach": (lambda t: t.detach(), lambda t: t.detach()),
    "slice of permute": (lambda t: t.permute(1, 0)[1:3], lambda t: t.permute(1, 0)[1:3]),
    "chain": (lambda t: t[1:, ::-1].T.reshape(8)[2:7], lambda t: t[1:].flip(1).T.reshape(8)[2:7]),
}


def _torch_write(name, base: torch.Tensor, write) -> np.ndarray:
    """The base after `write(view)` in PyTorch. flip and a reshape of a transpose copy there; the
    same elements are reached through the index map of a tensor of positions."""
    positions = torch.arange(base.numel()).reshape(base.shape)
    index = VIEWS[name][1](positions).contiguous()
    view = base.reshape(-1)[index.reshape(-1)].reshape(index.shape).clone()
    write(view)
    out = base.clone().reshape(-1)
    out[index.reshape(-1)] = view.reshape(-1)
    return out.reshape(base.shape).numpy()


def _fresh():
    return Tensor(START.copy()).realize()


@pytest.mark.parametrize("name", list(VIEWS))
def test_setitem_assign_and_iadd_through_a_view_land_in_the_base(name):
    make = VIEWS[name][0]
    t = _fresh()
    view = make(t)
    view[0] = -1.0
    np.testing.assert_array_equal(t.numpy(), _torch_write(name, torch.tensor(START),
                                                          lambda v: v.__setitem__(0, -1.0)))
    t = _fresh()
    view = make(t)
    value = np.arange(view.numel(), dtype=F32).reshape(view.shape) * 10
    view.assign(Tensor(value))
    np.testing.assert_array_equal(t.numpy(), _torch_write(name, torch.tensor(START),
                                                          lambda v: v.copy_(torch.tensor(value))))
    t = _fresh()
    view = make(t)
    view += 100
    np.testing.assert_array_equal(t.numpy(), _torch_write(name, torch.tensor(START),
                                                          lambda v: v.add_(100)))
    np.testing.assert_array_equal(view.numpy(), VIEWS[name][1](torch.tensor(t.numpy())).numpy())


def test_the_issue_examples_write_through():
    t = Tensor.zeros(3, 3).contiguous().realize()
    ref = torch.zeros(3, 3)
    t[1][2] = 5
    ref[1][2] = 5
    t.T[2, 1] = 7
    ref.T[2, 1] = 7
    t[::2][1] = 4
    ref[::2][1] = 4
    t.reshape(9)[5] = 1
    ref.reshape(9)[5] = 1
    t.detach()[0, 1] = 9
    ref.detach()[0, 1] = 9
    np.testing.assert_array_equal(t.numpy(), ref.numpy())
    t.flip(0)[0] = 3  # PyTorch's flip copies; the index map: flip(0)[0] is row 2
    ref[2] = 3
    np.testing.assert_array_equal(t.numpy(), ref.numpy())
    u = np.arange(9, dtype=F32).reshape(3, 3)
    t.permute(1, 0).assign(Tensor(u))
    ref.permute(1, 0).copy_(torch.tensor(u))
    np.testing.assert_array_equal(t.numpy(), ref.numpy())


def test_lazy_values_made_before_a_write_keep_their_values():
    t = Tensor.zeros(3, 3).contiguous().realize()
    s0 = t.sum()
    row = t[0] * 2  # computed from a view: a value, not a view
    t[:3].assign(1.0)
    s1 = t.sum()
    t[1][1] = 5
    assert (s0.item(), s1.item(), t.sum().item()) == (0.0, 9.0, 13.0)
    np.testing.assert_array_equal(row.numpy(), [0, 0, 0])


def test_views_held_across_a_write_see_it_as_in_pytorch():
    t, ref = _fresh(), torch.tensor(START)
    column, ref_column = t.T[1], ref.T[1]
    flat, ref_flat = t.reshape(12), ref.reshape(12)
    t[0, 1] = 50
    ref[0, 1] = 50
    flat[5] = 60
    ref_flat[5] = 60
    t.assign(t * 2)
    ref.mul_(2)
    np.testing.assert_array_equal(column.numpy(), ref_column.numpy())
    np.testing.assert_array_equal(flat.numpy(), ref_flat.numpy())
    np.testing.assert_array_equal(t.numpy(), ref.numpy())


def test_a_write_through_a_slice_of_a_permute_then_reduces_matches_pytorch():
    t, ref = _fresh(), torch.tensor(START)
    before = t.sum(0)
    view, ref_view = t.permute(1, 0)[1:3], ref.permute(1, 0)[1:3]
    view[:, 1] = Tensor([7.0, 8.0])
    ref_view[:, 1] = torch.tensor([7.0, 8.0])
    view *= 2
    ref_view *= 2
    np.testing.assert_array_equal(before.numpy(), START.sum(0))
    np.testing.assert_array_equal(t.sum(1).numpy(), ref.sum(1).numpy())
    np.testing.assert_array_equal((t.max(0) + view.sum()).numpy(),
                                  (ref.max(0).values + ref_view.sum()).numpy())


@pytest.mark.parametrize("write", [
    lambda t: t[0:1].expand(3, 4).assign(Tensor.ones(3, 4)),
    lambda t: t[0:1].expand(3, 4).__setitem__((slice(None), 0), 5.0),
    lambda t: t[:, 1:2].expand(3, 4).__iadd__(1),
])
def test_a_write_two_elements_would_share_is_refused_and_writes_nothing(write):
    t = _fresh()
    with pytest.raises(RuntimeError, match="more than one element .* single memory location"):
        write(t)
    np.testing.assert_array_equal(t.numpy(), START)
    with pytest.raises(RuntimeError):  # torch refuses the same writes
        torch.tensor(START)[0:1].expand(3, 4).copy_(torch.ones(3, 4))


def test_one_element_of_an_expanded_view_can_be_written_as_in_pytorch():
    t, ref = _fresh(), torch.tensor(START)
    t[0:1].expand(3, 4)[2, 1] = 9.0
    ref[0:1].expand(3, 4)[2, 1] = 9.0
    np.testing.assert_array_equal(t.numpy(), ref.numpy())


def test_a_write_into_padding_names_the_view_chain():
    t = _fresh()
    with pytest.raises(WriteError, match=r"padding.*BUFFER float32\[3, 4\] -> PAD"):
        t.pad(((1, 0), (0, 0)))[0, 0] = 1.0
    np.testing.assert_array_equal(t.numpy(), START)


def test_repeated_indices_with_different_values_are_refused():
    t = _fresh()
    with pytest.raises(WriteError, match="repeated indices write different values"):
        t[[0, 0]] = Tensor(np.stack([np.ones(4, F32), np.zeros(4, F32)]))
    np.testing.assert_array_equal(t.numpy(), START)
    t[[2, 0, 2], [1, 1, 1]] = Tensor([4.0, 5.0, 4.0])  # equal values: fine, as in PyTorch
    ref = torch.tensor(START)
    ref[[2, 0, 2], [1, 1, 1]] = torch.tensor([4.0, 5.0, 4.0])
    np.testing.assert_array_equal(t.numpy(), ref.numpy())


def test_advanced_setitem_through_a_view_lands_in_the_base():
    t, ref = _fresh(), torch.tensor(START)
    t.T[[0, 3], 1] = Tensor([-1.0, -2.0])
    ref.T[[0, 3], 1] = torch.tensor([-1.0, -2.0])
    np.testing.assert_array_equal(t.numpy(), ref.numpy())


# ---- views of a lazy tensor (found by the issue-29 audit: such writes were dropped) ----------
def _lazy_pair():
    return Tensor.arange(12).reshape(3, 4).contiguous(), torch.arange(12).reshape(3, 4)


@pytest.mark.parametrize("write", [
    lambda t: t[1].__setitem__(2, 50),
    lambda t: t.T.__setitem__((0, 2), 7),
    lambda t: t.flip(0)[0].__setitem__(slice(None), -1),
    lambda t: t[::2].__setitem__(1, 4),
    lambda t: t.reshape(12).__setitem__(5, 1),
    lambda t: t.detach().__setitem__((0, 1), 9),
    lambda t: t.permute(1, 0)[1:3].assign(t.permute(1, 0)[1:3] * 0 + 8),
], ids=["chained", "T", "flip", "step", "reshape", "detach", "permute_assign"])
def test_a_write_through_a_view_of_a_lazy_tensor_lands_in_it(write):
    t, r = _lazy_pair()
    before = t.sum()  # a lazy read from before the write keeps its value
    write(t)
    expected = r.clone()
    _same_write_in_torch(write, expected)
    np.testing.assert_array_equal(t.numpy(), expected.numpy())
    assert before.item() == 66
    np.testing.assert_array_equal((t.sum(0) * 2).numpy(), (expected.sum(0) * 2).numpy())


def _same_write_in_torch(write, r):
    """The same write on a torch tensor (torch's flip copies: write its rows directly)."""
    name = write.__code__.co_names
    if "flip" in name:
        r[2] = -1
    elif "assign" in name:
        r.permute(1, 0)[1:3] = 8
    else:
        write(r)


def test_a_chain_of_views_of_a_lazy_tensor_writes_the_base_and_keeps_other_values():
    t = Tensor.ones(2, 3, 4).contiguous()
    r = torch.ones(2, 3, 4)
    other = Tensor.ones(2, 3, 4).contiguous()  # the same lazy node: it must not change
    v = t.permute(2, 0, 1)[1:]
    v += 1
    w = r.permute(2, 0, 1)[1:]
    w += 1
    t[0][1][::2] = -1
    r[0][1][::2] = -1
    np.testing.assert_array_equal(t.numpy(), r.numpy())
    np.testing.assert_array_equal(v.numpy(), w.numpy())
    np.testing.assert_array_equal(other.numpy(), np.ones((2, 3, 4), np.float32))
