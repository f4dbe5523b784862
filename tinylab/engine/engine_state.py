"""What the engine keeps between realizes, in one object with one lock (`Device.state`): compiled
kernels by key, schedules by graph structure, devices announced, which lazy values are realized
(and in which buffer), the display-only compile records of other backends
(engine/compile_record.py), kernels recorded in a trace, and the TinyJit capture hooks. Every
cache of the engine is bounded and registered here (`register_cache`); every other module's
state is registered with tinylab.memo, and `reset()` empties the engine's caches and memo's.
engine/realize.py reads and writes it (also from compile threads, under `lock`; a kernel being
compiled is compiled by one thread, `compiling`).
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from contextlib import contextmanager


SCHEDULES_KEPT = 1024  # schedule templates kept (each holds kernel ASTs, no buffers)
RUNNERS_KEPT = 8192    # compiled kernels kept in this process (the disk cache keeps binaries)
RECORDS_KEPT = 2048    # display-only compile records kept
ANNOUNCED_KEPT = 4096  # (device, target) pairs DEBUG>=1 reported


class BoundedTable(OrderedDict):
    """A dict that forgets its least recently used entry past `limit` entries (`get` and
    `setdefault` count as a use). Its users take EngineState.lock around read-then-write."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def get(self, key, default=None):
        found = super().get(key)
        if found is None:
            return default
        self.move_to_end(key)
        return found

    def setdefault(self, key, default=None):
        if key in self:
            self.move_to_end(key)
            return self[key]
        self[key] = default
        return default

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


class _Lookup:
    """`in` and `[]` for a table whose `get(node)` gives None for what it does not hold."""

    def get(self, node, default=None):  # pragma: no cover - subclasses define it
        raise NotImplementedError

    def __contains__(self, node) -> bool:
        return self.get(node) is not None

    def __getitem__(self, node):
        found = self.get(node)
        if found is None:
            raise KeyError(node)
        return found


class RealizedTable(_Lookup):
    """Expression node -> the BUFFER node holding its value; an entry dies with the expression.
    `hold_weakly(node)` makes an entry last only while its BUFFER node lives too: for values
    whose BUFFER node keeps the expression alive (autograd steps from a realized tensor into
    the graph it came from), where a strong entry would keep both alive forever."""

    def __init__(self):
        self.strong: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.weak: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def get(self, node, default=None):
        found = self.strong.get(node)
        if found is None:
            ref = self.weak.get(node)
            found = ref() if ref is not None else None
        return default if found is None else found

    def __setitem__(self, node, buffer_node) -> None:
        self.weak.pop(node, None)
        self.strong[node] = buffer_node

    def hold_weakly(self, node) -> None:
        found = self.strong.pop(node, None)
        if found is not None:
            self.weak[node] = weakref.ref(found)


class FreshRealized(_Lookup):
    """A RealizedTable without stale entries: a value whose buffer was written in place since
    (assign, TinyJit replay) no longer counts as computed, so it is recomputed, not reused."""

    def __init__(self, table):
        self.table = table

    def get(self, node, default=None):
        found = self.table.get(node)
        while found is not None and found.version != found.buffer.version:
            found = self.table.get(found)  # a snapshot of that version, copied before an assign
        return default if found is None else found


class _Capture:
    """A capture hook and who asked for it."""

    def __init__(self, hook, owner):
        self.hook, self.owner = hook, owner

    def __call__(self, runner, buffers, var_vals) -> None:
        self.hook(runner, buffers, var_vals)


class EngineState:
    """The engine's memory between calls. Take `lock` to read-then-write `runners` or
    `announced` (compile threads do)."""

    def __init__(self):
        self.lock = threading.RLock()
        self.caches: dict = {}            # name -> a registered cache (reset() clears each)
        # (device, ast, noopt, beam, target) -> Runner
        self.runners = self.register_cache("runners", BoundedTable(RUNNERS_KEPT))
        self.compiling: dict = {}         # runner key -> threading.Event, while one compiles it
        # (device, target) pairs DEBUG>=1 has reported (a table of None values)
        self.announced = self.register_cache("announced", BoundedTable(ANNOUNCED_KEPT))
        self.realized = RealizedTable()   # lazy node -> BUFFER node holding its value (values,
        #   not a cache: a snapshot of an old version lives here; entries die with their nodes)
        # ("display", device, ast, ...) -> CompileRecord made for showing another backend's
        # source (compile_record.py), once per kernel
        self.display_records = self.register_cache("display records", BoundedTable(RECORDS_KEPT))
        self.recorded: weakref.WeakSet = weakref.WeakSet()  # Runners a trace has recorded
        self.captures: list = []          # TinyJit hooks called with every launch
        # graph structure -> schedule template
        self.schedules = self.register_cache("schedules", BoundedTable(SCHEDULES_KEPT))

    def register_cache(self, name: str, table):
        """Keep `table` (a BoundedTable: it forgets entries past its limit) among the caches
        reset() empties; returns it. Names are unique."""
        if name in self.caches:
            raise ValueError(f"an engine cache named {name!r} is registered already")
        if not isinstance(table, BoundedTable):
            raise TypeError(f"engine cache {name!r} must be a BoundedTable (bounded)")
        self.caches[name] = table
        return table

    def cache_sizes(self) -> dict[str, tuple[int, int]]:
        """{name: (entries, limit)} for every registered cache, the engine's and the module
        caches of tinylab.memo (Memo tables, @cached functions)."""
        from .. import memo
        sizes = {name: (len(table), table.limit) for name, table in self.caches.items()}
        sizes.update({f"memo {name}": (entries, limit)
                      for name, (role, entries, limit) in memo.held().items()
                      if role is memo.Role.CACHE})
        return sizes

    @staticmethod
    def module_state() -> dict:
        """{name: (role, entries, limit)} for all module state registered with tinylab.memo:
        CACHE (reset() empties it), LIVE and ROWS (reset() keeps them; memo.Role says why)."""
        from .. import memo
        return memo.held()

    def reset(self) -> None:
        """Empty every registered cache and every module CACHE of tinylab.memo: kernels compile
        again (the disk cache may still hit), schedules, roofs, calibrations and CPU targets are
        found again. Values computed stay (`realized`), and so do LIVE tables (facts about live
        objects) and ROWS (backends, settings, listeners: built-in and registered alike)."""
        from .. import memo
        with self.lock:
            for table in self.caches.values():
                table.clear()
            memo.clear_all()

    def forget_devices(self, names: set) -> None:
        """Drop the kernels compiled and the records made for the devices `names` (their
        backend row was replaced: they came from the old renderer)."""
        with self.lock:
            for key in [key for key in self.runners if key[0] in names]:
                del self.runners[key]
            for key in [key for key in self.display_records if key[1] in names]:
                del self.display_records[key]

    def remember_schedule(self, key, entry) -> None:
        """Keep a schedule template; the least recently used goes past SCHEDULES_KEPT."""
        with self.lock:
            self.schedules[key] = entry

    def known_schedule(self, key):
        with self.lock:
            return self.schedules.get(key)

    @contextmanager
    def capturing(self, hook, owner=None):
        """Call `hook(runner, buffers, var_vals)` with every kernel launch and copy inside the
        block; `owner` (the TinyJit capturing a step) is `capturer` meanwhile."""
        entry = _Capture(hook, owner)
        self.captures.append(entry)
        try:
            yield
        finally:
            self.captures.remove(entry)

    @property
    def capturer(self):
        """The owner of the innermost capture under way (a TinyJit), else None: the one flag
        that says a step is being captured (None while captures are paused)."""
        return self.captures[-1].owner if self.captures else None

    @contextmanager
    def captures_paused(self):
        """No capture hook is called inside the block (values computed once, not per replay)."""
        hooks, self.captures[:] = list(self.captures), []
        try:
            yield
        finally:
            self.captures[:] = hooks
