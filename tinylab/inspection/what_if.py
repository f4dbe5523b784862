"""What if a fusion rule were off, kernels had no optimization actions, BEAM=2 chose them, or big
matmuls were not packed? Re-schedules one realize's outputs (counterfactual.py) and reports the
difference: kernel count, bytes the kernels read and write, the edges that would become cuts.
A rewrite's scenario is offered where the rewrite ran (matmul packing, schedule/packing.py).
Called by model.build_model (so saved widgets keep the answers without a kernel); what_if_run.py
measures a scenario's time on demand.
"""
from __future__ import annotations

from ..ir.ops import MOVEMENT, Op
from ..schedule.fusion_rules import FUSION_RULES, Scenario
from .counterfactual import COMPILE_CHANGES, counterfactual

# what-ifs that are no fusion rule: the same kernels compiled differently (key, title, what it
# shows, the compile_kernel change); a fusion rule's scenario is a field of its row
# (schedule/fusion_rules.py)
COMPILE_SCENARIOS = (
    Scenario("no_opts", "no optimization actions",
             "the same kernels as plain loops: no upcast, unroll or threads (NOOPT=1)",
             {"noopt": True}),
    Scenario("beam2", "BEAM=2", "the same kernels with actions found by timing candidates (BEAM=2)",
             {"beam": 2}),
)
MAX_LISTED = 40  # counterfactual kernels / new cuts listed per scenario


def schedule_bytes(sched) -> int:
    """Bytes the kernels of a schedule read and write: each item's buffer sizes, summed."""
    return sum(slot.nbytes for item in sched.items for slot in item.slots)


def scenarios(actual=None) -> list[tuple]:
    """(key, title, description, option changes) of every what-if: each fusion rule row's, the
    compile-only ones, then the rewrites' (with `actual`, a Schedule: those whose copies it has)."""
    fired = {d.reason for d in actual.decisions} if actual is not None else None
    options = actual.options if actual is not None else None
    rules = [(row.scenario, row.changes(options)) for row in FUSION_RULES.scenarios(rewrites=False)]
    compile_only = [(scenario, scenario.changes) for scenario in COMPILE_SCENARIOS]
    rewrites = [(row.scenario, row.changes(options)) for row in FUSION_RULES.scenarios(rewrites=True)
                if fired is None or row.reason in fired]
    return [(scenario.key, scenario.title, scenario.description, changes)
            for scenario, changes in rules + compile_only + rewrites]


def what_if(record, node_ids: dict) -> list[dict]:
    actual = record.schedule
    base_kernels, base_bytes = len(actual.kernels), schedule_bytes(actual)
    merged_pairs = {(d.producer, d.consumer) for d in actual.decisions if d.merged}
    answers = []
    for key, title, description, changes in scenarios(actual):
        entry = {"key": key, "title": title, "description": description,
                 "base_kernels": base_kernels, "base_bytes": base_bytes,
                 "compile_only": set(changes) <= set(COMPILE_CHANGES)}
        try:
            other = counterfactual(record, changes)
        except Exception as error:  # a counterfactual the scheduler refuses: say why
            entry["error"] = f"{type(error).__name__}: {error}"
            answers.append(entry)
            continue
        kernels, moved = len(other.kernels), schedule_bytes(other)
        cuts = [_cut_entry(d, node_ids) for d in other.decisions
                if not d.merged and (d.producer, d.consumer) in merged_pairs]
        entry.update(kernels=kernels, bytes=moved, delta_kernels=kernels - base_kernels,
                     delta_bytes=moved - base_bytes, new_cut_count=len(cuts),
                     new_cuts=cuts[:MAX_LISTED],
                     items=[_item_entry(item, node_ids) for item in other.kernels[:MAX_LISTED]])
        answers.append(entry)
    return answers


def _cut_entry(decision, node_ids: dict) -> dict:
    return {"producer": node_ids.get(decision.producer),
            "consumer": node_ids.get(decision.consumer),
            "reason": decision.reason.value, "text": decision.describe()}


def _item_entry(item, node_ids: dict) -> dict:
    """One counterfactual kernel: its loop shape and its ops in graph order."""
    fused = sorted((n for n in item.fused if n in node_ids), key=lambda n: int(node_ids[n][1:]))
    ops = [n.op.name for n in fused if n.op not in MOVEMENT and n.op is not Op.DETACH]
    shape = [s if isinstance(s, int) else repr(s) for s in item.full_shape]  # JSON: text
    return {"shape": shape, "ops": ops or [item.output.op.name],
            "bytes": sum(slot.nbytes for slot in item.slots)}
