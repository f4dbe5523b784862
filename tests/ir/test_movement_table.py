"""ir/movement_ops.py's MOVEMENTS is the one table of the movement ops: each row builds the node,
moves a ViewStack and moves a numpy array, and every place that applies a movement by op (the
builders, schedule/graph.py's views, the numpy oracle) goes through it. Each column is checked
against numpy written out by hand."""
import numpy as np
import pytest

from tinylab import Tensor
from tinylab.ir import node as ir
from tinylab.ir.evaluate import evaluate, gather
from tinylab.ir.movement_ops import MOVEMENTS
from tinylab.ir.ops import MOVEMENT, Op
from tinylab.ir.view import ViewStack
from tinylab.schedule import graph

X = np.arange(12, dtype=np.float32).reshape(3, 4)
CASES = [  # (op, arg, numpy's answer)
    (Op.RESHAPE, (4, 3), X.reshape(4, 3)),
    (Op.PERMUTE, (1, 0), X.T),
    (Op.EXPAND, (2, 3, 4), None),   # from (1, 3, 4): filled in below
    (Op.PAD, ((1, 0), (0, 2)), np.pad(X, ((1, 0), (0, 2)))),
    (Op.SHRINK, ((1, 3), (0, 2)), X[1:3, 0:2]),
    (Op.FLIP, (1,), X[:, ::-1]),
]


def _source(op):
    return X[None] if op is Op.EXPAND else X


def _expected(op, want):
    return np.broadcast_to(X[None], (2, 3, 4)) if op is Op.EXPAND else want


def test_one_row_per_movement_op():
    assert set(MOVEMENTS) == MOVEMENT and len(CASES) == len(MOVEMENT)


@pytest.mark.parametrize("op,arg,want", CASES, ids=[c[0].name for c in CASES])
def test_each_column_moves_like_numpy(op, arg, want):
    source, want = _source(op), _expected(op, want)
    np.testing.assert_array_equal(MOVEMENTS[op].array(source, arg), want)
    # the view column, read through the flat source
    view = MOVEMENTS[op].view(ViewStack.contiguous(source.shape), arg)
    assert graph.apply_movement(ViewStack.contiguous(source.shape), op, arg) == view
    np.testing.assert_array_equal(gather(source.reshape(-1), view), want)
    # the node column, evaluated by the oracle (which reads the array column per node)
    node = ir.movement(op, Tensor(source).node, arg)
    assert node.op is op and node.shape == want.shape and node.arg == arg
    np.testing.assert_array_equal(evaluate(node), want)

