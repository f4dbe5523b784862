"""Every piece of mutable module state of tinylab, registered in one place (layer 0, imports
nothing of tinylab). A module makes its cache a `Memo` (bounded) or an `@cached` function, and
registers its other state with `register(name, table, role)`: `clear_all()` empties what its
role says a reset empties (`EngineState.reset` calls it) and `held()` lists every entry's size.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import StrEnum
from typing import Callable


class Role(StrEnum):
    """What a registered table holds, and so what a reset does with it."""
    CACHE = "cache"   # values computed from others: reset() empties it; asked again, recomputed
    LIVE = "live"     # facts about objects alive now (most keyed weakly, gone with them) and
    #                   the one interned object per value: reset() keeps them (dropping one
    #                   would change a result, or make two objects of one value)
    ROWS = "rows"     # extensions registered at run time (backends, settings, listeners):
    #                   reset() keeps every row, the built-in ones and the user's


@dataclass(frozen=True)
class Registered:
    name: str
    role: Role
    table: object                  # the dict, list, set, weak table or cached function
    clear: Callable[[], None]      # empties it (called by clear_all() for a CACHE)
    size: Callable[[], int]        # entries held now
    limit: int | None              # a CACHE's bound (None: bounded by what is alive or listed)


REGISTERED: dict[str, Registered] = {}   # name -> entry, in registration order
MEMOS: dict[str, "Memo"] = {}            # name -> a Memo table (also in REGISTERED)


def register(name: str, table, role: Role, *, limit: int | None = None):
    """Keep `table` (a container, or a function made by `cached`) under a unique `name` with its
    role; returns it, so a module writes `TABLE = register("module table", {}, Role.LIVE)`."""
    if name in REGISTERED:
        raise ValueError(f"module state named {name!r} is registered already")
    if role is Role.CACHE and limit is None:
        raise ValueError(f"cache {name!r}: a cache is bounded (give its limit)")
    if hasattr(table, "cache_clear"):   # an lru_cache function
        clear, size = table.cache_clear, lambda: table.cache_info().currsize
    else:
        clear, size = table.clear, table.__len__
    REGISTERED[name] = Registered(name, role, table, clear, size, limit)
    return table


def cached(name: str, limit: int):
    """`functools.lru_cache(maxsize=limit)`, registered as a CACHE under `name`."""
    def decorate(function):
        return register(name, functools.lru_cache(maxsize=limit)(function), Role.CACHE,
                        limit=limit)
    return decorate


class BoundedDict(dict):
    """A dict that clears itself when it reaches `limit` entries (an unregistered one: an
    object's own table, registered by whoever makes the one object that matters)."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def __setitem__(self, key, value) -> None:
        if len(self) >= self.limit:
            self.clear()
        super().__setitem__(key, value)


class Memo(BoundedDict):
    """A BoundedDict registered as a CACHE under `name` (a module-level table)."""

    def __init__(self, name: str, limit: int = 1 << 17):
        super().__init__(limit)
        if name in MEMOS:
            raise ValueError(f"a memo table named {name!r} exists already")
        self.name = name
        MEMOS[name] = register(name, self, Role.CACHE, limit=limit)


def clear_all() -> None:
    """Empty every CACHE (its values are computed again when next asked for); LIVE and ROWS
    entries stay."""
    for entry in REGISTERED.values():
        if entry.role is Role.CACHE:
            entry.clear()


def sizes() -> dict[str, int]:
    """Entries held now by each CACHE, by name."""
    return {name: entry.size() for name, entry in REGISTERED.items() if entry.role is Role.CACHE}


def held() -> dict[str, tuple[Role, int, int | None]]:
    """{name: (role, entries, limit)} for every registered table (`EngineState.module_state`)."""
    return {name: (entry.role, entry.size(), entry.limit) for name, entry in REGISTERED.items()}


def is_registered(table) -> bool:
    return any(entry.table is table for entry in REGISTERED.values())
