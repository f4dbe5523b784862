"""The schedule a what-if scenario would run: the recorded realize re-scheduled with scheduler
options changed (a fusion rule, or a rewrite such as matmul packing, switched off); compile-only
changes (NOOPT, BEAM) keep the actual schedule. `counterfactual(record, changes)` is called by
what_if.py (counts and bytes) and what_if_run.py (measured time).
"""
from __future__ import annotations

from ..schedule.schedule import Schedule, schedule

COMPILE_CHANGES = ("noopt", "beam")   # passed to compile_kernel, not to the scheduler


def counterfactual(record, changes: dict) -> Schedule:
    actual = record.schedule
    scheduling = {k: v for k, v in changes.items() if k not in COMPILE_CHANGES}
    if not scheduling:
        return actual
    return schedule(record.outputs, actual.options.with_(**scheduling), realized=actual.leaves,
                    caps=actual.caps)
