"""Schedule templates on disk: a new process meeting a graph whose structure some process
scheduled before (schedule/cache.py's structure key) takes that schedule from here instead of
cutting, lowering and rewriting the graph again.

`disk_key(key)` -> the key's digest (None when some part of it has no exact text), with the devices'
full capabilities and a fingerprint of tinylab's code (planned_cache.code_fingerprint) mixed in;
`load(digest)` -> the template schedule/cache.py made, or None; `store(digest, template)`. A
template's nodes are written as a table (sources by number, so no recursion however deep the
graph), its dtypes by name (one object per dtype in the process) and its placeholders by number.
engine/realize.py's cached_schedule is the only user.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import pickle
import tempfile
from pathlib import Path

from .. import config
from ..dtype import DType, dtypes
from ..ir.node import Node
from ..ir.ops import Op
from ..runtimes.compile_cache import secure_dir
from ..schedule.cache import Placeholder
from .planned_cache import code_fingerprint

FOLDER = "schedules"
WORTH_S = 0.02  # a schedule that took less to make is not written (writing one costs ~3 ms: a
                # test suite's thousands of small graphs would pay more than they ever save)
VERSION = b"tinylab schedule template 2\n"   # 2: ops stored by name (ir/ops.py rows)


def disk_key(key: tuple, caps: list) -> str | None:
    """The digest of a structure key and the capabilities of its devices (None: not kept)."""
    caps = [dataclasses.replace(c, target=c.target.key) if c.target is not None else c
            for c in caps]  # the target by its key: its sets' order differs between processes
    text = repr((key, caps))
    if " at 0x" in text:
        return None
    digest = hashlib.sha256(code_fingerprint().encode() + b"\n" + text.encode())
    return digest.hexdigest()[:32]


def _path(digest: str) -> Path:
    return config.cache_dir() / FOLDER / f"{digest}.pickle"


def _nodes(template: tuple) -> list[Node]:
    """Every node a template reaches, sources before users."""
    sched, stand_ins, held, walk = template
    roots = list(stand_ins) + list(held) + list(held.values()) + [n for n in walk if n]
    for item in sched.items:
        roots += [item.output, item.ast, *item.fused, *item.reads_old, *item.reads]
        roots += [slot.node for slot in item.slots]
        roots += [n for d in item.decisions for n in (d.producer, d.consumer)]
    roots += list(sched.outputs) + list(sched.leaves) + list(sched.leaves.values())
    roots += sched.graph_outputs + [n for d in sched.decisions for n in (d.producer, d.consumer)]
    order, seen = [], set()
    for root in roots:
        stack = [(root, False)] if root is not None and root not in seen else []
        while stack:  # one walk for every root: sources before users, each node once
            node, done = stack.pop()
            if done:
                order.append(node)
            elif node not in seen:
                seen.add(node)
                stack.append((node, True))
                stack.extend((s, False) for s in node.src if s not in seen)
    return order


class _Writer(pickle.Pickler):
    def __init__(self, file, nodes: dict, holders: dict):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.nodes, self.holders = nodes, holders

    def persistent_id(self, obj):
        kind = type(obj)
        if kind is Node:
            return ("n", self.nodes[obj])
        if kind is DType:
            return ("d", obj.name, obj.count)
        if kind is Placeholder:
            return ("p", self.holders.setdefault(id(obj), (len(self.holders), obj))[0])
        return None


class _Reader(pickle.Unpickler):
    def __init__(self, file, nodes: list, holders: dict):
        super().__init__(file)
        self.nodes, self.holders = nodes, holders

    def persistent_load(self, pid):
        kind, *rest = pid
        if kind == "n":
            return self.nodes[rest[0]]
        if kind == "d":
            return getattr(dtypes, rest[0]).vec(rest[1])
        if kind == "p":
            return self.holders[rest[0]]
        raise pickle.UnpicklingError(f"unknown reference {pid!r}")


def store(digest: str, template: tuple) -> None:
    """Write `template` for `digest` (whole, then renamed); a template that cannot be written
    (an object pickle refuses, a full or read-only disk) is simply not kept."""
    nodes = _nodes(template)
    number = {node: i for i, node in enumerate(nodes)}
    holders: dict = {}
    rows = [(n.op.name, n.dtype, tuple(number[s] for s in n.src), n.arg, n.shape, n.device)
            for n in nodes]
    table, body = io.BytesIO(), io.BytesIO()
    try:
        _Writer(table, number, holders).dump(rows)
        _Writer(body, number, holders).dump(template)
        places = pickle.dumps([(p.label, p.version) for _, p in sorted(holders.values(),
                                                                        key=lambda h: h[0])])
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return
    try:
        folder = secure_dir(config.cache_dir() / FOLDER)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "wb") as file:
            file.write(VERSION)
            for part in (places, table.getvalue(), body.getvalue()):
                file.write(len(part).to_bytes(8, "little") + part)
        os.replace(tmp, folder / f"{digest}.pickle")
    except OSError:  # a full or read-only disk: the graph is scheduled again next time
        return


def load(digest: str) -> tuple | None:
    """The template stored for `digest`, its nodes interned in this process; None if absent or
    unreadable."""
    try:
        secure_dir(_path(digest).parent)  # pickles are code: only the user's own
        data = _path(digest).read_bytes()
        if not data.startswith(VERSION):
            return None
        parts, at = [], len(VERSION)
        while at < len(data):
            size = int.from_bytes(data[at:at + 8], "little")
            parts.append(data[at + 8:at + 8 + size])
            at += 8 + size
        places, table, body = parts
        holders = {i: _placeholder(label, version)
                   for i, (label, version) in enumerate(pickle.loads(places))}
        nodes: list = []
        for op, dtype, src, arg, shape, device in _Reader(io.BytesIO(table), nodes,
                                                         holders).load():
            nodes.append(Node(Op[op], dtype, tuple(nodes[i] for i in src), arg, shape, device))
        return _Reader(io.BytesIO(body), nodes, holders).load()
    except (OSError, ValueError, EOFError, IndexError, pickle.UnpicklingError, AttributeError,
            TypeError, KeyError):
        return None


def _placeholder(label: str, version: int) -> Placeholder:
    return Placeholder(int(label.removeprefix("slot")), version)
