"""The parity walk: every public name of Tensor (methods and properties), every operator it
defines, and every nn layer has a parity row (a `Case` or `LayerCase` in a module-level list of
tests/frontend/test_tensor_parity_*.py whose `name` or `covers` names it), or an entry in
NOT_A_ROW naming the test that checks it. Also the focused tests some NOT_A_ROW entries name."""
import ast
import importlib
import inspect
import operator
from pathlib import Path

import numpy as np
import pytest
import torch

from parity_harness import Case, LayerCase
from tinylab import Tensor, nn

TESTS = Path(__file__).resolve().parents[1]
PARITY_FILES = sorted(Path(__file__).parent.glob("test_tensor_parity_*.py"))
CORE = "frontend/test_tensor_core.py"
CREATION = "frontend/test_tensor_creation.py"
WALK = "frontend/test_tensor_parity_walk.py"

# Names that cannot be a forward/backward row against PyTorch, and the test (relative to tests/)
# that checks each. Every entry must name a test that exists and asserts the behaviour.
NOT_A_ROW = {
    # tinygrad's names (issue 52): random draws and an optimizer flag, each by what it does
    "randperm": "frontend/test_tinygrad_names.py::"
                "test_randperm_is_a_permutation_and_each_position_is_uniform",
    "multinomial": "frontend/test_tinygrad_names.py::"
                   "test_multinomial_draws_in_proportion_to_the_weights",
    "is_param": "frontend/test_tinygrad_names.py::"
                "test_is_param_false_makes_a_buffer_the_optimizer_realizes_but_never_updates",
    "is_param_": "frontend/test_tinygrad_names.py::"
                 "test_is_param_false_makes_a_buffer_the_optimizer_realizes_but_never_updates",
    # autograd API: checked by what it does to .grad and the returned gradients
    "backward": f"{CORE}::test_backward_accumulates_and_grad_can_be_cleared",
    "grad": f"{CORE}::test_backward_accumulates_and_grad_can_be_cleared",
    "gradient": f"{CORE}::test_gradient_returns_tensors_and_zeros_for_unused_targets",
    "requires_grad": f"{CORE}::test_detach_and_requires_grad_flags",
    "requires_grad_": f"{CORE}::test_detach_and_requires_grad_flags",
    "no_grad": f"{CORE}::test_no_grad_detaches_what_it_builds",
    "pending_backward_roots": f"{WALK}::test_pending_backward_roots_lists_each_unrealized_root_once",
    # reading values out
    "numpy": f"{CORE}::test_numpy_returns_the_dtype_pytorch_would",
    "item": f"{CORE}::test_item_tolist_and_python_conversions",
    "tolist": f"{CORE}::test_item_tolist_and_python_conversions",
    "data": f"{WALK}::test_data_is_a_memoryview_of_the_values",
    "__bool__": f"{CORE}::test_item_tolist_and_python_conversions",
    "__int__": f"{CORE}::test_item_tolist_and_python_conversions",
    "__float__": f"{CORE}::test_item_tolist_and_python_conversions",
    "__len__": f"{CORE}::test_item_tolist_and_python_conversions",
    "__index__": f"{WALK}::test_index_converts_one_element_integer_tensors_like_torch",
    # metadata
    "shape": f"{WALK}::test_metadata_matches_torch",
    "dtype": f"{WALK}::test_metadata_matches_torch",
    "ndim": f"{WALK}::test_metadata_matches_torch",
    "numel": f"{WALK}::test_metadata_matches_torch",
    "size": f"{WALK}::test_metadata_matches_torch",
    "element_size": f"{WALK}::test_metadata_matches_torch",
    "nbytes": f"{WALK}::test_metadata_matches_torch",
    "is_floating_point": f"{WALK}::test_metadata_matches_torch",
    "node": f"{WALK}::test_node_and_lazydata_are_the_graph_node",
    "lazydata": f"{WALK}::test_node_and_lazydata_are_the_graph_node",
    # devices, buffers and in-place writes
    "device": f"{CORE}::test_to_device_moves_values_and_gradients",
    "to": f"{CORE}::test_to_device_moves_values_and_gradients",
    "to_": f"{CORE}::test_to_device_moves_values_and_gradients",
    "realize": f"{CORE}::test_realize_several_and_replace",
    "replace": f"{CORE}::test_realize_several_and_replace",
    "assign": f"{CORE}::test_assign_writes_in_place_and_clone_keeps_the_old_value",
    "__setitem__": "frontend/test_tensor_parity_movement.py::test_setitem_matches_numpy",
    "__iadd__": f"{WALK}::test_in_place_operators_match_torch",
    "__isub__": f"{WALK}::test_in_place_operators_match_torch",
    "__imul__": f"{WALK}::test_in_place_operators_match_torch",
    "__itruediv__": f"{WALK}::test_in_place_operators_match_torch",
    # modes
    "train": f"{CORE}::test_training_switches",
    "test": f"{CORE}::test_training_switches",
    # values that are random or unset: checked by their statistics, seeding, shape and dtype
    "rand": f"{CREATION}::test_random_distribution_statistics",
    "randn": f"{CREATION}::test_random_distribution_statistics",
    "randint": f"{CREATION}::test_random_distribution_statistics",
    "normal": f"{CREATION}::test_random_distribution_statistics",
    "uniform": f"{CREATION}::test_random_distribution_statistics",
    "scaled_uniform": f"{CREATION}::test_random_distribution_statistics",
    "glorot_uniform": f"{CREATION}::test_random_distribution_statistics",
    "kaiming_uniform": f"{CREATION}::test_random_distribution_statistics",
    "kaiming_normal": f"{CREATION}::test_random_distribution_statistics",
    "rand_like": f"{CREATION}::test_random_distribution_statistics",
    "randn_like": f"{CREATION}::test_random_distribution_statistics",
    "manual_seed": f"{CREATION}::test_manual_seed_makes_draws_repeatable",
    "empty": f"{WALK}::test_empty_has_the_shape_and_dtype_torch_gives",
    "empty_like": f"{WALK}::test_empty_has_the_shape_and_dtype_torch_gives",
}

# Python's object machinery, not Tensor behaviour
NOT_OPERATORS = {"__array_priority__", "__class__", "__doc__", "__hash__", "__init__",
                 "__init_subclass__", "__module__", "__repr__", "__slots__", "__subclasshook__",
                 "__weakref__"}

def public_names() -> set[str]:
    """Tensor's public methods and properties, and the operators it defines."""
    names = {n for n in dir(Tensor) if not n.startswith("_")}
    operators = {n for n in dir(Tensor) if n.startswith("__") and n.endswith("__")
                 and getattr(Tensor, n, None) is not getattr(object, n, None)}
    return names | (operators - NOT_OPERATORS)


def layer_names() -> set[str]:
    return {n for n in nn.__all__ if inspect.isclass(getattr(nn, n))}


def parity_rows() -> list:
    """Every Case / LayerCase in a module-level list of a parity file."""
    rows = []
    for path in PARITY_FILES:
        module = importlib.import_module(path.stem)
        for value in vars(module).values():
            if not isinstance(value, list):
                continue
            rows += [row for row in value if isinstance(row, (Case, LayerCase))]
    return rows


def covered_names() -> dict[str, int]:
    """name -> how many rows cover it."""
    counts: dict[str, int] = {}
    for row in parity_rows():
        for name in {row.name, *row.covers}:
            counts[name] = counts.get(name, 0) + 1
    return counts


def test_every_public_tensor_name_has_a_parity_row():
    covered = covered_names()
    missing = sorted(public_names() - set(covered) - set(NOT_A_ROW))
    assert not missing, f"Tensor names without a parity row or a NOT_A_ROW entry: {missing}"


def test_every_nn_layer_has_a_parity_row():
    missing = sorted(layer_names() - set(covered_names()))
    assert not missing, f"nn layers without a LayerCase row: {missing}"


def test_not_a_row_entries_name_existing_tests_of_existing_names():
    stale = sorted(set(NOT_A_ROW) - public_names())
    assert not stale, f"NOT_A_ROW names that Tensor no longer has: {stale}"
    both = sorted(set(NOT_A_ROW) & set(covered_names()))
    assert not both, f"names with a row that NOT_A_ROW also excuses (delete the entry): {both}"
    missing = []
    for name, target in NOT_A_ROW.items():
        path, function = target.split("::")
        tree = ast.parse((TESTS / path).read_text())
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        if function not in defined:
            missing.append(f"{name}: {target}")
    assert not missing, f"NOT_A_ROW entries whose test does not exist: {missing}"


def test_rows_cover_only_existing_names():
    """A row's `covers` must not name something Tensor lacks (a typo would cover nothing)."""
    known = public_names() | layer_names()
    unknown = sorted({name for row in parity_rows() for name in row.covers} - known)
    assert not unknown, f"rows cover names that do not exist: {unknown}"


# ---- the focused tests NOT_A_ROW names ----
def test_metadata_matches_torch():
    for array in [np.zeros((2, 3), np.float32), np.zeros((), np.int64), np.zeros((0, 4), bool),
                  np.zeros((5,), np.float16), np.zeros((1, 2, 1), np.uint8)]:
        ours, theirs = Tensor(array), torch.from_numpy(array)
        assert ours.shape == tuple(theirs.shape) and ours.ndim == theirs.ndim
        assert ours.numel() == theirs.numel() and ours.element_size() == theirs.element_size()
        assert ours.nbytes() == theirs.nbytes and ours.dtype.np == array.dtype
        assert ours.is_floating_point() == theirs.is_floating_point()
        assert ours.size() == tuple(theirs.size())
        for dim in range(-array.ndim, array.ndim):
            assert ours.size(dim) == theirs.size(dim)
    assert (Tensor.ones(2, 3) + 1).shape == (2, 3)  # lazy tensors know their shape too


def test_node_and_lazydata_are_the_graph_node():
    x = Tensor([1.0, 2.0])
    y = x * 2
    assert y.lazydata is y.node and y.node.src[0] is x.node
    assert y.node.shape == (2,) and y.node.dtype == y.dtype


def test_data_is_a_memoryview_of_the_values():
    view = (Tensor([[1.5, -2.0], [3.0, 4.0]]) * 2).data()
    assert isinstance(view, memoryview) and view.shape == (2, 2) and view.format == "f"
    assert view.tolist() == [[3.0, -4.0], [6.0, 8.0]]


def test_index_converts_one_element_integer_tensors_like_torch():
    items = list(range(10))
    assert items[Tensor(3)] == items[torch.tensor(3)] == 3
    assert items[Tensor([7])] == 7
    for bad in (Tensor(1.5), Tensor([1, 2])):
        with pytest.raises(TypeError):
            items[bad]


def test_pending_backward_roots_lists_each_unrealized_root_once():
    Tensor.pending_backward_roots()  # forget roots earlier tests left
    x = Tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    loss.backward()
    realized = (x * 3).sum().realize()
    realized.backward()
    assert Tensor.pending_backward_roots() == [loss]  # the realized one is not pending
    assert Tensor.pending_backward_roots() == []      # and the list is forgotten


@pytest.mark.parametrize("in_place", [operator.iadd, operator.isub, operator.imul,
                                      operator.itruediv], ids=lambda f: f.__name__)
def test_in_place_operators_match_torch(in_place):
    """x op= y (a broadcast tensor, then a scalar) writes into x's own buffer: the same Tensor
    object and buffer, with torch's values."""
    base = np.array([[1.0, -2.0, 3.0], [4.0, 0.5, -6.0]], np.float32)
    other = np.array([2.0, -0.5, 4.0], np.float32)
    ours, theirs = Tensor(base.copy()), torch.from_numpy(base.copy())
    buffer = ours.realize().node.buffer
    for ours_value, theirs_value in [(Tensor(other), torch.from_numpy(other)), (3, 3)]:
        assert in_place(ours, ours_value) is ours and in_place(theirs, theirs_value) is theirs
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
        assert ours.node.buffer is buffer


def test_empty_has_the_shape_and_dtype_torch_gives():
    for ours, theirs in [(Tensor.empty(2, 3), torch.empty(2, 3)),
                         (Tensor.empty((0, 4), dtype="int64"), torch.empty(0, 4,
                                                                           dtype=torch.int64)),
                         (Tensor.empty(), torch.empty(())),
                         (Tensor([[1, 2]]).empty_like(), torch.empty_like(torch.ones(1, 2)))]:
        assert ours.shape == tuple(theirs.shape)
        assert ours.numpy().shape == tuple(theirs.shape)
    assert Tensor.empty((0, 4), dtype="int64").numpy().dtype == np.int64
    assert Tensor([[1, 2]]).empty_like().dtype == Tensor([[1, 2]]).dtype
