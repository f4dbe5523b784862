"""Memory planning: buffers whose lifetimes never overlap share one allocation.

`share_by_lifetime(steps, size_of, keep)` takes, per step, the keys of the buffers it touches
(outputs first), the (device, nbytes) of each key and the keys that must keep their own memory
(inputs, outputs, anything alive outside); it returns key -> representative key and the bytes
saved. Used by the engine for a schedule's intermediate buffers and by TinyJit for a captured step.
"""
from __future__ import annotations


def share_by_lifetime(steps: list[list], size_of: dict, keep: set) -> tuple[dict, int]:
    first: dict = {}
    last: dict = {}
    for t, keys in enumerate(steps):
        for key in keys:
            if key in keep or not size_of[key][1]:  # empty: nothing to save, and its one-element
                continue                             # placeholder fits its own dtype only
            first.setdefault(key, t)
            last[key] = t
    starts = sorted(first, key=lambda k: first[k])
    ends = sorted(first, key=lambda k: last[k])
    free: dict[tuple, list] = {}
    representative: dict = {}
    saved, released = 0, 0
    for key in starts:
        # everything whose last use is strictly before this first use can be handed over
        while released < len(ends) and last[ends[released]] < first[key]:
            done = ends[released]
            free.setdefault(size_of[done], []).append(representative.get(done, done))
            released += 1
        pool = free.get(size_of[key])
        if pool:
            representative[key] = pool.pop()
            saved += size_of[key][1]
    return representative, saved


def plan_schedule(schedule) -> tuple[dict, int]:
    """Sharing for a Schedule's new slots (existing buffers and requested outputs excluded)."""
    outputs = {id(slot) for slot in schedule.outputs.values()}
    steps, size_of, keep = [], {}, set(outputs)
    for item in schedule.items:
        keys = []
        for slot in item.slots:
            key = id(slot)
            size_of[key] = (slot.device, slot.nbytes)
            if slot.existing is not None:
                keep.add(key)
            keys.append(key)
        steps.append(keys)
    return share_by_lifetime(steps, size_of, keep)
