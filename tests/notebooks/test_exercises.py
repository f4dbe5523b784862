"""Every builder exercise of the notebooks, both ways: its checker (notebooks/exercises.py) passes
the reference solution (notebooks/solutions.py) and fails a trivial or wrong answer; and the
prediction checks teach: a wrong answer gets a hint, the answer only on request or after three
tries.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
sys.path.insert(0, str(NOTEBOOKS))
import exercises  # noqa: E402
import solutions  # noqa: E402

sys.path.remove(str(NOTEBOOKS))


def test_a_wrong_answer_gets_a_hint_and_the_answer_only_after_three_tries(capsys):
    exercises.check("q", 41, 42, "because", hint="count the kernels")
    first = capsys.readouterr().out
    assert "42" not in first and "because" not in first and "count the kernels" in first
    exercises.show_answer("q")
    assert "answer: 42" in capsys.readouterr().out
    exercises.check("q", 40, 42)
    assert "42" not in capsys.readouterr().out
    exercises.check("q", 39, 42, "because")
    third = capsys.readouterr().out
    assert "answer: 42" in third and "because" in third
    exercises.check("q", 42, 42)
    assert capsys.readouterr().out.startswith("[x] q: 42 is right")


def test_my_sigmoid_both_ways(capsys):
    from tinylab import Tensor
    assert exercises.check_my_sigmoid(solutions.my_sigmoid)
    assert not exercises.check_my_sigmoid(lambda t: t.sigmoid())   # a registered composite
    assert not exercises.check_my_sigmoid(lambda t: (1 + t.exp()).reciprocal())   # wrong values
    assert not exercises.check_my_sigmoid(lambda t: ...)
    assert "composite" in capsys.readouterr().out
    assert isinstance(solutions.my_sigmoid(Tensor([0.0])), Tensor)


@pytest.mark.parametrize("wrong", [lambda grad, x, out: grad,
                                   lambda grad, x, out: grad / (1 + x.abs()),
                                   lambda grad, x, out: 1 / ((1 + x.abs()) * (1 + x.abs()))])
def test_reverse_rule_both_ways(wrong):
    assert exercises.check_reverse_rule(solutions.softsign_reverse_rule)
    assert not exercises.check_reverse_rule(wrong)


def _always_constant(x, c):
    from tinylab.ir import symbolic as sym
    return sym.const(x.lo // c)   # right only where x stays within one multiple of c


@pytest.mark.parametrize("wrong", [lambda x, c: None, _always_constant, lambda x, c: x])
def test_div_rewrite_both_ways(wrong):
    assert exercises.check_div_rewrite(solutions.div_rewrite)
    assert not exercises.check_div_rewrite(wrong)


def test_a_rule_that_raises_fails_cleanly(capsys):
    assert not exercises.check_reverse_rule(lambda grad, x, out: grad.reshape(7))
    assert "[!] softsign reverse rule" in capsys.readouterr().out


def _run_twin(name: str, replace: dict) -> str:
    """Notebook `name`'s twin run as a script, with `replace` applied to its source (how the
    reader would answer), on the notebooks' CPU target; returns what it printed."""
    import os
    import subprocess
    source = (NOTEBOOKS / "py" / f"{name}.py").read_text()
    for old, new in replace.items():
        assert old in source, f"{name}: {old!r} is not in the twin any more"
        source = source.replace(old, new)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DEBUG"))}
    env.update(CPU_TARGET="avx2", PYTHONPATH=str(NOTEBOOKS))
    done = subprocess.run([sys.executable, "-c", source], cwd=NOTEBOOKS, env=env, timeout=300,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("row, verdict", [("MAX_ROW", "[x] MAX row: every check passes"),
                                          ("WRONG_MAX_ROW", "[!] MAX row: max of")])
def test_max_row_both_ways(row, verdict):
    """06: the reference row passes the op checks and NaN propagation; Python's max does not."""
    out = _run_twin("06_write_a_backend",
                    {"my_max_row = ...": f"import solutions; my_max_row = solutions.{row}"})
    assert verdict in out, out[-2000:]


def _share_everything(steps, size_of, keep):
    free = [key for key in size_of if key not in keep]
    return {key: free[0] for key in free[1:]}   # overlapping lifetimes and sizes


def _share_by_size_only(steps, size_of, keep):
    homes, plan = {}, {}
    for key in size_of:
        if key not in keep:
            plan[key] = homes.setdefault(size_of[key], key)   # ignores lifetimes
    return {k: v for k, v in plan.items() if k != v}


@pytest.mark.parametrize("wrong", [lambda steps, size_of, keep: {}, _share_everything,
                                   _share_by_size_only, lambda steps, size_of, keep: {99: 2}])
def test_memory_policy_both_ways(wrong):
    assert exercises.check_memory_policy(solutions.memory_policy)
    assert not exercises.check_memory_policy(wrong)


def test_the_planner_passes_its_own_checks():
    """The checker's rules hold for schedule/memory.py's plan too (no overlap, same sizes)."""
    from tinylab.schedule.memory import share_by_lifetime
    assert exercises.check_memory_policy(lambda *problem: share_by_lifetime(*problem)[0])


NO_BARRIER = solutions.BLOCK_SUM.replace("barrier(CLK_LOCAL_MEM_FENCE);", "")
ONE_GROUP = """
__kernel void block_sum(__global const float *x, __global float *partial, const int n) {
  __local float shared[64];   // get_local_id, barrier: named, but every sum lands in partial[0]
  if (get_local_id(0) == 0) { float total = 0; for (int i = 0; i < n; i++) total += x[i];
    partial[0] = total; }
  barrier(CLK_LOCAL_MEM_FENCE);
}
"""
ONE_ROUND = solutions.BLOCK_SUM.replace("stride > 0;", "stride > 16;")   # 2 values left


@pytest.mark.parametrize("wrong", [NO_BARRIER, ONE_GROUP, ONE_ROUND, "__kernel void f() {}"])
def test_block_sum_both_ways(wrong):
    assert exercises.check_block_sum(solutions.BLOCK_SUM)
    assert not exercises.check_block_sum(wrong)


def _layernorm_numpy(x):
    y = x - x.mean(axis=1, keepdims=True)
    return y / np.sqrt((y * y).mean(axis=1, keepdims=True) + 1e-5)


def _check_layernorm(options, reason) -> bool:
    data = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    return exercises.check_fusion_options(options, reason, lambda x: x.layernorm(),
                                          _layernorm_numpy, [data], kernels=4)


def test_fusion_rule_both_ways(capsys):
    from tinylab.schedule.fusion import Reason, SchedulerOptions
    assert _check_layernorm(*solutions.fusion_answer())
    for options, reason in [(SchedulerOptions(), Reason.RULE_OFF),                # 3 kernels
                            (SchedulerOptions(recompute_shared=False), Reason.RULE_OFF),  # 5
                            (SchedulerOptions(fuse_into_reduce=False), Reason.BROADCAST_REDUCE),
                            (SchedulerOptions(fuse_into_reduce=False, fold_reduces=False),
                             Reason.RULE_OFF)]:
        assert not _check_layernorm(options, reason)
    assert "kernels, not 4" in capsys.readouterr().out


def test_the_02_exercises_pass_in_their_notebook_with_the_solutions():
    """02's fusion-rule and memory-policy cells, answered with the solutions, pass as written."""
    out = _run_twin("02_laziness_and_fusion", {
        "my_options = ...": "import solutions; my_options, my_reason = solutions.fusion_answer()",
        "my_reason = ...": "pass",
        "    return {}   #": "    return solutions.memory_policy(steps, size_of, keep)  #"})
    assert "[x] fusion rule: every check passes" in out, out[-2000:]
    assert "[x] memory policy: every check passes" in out, out[-2000:]


@pytest.mark.parametrize("answer, verdict", [
    ("solutions.BLOCK_SUM", "[x] block sum"),
    ("solutions.BLOCK_SUM.replace('stride > 0;', 'stride > 16;')", "[!] block sum: n=63: group 0")])
def test_the_04_block_sum_cell_both_ways(answer, verdict):
    """04's cell with the reference kernel passes; with one that stops after one round, fails."""
    out = _run_twin("04_backends", {"my_block_sum = ...":
                                    f"import solutions; my_block_sum = {answer}"})
    assert verdict in out, out[-2000:]


@pytest.fixture(scope="module")
def matmul_07():
    return exercises.MatmulKernel()


def test_plan_07_passes_with_the_solution(matmul_07, capsys):
    """07's reference plan is at least 2x NOOPT, timed against NOOPT in the same run (it
    measures about 40x, so a load that slows one round more than the other cannot flip it)."""
    assert exercises.check_plan(solutions.PLAN_07, 2.0, matmul_07)
    assert "[x] your plan is at least 2x faster than NOOPT" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, says", [
    ([], "an empty list applies no action"),
    ([("UNROLL", 2, 4)], "it is"),             # about 1x: unrolling the reduce loop alone
    ([("SWAP", 0, 1)], "it is"),               # the same loops in another order
    ([("UPCAST", 3, 4)], "OptError"),          # there is no axis 3
    (..., "[ ] your plan")])
def test_plan_07_fails_a_trivial_or_invalid_plan(matmul_07, capsys, wrong, says):
    assert not exercises.check_plan(wrong, 2.0, matmul_07)
    assert says in capsys.readouterr().out


def _neon_facts(matmul):
    from dataclasses import replace

    from tinylab.target.cpu_target import PRESETS
    return exercises.heuristic_facts(matmul.kernel.ast, replace(PRESETS["neon"], cores=2))


def test_target_07_both_ways(matmul_07, capsys):
    """07's prediction of the heuristic under the NEON preset: the reference answers match what
    choose_opts decides (3/3); AVX2's numbers (a reader who ignores the target) and a tile the
    size of the whole budget do not, and a wrong try shows a hint, not the answer."""
    facts = _neon_facts(matmul_07)
    exercises.check_all(solutions.TARGET_07, facts)
    assert capsys.readouterr().out.endswith("3/3 right\n")
    avx2 = {"vector lanes": 8, "accumulator registers": 12, "vector accumulators in the tile": 8}
    exercises.check_all(avx2, facts, hints={"vector lanes": "a float32 is 32 bits wide"})
    out = capsys.readouterr().out
    assert out.endswith("0/3 right\n") and "a float32 is 32 bits wide" in out
    assert "answer: 4" not in out
    exercises.check_all(dict(solutions.TARGET_07, **{"vector accumulators in the tile": 24}), facts)
    assert capsys.readouterr().out.endswith("2/3 right\n")


def test_target_07_facts_come_from_the_heuristic(matmul_07):
    """heuristic_facts reads the plan choose_opts makes: under the notebooks' own AVX2 target it
    gives the heuristic plan's vector width and UPCAST product (8 lanes, 2 x 4 accumulators)."""
    from tinylab import Device
    facts = exercises.heuristic_facts(matmul_07.kernel.ast, Device["CPU"].target)
    opts = matmul_07.heuristic.opts
    assert facts["vector lanes"] == next(o.amount for o in opts if o.action.value == "VECTORIZE")
    assert facts["vector accumulators in the tile"] == int(np.prod(
        [o.amount for o in opts if o.action.value == "UPCAST"]))
