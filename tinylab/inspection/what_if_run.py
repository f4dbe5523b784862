"""What-if with the price: compile and time one scenario of one recorded realize beside the actual
schedule. `run_scenario(record, key)` -> {kernels, bytes and measured seconds of both, deltas}.
Both schedules run on fresh buffers (inputs copied in), never the user's, in REPEATS interleaved
rounds (engine/timing.py): the medians are kept with their quartiles and the ratio's verdict.
`prepare_schedule` + `run_prepared` run any Schedule that way. Called by the inspector widget's
"run" buttons, the notebooks' exercise checks and users.
"""
from __future__ import annotations

import time

from ..engine.devices import Device
from ..engine.realize import compile_kernel
from ..engine.timing import interleaved, verdict
from ..ir.node import prod
from ..runtimes.buffer import Buffer
from ..schedule.items import ItemKind
from .counterfactual import COMPILE_CHANGES, counterfactual
from .what_if import scenarios as what_if_scenarios, schedule_bytes

REPEATS = 9


def run_scenario(record, key: str, repeats: int = REPEATS) -> dict:
    """Measure scenario `key` (a what_if.scenarios key) against `record`'s actual schedule."""
    scenarios = {row[0]: row[3] for row in what_if_scenarios(record.schedule)}
    if key not in scenarios:
        raise ValueError(f"run_scenario: no what-if scenario {key!r}; the scenarios are "
                         f"{', '.join(scenarios)}")
    changes = scenarios[key]
    actual = record.schedule
    other = counterfactual(record, changes)
    compile_options = {k: v for k, v in changes.items() if k in COMPILE_CHANGES}
    start = time.perf_counter()
    runs = [prepare_schedule(actual, {}), prepare_schedule(other, compile_options)]
    compile_s = time.perf_counter() - start
    rounds = interleaved({"actual": lambda: run_prepared(*runs[0]),
                          "scenario": lambda: run_prepared(*runs[1])}, rounds=repeats)
    actual_s, scenario_s = rounds["actual"].median, rounds["scenario"].median
    ratio = rounds.ratio("actual", "scenario")
    kernels, moved = len(other.kernels), schedule_bytes(other)
    base_kernels, base_bytes = len(actual.kernels), schedule_bytes(actual)
    return {"key": key, "actual_s": actual_s, "scenario_s": scenario_s,
            "delta_s": scenario_s - actual_s, "ratio": ratio.median if ratio.values else None,
            "kernels": kernels, "base_kernels": base_kernels, "delta_kernels": kernels - base_kernels,
            "bytes": moved, "base_bytes": base_bytes, "delta_bytes": moved - base_bytes,
            "repeats": repeats, "compile_s": compile_s,
            "actual_quartiles": (rounds["actual"].low, rounds["actual"].high),
            "scenario_quartiles": (rounds["scenario"].low, rounds["scenario"].high),
            "ratio_quartiles": (ratio.low, ratio.high), "verdict": _words(verdict(ratio))}


def _words(side: str) -> str:
    """The verdict on the scenario's time against the actual schedule's, in words."""
    return {"above": "slower than the actual schedule, beyond the spread",
            "below": "faster than the actual schedule, beyond the spread"}.get(
                side, "within the spread: this run cannot tell them apart")


def prepare_schedule(sched, compile_options: dict) -> tuple[list, dict]:
    """Compile every kernel of `sched` (a Schedule) and give it fresh buffers: (items, each with its
    runner, and {id(slot): Buffer}), the schedule's inputs copied in, the user's buffers untouched.
    `compile_options` go to compile_kernel (noopt=..., beam=...). Run it with `run_prepared`; a
    slot's result is then `buffers[id(sched.outputs[node])]`."""
    items = []
    for item in sched.items:
        runner = None
        if item.kind is ItemKind.KERNEL and prod(item.slots[0].shape) > 0:
            device = Device.canonicalize(item.slots[0].device)
            runner = compile_kernel(device, item.ast, **compile_options)
        items.append((item, runner))
    buffers = {}
    for item in sched.items:
        for slot in item.slots:
            if id(slot) in buffers:
                continue
            spec = Device[slot.device]
            buffer = Buffer(spec.name, prod(slot.shape), slot.dtype, spec.allocator)
            if slot.existing is not None:   # a copy of the input: the user's stays untouched
                buffer.copyin(slot.existing.numpy())
            buffers[id(slot)] = buffer
    return items, buffers


def run_prepared(items: list, buffers: dict) -> float:
    """Run a `prepare_schedule` result once, in schedule order: the seconds its kernels took (the
    runtime's timer) plus its copies (wall)."""
    total = 0.0
    for item, runner in items:
        arguments = [buffers[id(slot)] for slot in item.slots]
        if item.kind is ItemKind.COPY:
            start = time.perf_counter()
            arguments[0].copyin(arguments[1].numpy())
            total += time.perf_counter() - start
        elif runner is not None and runner.fn is not None:
            total += runner(arguments)
    return total
