"""The order a schedule's items run in: producers before their readers, and every reader of a
buffer's old value before the assign that overwrites it. `order_items(items, realized)`.
"""
from __future__ import annotations

from ..ir.node import Node
from ..ir.ops import Op
from .items import AssignCycleError, ScheduleItem


def order_items(items: list[ScheduleItem], realized) -> list[ScheduleItem]:
    """Topological order by rounds: round k holds the items whose longest chain of dependencies
    is k long, each round in the items' given order. Linear in items + dependencies."""
    deps = _dependencies(items, realized)
    readers: dict[int, list] = {id(i): [] for i in items}
    for item in items:
        for dep in deps[id(item)]:
            readers[dep].append(item)
    waiting = {id(i): len(deps[id(i)]) for i in items}
    depth = {id(i): 0 for i in items}
    ready = [i for i in items if not waiting[id(i)]]
    placed = 0
    while placed < len(ready):
        item = ready[placed]
        placed += 1
        for reader in readers[id(item)]:
            depth[id(reader)] = max(depth[id(reader)], depth[id(item)] + 1)
            waiting[id(reader)] -= 1
            if not waiting[id(reader)]:
                ready.append(reader)
    if placed < len(items):
        raise AssignCycleError("cyclic dependency between an assign and a read of its old value")
    position = {id(i): n for n, i in enumerate(items)}
    return sorted(items, key=lambda i: (depth[id(i)], position[id(i)]))


def _dependencies(items: list[ScheduleItem], realized) -> dict[int, set]:
    """id(item) -> ids of the items that must run before it."""
    producer = {item.output: item for item in items}

    def source_item(node: Node):
        while node not in producer and node.op is Op.CONTIGUOUS:  # an alias
            node = node.src[0]
        return producer.get(node)

    old_value_readers: dict[Node, list] = {}
    for item in items:
        for node in item.reads_old:
            old_value_readers.setdefault(node, []).append(item)
    deps: dict[int, set] = {id(i): set() for i in items}
    for item in items:
        for node in item.reads:
            p = source_item(node)
            if p is not None and p is not item:
                deps[id(item)].add(id(p))
        if item.output.op is Op.ASSIGN:
            target = item.output.src[0]
            target = realized.get(target, target)
            deps[id(item)].update(id(other) for other in old_value_readers.get(target, ())
                                  if other is not item)
    return deps
