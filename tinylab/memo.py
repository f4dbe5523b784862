"""Bounded memo tables, registered in one place. Every module-level cache of computed values
(index algebra, view indices, simplified masks) is a `Memo`: it forgets everything once it holds
`limit` entries, so none grows without bound, and `clear_all()` empties every one of them
(`EngineState.reset` calls it). A forgotten entry is only computed again. Layer 0.
"""
from __future__ import annotations

MEMOS: dict[str, "Memo"] = {}   # name -> the table, in creation order


class Memo(dict):
    """A dict that clears itself when it reaches `limit` entries; registered under `name`."""

    def __init__(self, name: str, limit: int = 1 << 17):
        super().__init__()
        if name in MEMOS:
            raise ValueError(f"a memo table named {name!r} exists already")
        self.name, self.limit = name, limit
        MEMOS[name] = self

    def __setitem__(self, key, value) -> None:
        if len(self) >= self.limit:
            self.clear()
        super().__setitem__(key, value)


def clear_all() -> None:
    """Empty every memo table (the values they held are computed again when next asked for)."""
    for table in MEMOS.values():
        table.clear()


def sizes() -> dict[str, int]:
    """Entries held now, by table name (for tests and `python -m tinylab.device`-style reports)."""
    return {name: len(table) for name, table in MEMOS.items()}
