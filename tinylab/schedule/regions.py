"""One kernel's region: starting from a node that gets a buffer, `walk_region` collects the nodes
fused into its kernel (its reduce, what runs inside the reduce loop) and notes the nodes that must
be cut instead, with their reason. The walk's `Mode` says where a node sits relative to the
kernel's reduce; a `CutContext` carries what every walk reads. Used by cuts.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..ir import node as ir
from ..ir.node import Node
from ..ir.ops import ALU, MOVEMENT, REDUCE, Op
from ..ir.symbolic import max_shape
from .fusion import Reason, SchedulerOptions
from .graph import is_leaf, kernel_root, reshape_like_permute, through_movement

# a producer recomputed at least this many times per value is checked against recompute_limit
RECOMPUTE_FACTOR = 4
# ...and, however short, against this many ALU ops redone per value: a relu read by a conv
# through its sliding windows (~500 copies) costs more recomputed than one pass to a buffer
RECOMPUTE_WORK = 128


class Mode(Enum):
    """Where the walk is, relative to the kernel's reduce."""
    POST = "post"    # at or after the reduce: the kernel's output side, read in store order
    PRE = "pre"      # inside the reduce loop: the values the reduce folds
    DIRTY = "dirty"  # after the reduce, read through a view that reorders, pads or expands it


@dataclass
class CutContext:
    """What the walks of one pass over the graph read: the nodes cut so far (node -> (reason,
    detail)), the nodes already in buffers, the rule switches, and a memo of fused_ops."""
    cut: dict
    realized: object
    options: SchedulerOptions
    fused_ops_memo: dict = field(default_factory=dict)


@dataclass
class Region:
    """The nodes one kernel computes, from the node that gets its buffer down to its leaves."""
    root: Node
    store_chain: tuple = ()  # reshapes/permutes between the kernel's reduce and its output
    # the nodes in walk order (a dict as an ordered set: Nodes hash by identity, so a set's
    # order, and every choice made by iterating it, would change from one process to the next)
    nodes: dict = field(default_factory=dict)
    pre: set = field(default_factory=set)     # nodes computed inside the reduce loop
    reduce: Node | None = None
    leaves: set = field(default_factory=set)  # buffers read (BUFFER leaves and cut nodes)
    checked: set = field(default_factory=set)  # every node whose being cut the walk depended on


def fused_ops(node: Node, context: CutContext, stop_at: int = 0) -> int:
    """ALU ops a kernel recomputes to get `node` (its fused subtree, up to buffers); with
    `stop_at`, the count stops there (enough to compare with a limit: a deep subtree costs no
    full walk)."""
    cut, realized, memo = context.cut, context.realized, context.fused_ops_memo
    if node in memo:
        return memo[node]
    seen, stack, count = set(), [node], 0
    while stack:
        n = stack.pop()
        if n in seen or (n is not node and (n in cut or is_leaf(n, realized))) or n.op in REDUCE:
            continue
        seen.add(n)
        count += n.op in ALU
        if stop_at and count >= stop_at:
            return count
        stack.extend(n.src)
    memo[node] = count
    return count


def _constant(node: Node) -> bool:
    """ALU ops of constants only (1 / n of a mean): the same value at every index, which the
    compiler folds, so recomputing it per broadcast copy costs nothing."""
    return all(n.op is Op.CONST or n.op in ALU for n in ir.toposort([node]))


def _expensive_recompute(node: Node, region: Region, mode: Mode, context: CutContext):
    """(reason, detail) when an elementwise producer read through a broadcast would be
    recomputed for every broadcast copy and costs more than the options allow."""
    options = context.options
    if not options.recompute_limit or node.op not in ALU or _constant(node):
        return None
    space = region.reduce.src[0] if mode is Mode.PRE and region.reduce is not None \
        else kernel_root(region.root)
    # symbolic sizes count their maximum: one schedule (one set of kernels) for every value
    factor = ir.prod(max_shape(space.shape)) // max(ir.prod(max_shape(node.shape)), 1)
    if factor < RECOMPUTE_FACTOR:
        return None
    ops = fused_ops(node, context)
    if ops < options.recompute_limit and ops * factor < RECOMPUTE_WORK:
        return None
    return (Reason.EXPENSIVE_RECOMPUTE,
            f"{ops} ops would be recomputed {factor} times each (limit {options.recompute_limit} "
            f"ops, or {RECOMPUTE_WORK} ops per value)")


def walk_region(out: Node, context: CutContext, violations: dict) -> Region:
    """Collect the nodes fused into `out`'s kernel and note nodes that must be cut instead
    (node -> (reason, detail) into `violations`)."""
    cut, realized = context.cut, context.realized
    region = Region(out)
    root = kernel_root(out)
    chain, below = _store_chain(root, cut, realized)
    if chain and below is not out:  # a reduce stored in a reader's order: the store does it
        region.store_chain = chain
        region.nodes.update(dict.fromkeys(chain))
        root = below
    stack = [(root, Mode.POST, ())]
    seen = set()
    while stack:
        node, mode, path = stack.pop()
        if (node, mode) in seen:
            continue
        seen.add((node, mode))
        if node is not out and (node in cut or is_leaf(node, realized)):
            if node.op is not Op.CONST:
                region.leaves.add(node)
            continue
        region.nodes[node] = None
        if mode is Mode.PRE:
            region.pre.add(node)
        if node.op in REDUCE:
            problem = _reduce_problem(node, mode, path, region)
            reordered = _reordered_store(path, node, mode) if mode is not Mode.POST else None
            if reordered is not None and reordered not in cut:
                violations.setdefault(reordered, (Reason.VIEW_OF_REDUCE,
                                                  f"the reduce is stored in the order its reader "
                                                  f"walks it ({_chain_text(path, reordered)})"))
                continue
            if problem is not None:
                violations.setdefault(node, problem)
                del region.nodes[node]
                region.leaves.add(node)
                continue
            region.reduce = node
            stack.append((node.src[0], Mode.PRE, ()))
            continue
        if node.op is Op.EXPAND and mode is not Mode.DIRTY:
            source = through_movement(node.src[0])
            if source is not out and source not in cut and not is_leaf(source, realized):
                problem = _expensive_recompute(source, region, mode, context)
                if problem is not None:
                    violations.setdefault(source, problem)
                    region.leaves.add(source)
                    continue
        if node.op in MOVEMENT and mode is not Mode.PRE:
            clean = node.op is Op.RESHAPE or (node.op is Op.PERMUTE and reshape_like_permute(node))
            next_mode = mode if clean else Mode.DIRTY
            stack.append((node.src[0], next_mode, path + (node,)))
            continue
        below = path + (node,) if node.op in MOVEMENT else path
        for src in reversed(node.src):
            stack.append((src, mode, below))
    # a cut elsewhere leaves this walk as it is (cuts.py reuses it; fused_ops stays inside it)
    region.checked = {node for node, _ in seen} | region.leaves | set(chain)
    return region


def _chain_text(path: tuple, top: Node) -> str:
    return ", ".join(f"{m.op.name.lower()} {m.arg}" for m in path[path.index(top):])


def _store_chain(node: Node, cut: dict, realized) -> tuple[tuple, Node]:
    """(reshape/permute nodes from `node` down to a reduce, the reduce), or ((), node)."""
    chain = []
    while node.op in (Op.RESHAPE, Op.PERMUTE) and node not in realized and \
            (not chain or node not in cut):
        chain.append(node)
        node = node.src[0]
    if chain and node.op in REDUCE and node not in realized and node not in cut:
        if any(n.op is Op.PERMUTE and not reshape_like_permute(n) for n in chain):
            return tuple(chain), node
    return (), node


def _reordered_store(path: tuple, node: Node, mode: Mode):
    """The top of the reshape/permute chain right above a reduce, if it reorders the reduce:
    cutting there stores the reduce in the order its reader walks it."""
    top = None
    for movement in reversed(path):
        if movement.op not in (Op.RESHAPE, Op.PERMUTE):
            break
        top = movement
    if top is None or (mode is Mode.DIRTY and top is path[0]):
        return None
    chain = path[path.index(top):]
    if any(m.op is Op.PERMUTE and not reshape_like_permute(m) for m in chain):
        return top
    return None


def _reduce_problem(node: Node, mode: Mode, path: tuple, region: Region):
    """(reason, detail) if this reduce cannot be the kernel's reduce, else None."""
    if mode is Mode.PRE:
        return Reason.REDUCE_INTO_REDUCE, None
    if mode is Mode.DIRTY:
        expands = [m for m in path if m.op is Op.EXPAND]
        if expands:
            e = expands[-1]
            return (Reason.BROADCAST_REDUCE,
                    f"{node.op.name} over axes {node.axes} is expanded {e.src[0].shape}->{e.shape}"
                    f" back across the reduced axes")
        ops = ", ".join(m.op.name.lower() for m in path if m.op is not Op.RESHAPE)
        return Reason.VIEW_OF_REDUCE, f"the reduce result is read through {ops}"
    if region.reduce is not None and region.reduce is not node:
        other = region.reduce
        return (Reason.MULTIPLE_REDUCES,
                f"the kernel already reduces {other.op.name}{list(other.src[0].shape)}")
    return None
