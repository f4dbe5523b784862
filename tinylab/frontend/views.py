"""Writes through views: a tensor made of movement ops (and detach) of a realized tensor is a view
of its base's storage, as in PyTorch. `write(view, value)` maps the value back through the view's
index map and assigns the whole base; `repoint` makes every live view read the base's new value.
A movement op of a lazy tensor is a pending view: `materialize` realizes its base when it is
written, then it is a view like the others (t = x.contiguous(); t[1][2] = 5 writes t).
Called by Tensor.assign and setitem (frontend/tensor.py, frontend/indexing.py).
"""
from __future__ import annotations

import weakref

import numpy as np

from ..dtype import dtypes
from ..engine import ownership
from ..errors import WriteError
from ..ir import node as ir
from ..ir.movement_ops import MOVEMENTS
from ..ir.node import Node
from ..ir.ops import MOVEMENT, Op
from ..ir.symbolic import any_symbolic
from ..memo import Role, register

VIEW_OPS = frozenset(MOVEMENT | {Op.DETACH, Op.BITCAST})  # a bitcast reads the same bytes as another dtype
# Buffer -> {id(view): weak reference}: by identity (a Tensor's == builds a comparison)
_VIEWS = register("views of buffers", weakref.WeakKeyDictionary(), Role.LIVE)
# views of a lazy tensor, as PyTorch would have them: id(view) -> (weak view, weak base, weak
# base's node when the view was made). A write to one realizes the base and goes through it
_PENDING = register("pending views", {}, Role.LIVE)
PENDING_SWEEP = 4096  # entries between sweeps of the dead ones
# id(base) -> (weak base, {id(view): weak view}): the pending views of a lazy base, which its
# realize turns into views of its storage (`promote`); by identity, as _VIEWS
_PENDING_OF = register("pending views of bases", {}, Role.LIVE)


def _storage(bottom: Node):
    """The Buffer a BUFFER node, or an ASSIGN's target, holds."""
    while bottom.op is Op.ASSIGN:
        bottom = bottom.src[0]
    return bottom.buffer


def view_chain(node: Node) -> tuple[Node, list[Node]] | None:
    """(bottom, the view's op nodes from the bottom up) when `node` is movement, detach or
    bitcast ops over a BUFFER or an ASSIGN (none: a chain that folded away, t.T.T, whose
    tensor is a view when registered as one); None for a computed value."""
    ops = []
    while node.op in VIEW_OPS:
        ops.append(node)
        node = node.src[0]
    if node.op not in (Op.BUFFER, Op.ASSIGN):
        return None
    return node, ops[::-1]


def register(tensor) -> None:
    """Remember a view of a realized tensor, so a write to that storage re-points it."""
    chain = view_chain(tensor.node)
    if chain is not None:
        _VIEWS.setdefault(_storage(chain[0]), {})[id(tensor)] = weakref.ref(tensor)


def register_pending(out, source) -> None:
    """`out` is a movement op (or detach) of the lazy `source`: remember source's base, so a
    write to `out` can realize that base and land in it (`materialize`)."""
    entry = _pending_entry(source)
    base_ref, base_node = (entry[1], entry[2]) if entry is not None else \
        (weakref.ref(source), weakref.ref(source.node))  # weak: a view keeps no graph alive
    if len(_PENDING) >= PENDING_SWEEP and len(_PENDING) % PENDING_SWEEP == 0:
        for key in [k for k, e in _PENDING.items() if e[0]() is None or e[2]() is None]:
            del _PENDING[key]
        for key in [k for k, (base, _) in _PENDING_OF.items() if base() is None]:
            del _PENDING_OF[key]
    _PENDING[id(out)] = (weakref.ref(out), base_ref, base_node)
    base = base_ref()
    held = _PENDING_OF.get(id(base)) if base is not None else None
    if base is not None and (held is None or held[0]() is not base):
        held = _PENDING_OF[id(base)] = (base_ref, {})
    if held is not None:
        held[1][id(out)] = weakref.ref(out)


def promote(base, old_node: Node) -> None:
    """`base` was just realized from `old_node`: its pending views (made while it was lazy and
    still a chain of view ops over `old_node`) become views of its storage, as in PyTorch and
    tinygrad, so a later write to the base reaches them."""
    held = _PENDING_OF.pop(id(base), None)
    if held is None or held[0]() is not base or base.node.op is not Op.BUFFER:
        return
    for ref in held[1].values():
        view = ref()
        entry = _PENDING.get(id(view)) if view is not None else None
        if entry is None or entry[0]() is not view or entry[2]() is not old_node:
            continue
        ops, node = [], view.node
        while node is not old_node and node.op in VIEW_OPS:
            ops.append(node)
            node = node.src[0]
        if node is not old_node:
            continue  # holds another value now
        del _PENDING[id(view)]
        view.node = _rebuild(base.node, ops[::-1])
        register(view)


def _rebuild(bottom: Node, ops: list[Node]) -> Node:
    """The view ops `ops` (bottom up) applied again over `bottom`."""
    node = bottom
    for n in ops:
        node = ir.detach(node) if n.op is Op.DETACH else \
            ir.cast(node, n.dtype, bitcast=True) if n.op is Op.BITCAST else \
            ir.movement(n.op, node, n.arg)
    return node


def settle(view) -> bool:
    """`view.realize()` for a view of realized storage: it has nothing to compute and stays the
    view (tinygrad keeps a realized view a view; PyTorch has no copy either). A write pending in
    its base (an ASSIGN) is realized first and the view rebuilt over the base's new version.
    False when `view` is no view of realized storage (it is computed like any value)."""
    if not is_view(view):
        return False
    bottom, ops = view_chain(view.node)
    if bottom.op is Op.ASSIGN:
        base = _holder(bottom, type(view))
        base.realize()
        if base.node.op is Op.BUFFER and base.node.buffer is _storage(bottom):
            view.node = _rebuild(base.node, ops)
            register(view)
    return True


def _pending_entry(tensor):
    """tensor's entry while it is still a chain of view ops over its lazy base's node."""
    entry = _PENDING.get(id(tensor))
    if entry is None or entry[0]() is not tensor:
        return None
    base, base_node = entry[1](), entry[2]()
    if base is None or base_node is None or base.node is not base_node:
        return None  # the base is gone, or holds another value now
    node = tensor.node
    while node is not base_node and node.op in VIEW_OPS:
        node = node.src[0]
    return entry if node is base_node else None


def materialize(tensor) -> bool:
    """A view of a lazy tensor about to be written: realize the base and make `tensor` a
    view of its storage (as a view of a realized tensor is). False when it is no such view."""
    entry = _pending_entry(tensor)
    if entry is None:
        return False
    base, base_node = entry[1](), entry[2]()
    ops, node = [], tensor.node
    while node is not base_node:
        ops.append(node)
        node = node.src[0]
    base.realize()  # promotes tensor (and the base's other pending views)
    if _PENDING.get(id(tensor)) is entry:
        del _PENDING[id(tensor)]
        if base.node.op is not Op.BUFFER:
            return False
        tensor.node = _rebuild(base.node, ops[::-1])
        register(tensor)
    return is_view(tensor)


def is_view(tensor) -> bool:
    """Made by movement ops (or detach) from a realized tensor or a view, and still one."""
    chain = view_chain(tensor.node)
    views = _VIEWS.get(_storage(chain[0])) if chain is not None else None
    held = views.get(id(tensor)) if views is not None else None
    return held is not None and held() is tensor


def chain_text(bottom: Node, ops: list[Node]) -> str:
    """`BUFFER float32[3, 3] -> PERMUTE (1, 0) -> SHRINK ((0, 1), (0, 3))`, for errors."""
    steps = [f"{bottom.op.name} {bottom.dtype.name}{list(bottom.shape)}"]
    steps += [n.op.name if n.op is Op.DETACH else f"BITCAST {n.dtype.name}" if n.op is Op.BITCAST
              else f"{n.op.name} {n.arg}" for n in ops]
    return " -> ".join(steps)


# ---- which base element each view element is ----------------------------------------------
def check_writable(bottom: Node, ops: list[Node], what: str) -> None:
    """Raise WriteError unless every element of the view is its own element of the base. Only a
    chain with an expand or a pad can fail; its index map is worked out on host positions."""
    if not any(n.op in (Op.EXPAND, Op.PAD) for n in ops):
        return  # reshape, permute, shrink, flip, detach: one base element per view element
    chain = chain_text(bottom, ops)
    if any_symbolic(bottom.shape) or any(any_symbolic(n.shape) for n in ops):
        raise WriteError(f"{what}: cannot write through a view with an expand or pad of a "
                         f"symbolic shape (view chain {chain})")
    # the view's index map on base positions 1..numel (ir/movement_ops.py's table; 0: padding)
    positions = np.arange(1, bottom.numel + 1, dtype=np.int64).reshape(bottom.shape)
    for n in ops:
        if n.op not in (Op.DETACH, Op.BITCAST):
            positions = MOVEMENTS[n.op].array(positions, n.arg)
    flat = positions.reshape(-1)
    if (flat == 0).any():
        raise WriteError(f"{what}: the view has elements that are padding, not elements of its "
                         f"base (view chain {chain}); write to a clone() instead")
    if np.unique(flat).size != flat.size:
        raise WriteError(f"{what}: unsupported operation: more than one element of the "
                         f"written-to tensor refers to a single memory location (view chain "
                         f"{chain}); clone() the tensor before writing to it")


# ---- the write -------------------------------------------------------------------------------
def _to_base(ops: list[Node], value: Node, written: Node) -> tuple[Node, Node]:
    """Undo the view's ops, top first: (value, written mask) in the bottom's shape, zeros (False)
    at the base elements the view does not reach."""
    for n in reversed(ops):
        source = n.src[0].shape
        if n.op is Op.BITCAST:  # the same bytes, read back as the storage's dtype
            value = ir.cast(value, n.src[0].dtype, bitcast=True)
        elif n.op is Op.RESHAPE:
            value, written = value.reshape(source), written.reshape(source)
        elif n.op is Op.PERMUTE:
            order = ir.inverse_permutation(n.order)
            value, written = value.permute(order), written.permute(order)
        elif n.op is Op.FLIP:
            value, written = value.flip(n.axes), written.flip(n.axes)
        elif n.op is Op.SHRINK:
            padding = tuple((b, s - e) for (b, e), s in zip(n.bounds, source))
            value, written = value.pad(padding), written.pad(padding)
        elif n.op is Op.PAD:  # checked: nothing written lands in the padding
            bounds = tuple((b, b + s) for (b, _), s in zip(n.padding, source))
            value, written = value.shrink(bounds), written.shrink(bounds)
        elif n.op is Op.EXPAND:  # checked: at most one written element per base element
            axes = tuple(i for i, (s, t) in enumerate(zip(source, n.shape)) if s != t)
            zero = ir.const(False if value.dtype.is_bool else 0, value.dtype, value.shape,
                            value.device)
            kept = written.where(value, zero)
            value = kept.max(axes) if value.dtype.is_bool else kept.sum(axes)
            written = written.max(axes)
    return value, written


def _holder(bottom: Node, tensor_type):
    """The tensor holding the view's storage now: its owner when the owner still holds it (a
    view aliases the storage, not one version of it), else a tensor made for the write."""
    base = ownership.owner_of(_storage(bottom))
    if base is not None and base.node.op in (Op.BUFFER, Op.ASSIGN) and \
            _storage(base.node) is _storage(bottom):
        return base
    return tensor_type(bottom)


def write(view, value, base=None) -> None:
    """Write `value` (the view's shape, dtype and device) into the view's base elements; `base`,
    when given, is the tensor the view was made from (it holds the storage)."""
    bottom, ops = view_chain(view.node)
    check_writable(bottom, ops, "write through a view")
    base = base if base is not None else _holder(bottom, type(view))
    written = ir.const(True, dtypes.bool, view.shape, view.device)
    value_in_base, written_in_base = _to_base(ops, value.node, written)
    new = type(view)(ir.alu(Op.WHERE, written_in_base, value_in_base, base.node))
    base.assign(new)  # a base: realizes, versions stale readers, re-points the views
    if is_view(view) and _storage(view_chain(view.node)[0]) is _storage(base.node):
        repoint_one(view, base.node)


def repoint_one(view, base_node: Node) -> None:
    """Rebuild `view`'s ops over `base_node` (the storage's newest value)."""
    view.node = _rebuild(base_node, view_chain(view.node)[1])


def repoint(base) -> None:
    """After `base` was assigned: every live view of its storage reads the new value."""
    views = _VIEWS.get(_storage(base.node))
    if not views:
        return
    for key, ref in list(views.items()):
        view = ref()
        chain = view_chain(view.node) if view is not None and view is not base else None
        if chain is None or _storage(chain[0]) is not _storage(base.node):
            del views[key]  # gone, or no longer a view of this storage
        else:
            repoint_one(view, base.node)
