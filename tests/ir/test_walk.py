"""ir/walk.py's one rebuild-a-node walk and Node.replace: a rewrite visits sources first, each
node once (shared subgraphs too), deep chains without recursion, and the rewritten graph
computes what the numpy oracle says the rewritten expression computes."""
import sys

import numpy as np
import pytest

from tinylab.dtype import dtypes
from tinylab.ir import node as ir
from tinylab.ir import walk
from tinylab.ir.evaluate import evaluate
from tinylab.ir.ops import Op


def _const(value):
    return ir.const(np.float32(value).item(), dtypes.float32, (3,), "CPU")


def test_replace_changes_only_the_named_fields_and_interns():
    a, b = _const(2.0), _const(3.0)
    added = ir.alu(Op.ADD, a, b)
    multiplied = added.replace(op=Op.MUL)
    assert multiplied is ir.alu(Op.MUL, a, b)          # interned: the same node
    assert multiplied.src == added.src and multiplied.shape == added.shape
    assert added.replace() is added
    with pytest.raises(TypeError, match="no field colour"):
        added.replace(colour="red")


def test_rewrite_visits_each_node_once_sources_first_and_computes_right():
    a, b = _const(2.0), _const(5.0)
    shared = ir.alu(Op.ADD, a, b)
    root = ir.alu(Op.MUL, shared, ir.alu(Op.ADD, shared, a))   # (a+b) * ((a+b)+a)
    seen = []

    def add_to_max(node, sources):
        seen.append(node)
        assert all(s in [seen_node for seen_node in seen] or s.op is Op.CONST
                   for s in node.src)                            # sources came first
        rebuilt = walk.rebuilt(node, sources)
        return rebuilt.replace(op=Op.MAX) if rebuilt.op is Op.ADD else rebuilt
    (new,) = walk.rewrite([root], add_to_max)
    assert len(seen) == len(set(seen)) == len(ir.toposort([root]))
    np.testing.assert_array_equal(evaluate(new), np.full(3, max(2, 5) * max(max(2, 5), 2)))
    np.testing.assert_array_equal(evaluate(root), np.full(3, (2 + 5) * ((2 + 5) + 2)))


def test_rewrite_walks_a_chain_deeper_than_the_recursion_limit():
    node = _const(0.0)
    for _ in range(sys.getrecursionlimit() + 500):
        node = ir.alu(Op.ADD, node, _const(1.0))
    memo: dict = {}
    (same,) = walk.rewrite([node], walk.rebuilt, memo)
    assert same is node and len(memo) == len(ir.toposort([node]))
    (again,) = walk.rewrite([node], lambda n, s: pytest.fail("memo says done"), memo)
    assert again is node
