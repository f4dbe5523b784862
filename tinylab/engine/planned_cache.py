"""Planned programs on disk, keyed by the scheduled kernel: a new process that meets a kernel some
process planned before takes its source and launch facts from here and its binary from the
compile cache, without planning, linearizing or rendering it again; its BuildFacts come with it.

`program_key(device, ast, settings)` -> the key (None for a kernel this cache does not keep: one
with symbolic sizes); `load(key)` -> the stored entry or None; `store(key, entry)`. The key holds
the kernel AST written out in full, the settings that choose a plan (NOOPT, BEAM, TUNE, the CPU
target with its calibration) and a fingerprint of tinylab's own code, so a changed planner or
renderer never meets an entry of the old one. engine/kernel_builder.py is the only user.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from .. import config
from ..ir.node import Node
from ..memo import Memo, cached
from ..runtimes.compile_cache import secure_dir

FOLDER = "planned"
ENTRY_FIELDS = ("name", "source", "facts", "flops", "bytes_moved", "variable_names",
                "wide_variables")  # facts: BuildFacts.as_entry (OpenMP, float16, intrinsics)
FACT_FIELDS = frozenset({"threads", "openmp", "float16", "intrinsics"})


@cached("code fingerprint", 1)
def code_fingerprint() -> str:
    """sha256 of every Python file of the tinylab package (its path and bytes)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def ast_text(ast: Node) -> str | None:
    """The kernel AST as one line per node (op, dtype, shape, device, sources, argument by its
    repr: ints, tuples, dataclasses of them and floats are exact; -0.0 keeps its sign); None
    when an argument has no such text (an object shown by its address) or a size is symbolic."""
    rows, number = [], {}
    for node in ast.toposort():
        if not all(type(s) is int for s in node.shape):
            return None
        number[node] = len(rows)
        sources = ",".join(str(number[s]) for s in node.src)
        arg = repr(node.arg)
        if " at 0x" in arg:
            return None
        rows.append(f"{node.op.name}|{node.dtype!r}|{node.shape}|{node.device}|{sources}|{arg}")
    return "\n".join(rows)


def program_key(device: str, ast: Node, settings: tuple) -> str | None:
    """The key of `ast`'s planned program on `device` under `settings` (every value that
    chooses its plan), or None when the kernel is not kept."""
    text = ast_text(ast)
    if text is None:
        return None
    head = "\n".join([code_fingerprint(), device, repr(settings)])
    return hashlib.sha256((head + "\n" + text).encode()).hexdigest()[:32]


# folders secure_dir passed in this process (a check per entry cost a mkdir and a stat each:
# 30 ms for a step's 100 kernels)
_CHECKED = Memo("planned cache folders", 64)


def _path(key: str) -> Path:
    return config.cache_dir() / FOLDER / f"{key}.json"


def _folder(path: Path) -> Path:
    if path not in _CHECKED:
        secure_dir(path)
        _CHECKED[path] = True
    return path


def load(key: str) -> dict | None:
    """The entry stored for `key` (name, source, build facts, flops, bytes moved, variables)."""
    try:
        _folder(_path(key).parent)  # a source read here is compiled and run: the user's own
        entry = json.loads(_path(key).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or any(name not in entry for name in ENTRY_FIELDS) \
            or not isinstance(entry["facts"], dict) or set(entry["facts"]) != FACT_FIELDS:
        return None
    return entry


def store(key: str, entry: dict) -> None:
    """Write the entry for `key` (whole, then renamed: readers never see half of it); a disk
    that refuses it is no error."""
    try:
        folder = _folder(config.cache_dir() / FOLDER)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as file:
            json.dump({name: entry[name] for name in ENTRY_FIELDS}, file)
        os.replace(tmp, folder / f"{key}.json")
    except OSError:  # a full or read-only disk: the program is planned again next time
        return
