"""Pytrees: nested tuples, lists and dicts of leaves (Tensors or other values), flattened to a
list of leaves and a spec that rebuilds the same structure around new leaves.
"""
from __future__ import annotations

from typing import Any


def flatten(tree) -> tuple[list, Any]:
    """(leaves in order, spec); dict leaves in key order as given."""
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for child in tree:
            child_leaves, spec = flatten(child)
            leaves += child_leaves
            specs.append((spec, len(child_leaves)))
        return leaves, (type(tree), None, specs)
    if isinstance(tree, dict):
        leaves, specs = flatten(list(tree.values()))
        return leaves, (dict, tuple(tree.keys()), specs)
    return [tree], None


def unflatten(spec, leaves: list):
    if spec is None:
        return leaves[0]
    kind, keys, specs = spec
    if kind is dict:
        return dict(zip(keys, unflatten(specs, leaves)))
    children, start = [], 0
    for child_spec, count in specs:
        children.append(unflatten(child_spec, leaves[start:start + count]))
        start += count
    return kind(children) if kind in (tuple, list) else kind(*children)  # namedtuples


def broadcast_prefix(prefix, tree, what: str) -> list:
    """One entry of `prefix` per leaf of `tree`: a leaf of `prefix` covers a whole subtree (as
    in_dims=0 covers every tensor of an argument)."""
    if not isinstance(prefix, (tuple, list, dict)):
        return [prefix] * len(flatten(tree)[0])
    if type(prefix) is not type(tree) and not (isinstance(prefix, (tuple, list))
                                               and isinstance(tree, (tuple, list))):
        raise ValueError(f"{what} has structure {type(prefix).__name__} but the value has "
                         f"{type(tree).__name__}")
    if isinstance(prefix, dict):
        if set(prefix) != set(tree):
            raise ValueError(f"{what} has keys {sorted(prefix)} but the value has {sorted(tree)}")
        return [d for key in tree for d in broadcast_prefix(prefix[key], tree[key],
                                                            f"{what}[{key!r}]")]
    if len(prefix) != len(tree):
        raise ValueError(f"{what} has {len(prefix)} entries but the value has {len(tree)}")
    return [d for i, (p, t) in enumerate(zip(prefix, tree))
            for d in broadcast_prefix(p, t, f"{what}[{i}]")]
