"""Where a node will sit once the graph is cut, read off the graph before cutting: whether it
gets a buffer of its own (`has_buffer`) or is computed inside the reduce loop that reads it
(`fused_into_reduce`). The target rewrites (packing.py, relayout.py) run before the one cut
and ask this instead of a cut schedule; the answers follow the rules of cuts.py and regions.py
that apply to a reduce's product and its operands (a rule that depends on the whole cut, a
buffer limit say, is not foreseen: such a schedule is the same, without the rewrite).
`Placement(outputs, realized, options)` is built once per rewrite pass by those modules.
"""
from __future__ import annotations

from ..ir import node as ir
from ..ir.node import Node
from ..ir.movement_ops import MOVEMENTS
from ..ir.ops import ALU, MOVEMENT, REDUCE, Op
from ..ir.symbolic import max_shape
from ..ir.view import ViewStack
from .fusion import SchedulerOptions
from .graph import consumers_of, graph_order, is_leaf
from .regions import RECOMPUTE_FACTOR, RECOMPUTE_WORK, _constant

def operand_chain(node: Node) -> tuple[Node, list[Node]]:
    """(the node under `node`'s movement ops, those movement ops from the bottom up)."""
    chain = []
    while node.op in MOVEMENT:
        chain.append(node)
        node = node.src[0]
    return node, chain[::-1]


def view_of_chain(base: Node, chain: list[Node]) -> ViewStack:
    """The view through which the movement ops `chain` (bottom up) read `base`."""
    stack = ViewStack.contiguous(base.shape)
    for movement in chain:
        stack = MOVEMENTS[movement.op].view(stack, movement.arg)
    return stack


# nodes cuts.py gives a buffer whoever reads them
_OWN_BUFFER = (Op.CONTIGUOUS, Op.ASSIGN, Op.COPY)


class Placement:
    """The graph under `outputs` (stopping at `realized`), its consumers and the rule switches:
    what the questions below read."""

    def __init__(self, outputs: list, realized, options: SchedulerOptions):
        self.outputs, self.realized, self.options = list(outputs), realized, options
        self.graph = graph_order(self.outputs, realized)
        self.consumers = consumers_of(self.graph, realized)
        self.requested = set(self.outputs)

    def reduces(self):
        """The REDUCE_SUM nodes still to compute, sources first."""
        return (n for n in self.graph if n.op is Op.REDUCE_SUM and n not in self.realized)

    def _cut_for_itself(self, node: Node) -> bool:
        """cuts.py's initial cuts: a buffer for `node` whatever kernel reads it."""
        options, readers = self.options, self.consumers.get(node, ())
        if node in self.requested or node.op in _OWN_BUFFER:
            return True
        if any(r.op is Op.COPY for r in readers):
            return True
        if node.op in MOVEMENT or node.op is Op.DETACH:
            return False
        if not options.fuse:
            return True
        if node.op in REDUCE and not options.fuse_after_reduce:
            return True
        return not options.recompute_shared and len(readers) > 1

    def fused_into_reduce(self, product: Node, reduce: Node) -> bool:
        """`product` (reduce's source) is computed inside reduce's loop, no buffer between."""
        if reduce.src[0] is not product or is_leaf(product, self.realized):
            return False
        if not self.options.fuse_into_reduce:
            return False
        return not self._cut_for_itself(product)

    def fused_through(self, product: Node, chain: list) -> bool:
        """`product` and the movement ops `chain` above it (bottom up) get no buffer: a reduce
        that reads the top of `chain`, fused into it, computes `product` in its loop."""
        return not is_leaf(product, self.realized) and \
            not any(self._cut_for_itself(n) for n in (product, *chain))

    def has_buffer(self, operand: Node, chain: list, product: Node) -> bool:
        """`operand` (a product's source under the movement ops `chain`) is read from a buffer
        by the kernel of the reduce of `product`: already one, cut for itself, a reduce (one
        reduce loop per kernel), or too costly to recompute through a broadcast in `chain`."""
        if is_leaf(operand, self.realized) or operand.op in REDUCE:
            return True
        if self._cut_for_itself(operand):
            return True
        return any(m.op is Op.EXPAND for m in chain) and \
            self._recompute_too_costly(operand, product)

    def _recompute_too_costly(self, node: Node, product: Node) -> bool:
        """regions.py's expensive-recompute rule for `node` read inside the reduce loop over
        `product`'s space (counting its ALU ops down to buffers, as a first walk does)."""
        options = self.options
        if not options.recompute_limit or node.op not in ALU or _constant(node):
            return False
        factor = ir.prod(max_shape(product.shape)) // max(ir.prod(max_shape(node.shape)), 1)
        if factor < RECOMPUTE_FACTOR:
            return False
        ops = self._fused_ops(node)
        return ops >= options.recompute_limit or ops * factor >= RECOMPUTE_WORK

    def _fused_ops(self, node: Node) -> int:
        seen, stack, count = set(), [node], 0
        while stack:
            n = stack.pop()
            if n in seen or n.op in REDUCE or (n is not node and (
                    is_leaf(n, self.realized) or self._cut_for_itself(n))):
                continue
            seen.add(n)
            count += n.op in ALU
            stack.extend(n.src)
        return count
