"""The order a schedule's items run in: producers before their readers, and every reader of a
buffer's old value before the assign that overwrites it. `order_items(items, realized)`.
"""
from __future__ import annotations

from ..ir.node import Node
from ..ir.ops import Op
from .items import ScheduleError, ScheduleItem


def order_items(items: list[ScheduleItem], realized) -> list[ScheduleItem]:
    """Topological order: producers first; readers of a buffer's old value before its assign."""
    producer = {item.output: item for item in items}

    def source_item(node: Node):
        while node not in producer and node.op is Op.CONTIGUOUS:  # an alias
            node = node.src[0]
        return producer.get(node)

    deps: dict[int, set] = {id(i): set() for i in items}
    for item in items:
        for node in item.reads:
            p = source_item(node)
            if p is not None and p is not item:
                deps[id(item)].add(id(p))
    for item in items:
        if item.output.op is not Op.ASSIGN:
            continue
        target = item.output.src[0]
        target = realized.get(target, target)
        for other in items:
            if other is not item and target in other.reads_old:
                deps[id(item)].add(id(other))
    ordered, done = [], set()
    pending = list(items)
    while pending:
        ready = [i for i in pending if deps[id(i)] <= done]
        if not ready:
            raise ScheduleError("cyclic dependency between an assign and a read of its old value")
        for i in ready:
            ordered.append(i)
            done.add(id(i))
        pending = [i for i in pending if id(i) not in done]
    return ordered
