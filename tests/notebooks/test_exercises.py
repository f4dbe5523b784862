"""Every builder exercise of the notebooks, both ways: its checker (notebooks/*_exercises.py)
passes the reference solution (notebooks/solutions.py) and fails a plausible wrong answer with a
hint that asks a question and does not give the answer; the prediction checks teach (a wrong
answer gets a hint, the answer only on request or after three tries); claims stop a notebook
where its text and the engine part.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
sys.path.insert(0, str(NOTEBOOKS))
import autograd_exercises  # noqa: E402
import backend_exercises  # noqa: E402
import codegen_exercises  # noqa: E402
import exercises  # noqa: E402
import plan_exercises  # noqa: E402
import schedule_exercises  # noqa: E402
import solutions  # noqa: E402

sys.path.remove(str(NOTEBOOKS))


def _hint(out: str) -> str:
    """The hint line of a checker's output (a question)."""
    hints = re.findall(r"^\s*hint: (.*)$", out, flags=re.M)
    assert hints, out
    assert hints[-1].rstrip().endswith("?"), hints[-1]
    return hints[-1]


def test_a_wrong_answer_gets_a_hint_and_the_answer_only_after_three_tries(capsys):
    exercises.check("q", 41, 42, "because", hint="how many kernels do you count?")
    first = capsys.readouterr().out
    assert "42" not in first and "because" not in first and "how many kernels" in first
    exercises.show_answer("q")
    assert "answer: 42" in capsys.readouterr().out
    exercises.check("q", 40, 42)
    assert "42" not in capsys.readouterr().out
    exercises.check("q", 39, 42, "because")
    third = capsys.readouterr().out
    assert "answer: 42" in third and "because" in third
    exercises.check("q", 42, 42)
    assert capsys.readouterr().out.startswith("[x] q: 42 is right")


def test_a_claim_prints_what_it_checked_and_stops_where_text_and_engine_part(capsys):
    exercises.claim("softmax takes 3 kernels", 3, 3)
    exercises.claim("the plan vectorizes", True)
    assert capsys.readouterr().out == ("checked: softmax takes 3 kernels: 3\n"
                                       "checked: the plan vectorizes\n")
    with pytest.raises(exercises.ClaimError, match="says: softmax takes 3 kernels; the engine "
                       "gives 4 \\(the text says 3\\)"):
        exercises.claim("softmax takes 3 kernels", 4, 3)
    with pytest.raises(exercises.ClaimError):
        exercises.claim("the plan vectorizes", False)


def test_a_builder_hint_must_ask_a_question():
    with pytest.raises(ValueError, match="a hint asks a question"):
        exercises.passed("q", ["wrong"], "write it as (1 + (-t).exp()).reciprocal()")


# ---- 01 ----------------------------------------------------------------------------------------

def test_my_sigmoid_both_ways(capsys):
    from tinylab import Tensor
    assert autograd_exercises.check_my_sigmoid(solutions.my_sigmoid)
    for wrong, says in [(lambda t: t.sigmoid(), "composite"),
                        (lambda t: (1 + t.exp()).reciprocal(), "at t = "),
                        (lambda t: 0.5 + t * 0.25, "no EXP2 or no RECIPROCAL")]:
        capsys.readouterr()
        assert not autograd_exercises.check_my_sigmoid(wrong)
        out = capsys.readouterr().out
        assert says in out and "reciprocal()" not in _hint(out), out
    assert not autograd_exercises.check_my_sigmoid(lambda t: ...)
    assert isinstance(solutions.my_sigmoid(Tensor([0.0])), Tensor)


@pytest.mark.parametrize("wrong", [lambda grad, x, out: grad,
                                   lambda grad, x, out: grad / (1 + x.abs()),
                                   lambda grad, x, out: 1 / ((1 + x.abs()) * (1 + x.abs()))])
def test_reverse_rule_both_ways(wrong, capsys):
    assert autograd_exercises.check_reverse_rule(solutions.softsign_reverse_rule)
    capsys.readouterr()
    assert not autograd_exercises.check_reverse_rule(wrong)
    assert "(1 + x.abs())" not in _hint(capsys.readouterr().out)


def test_a_rule_that_raises_fails_cleanly(capsys):
    assert not autograd_exercises.check_reverse_rule(lambda grad, x, out: grad.reshape(7))
    assert "[!] softsign reverse rule" in capsys.readouterr().out


def _overwrite_walk(loss, targets):
    """The walk with `=` where a second gradient must be added: wrong on a diamond."""
    from tinylab import Tensor
    from tinylab.frontend import autograd
    grads = {loss.node: autograd.ones_like(loss.node)}
    for node in reversed(solutions.topological_order(loss.node)):
        if node in grads and node.op in autograd.RULES:
            for source, grad in zip(node.src, autograd.RULES[node.op](grads[node], node)):
                if grad is not None and source.dtype.is_float:
                    grads[source] = grad
    return [Tensor(grads[t.node]) for t in targets]


def _tree_order(root) -> list:
    """Post-order without remembering placed nodes: a node used twice appears twice."""
    return [node for source in root.src for node in _tree_order(source)] + [root]


def _reversed_order(root) -> list:
    return list(reversed(solutions.topological_order(root)))


def _library_walk(loss, targets):
    loss.backward()
    return [t.grad for t in targets]


@pytest.mark.parametrize("order, walk, says", [
    (_tree_order, solutions.backward_walk, "appear twice"),
    (_reversed_order, solutions.backward_walk, "comes before one of its sources"),
    (solutions.topological_order, _overwrite_walk, "d loss / d x"),
    (solutions.topological_order, _library_walk, "the library's walk"),
    (lambda root: root.toposort(), solutions.backward_walk, "the library's walk")])
def test_backward_walk_both_ways(order, walk, says, capsys):
    assert autograd_exercises.check_backward_walk(solutions.topological_order,
                                                  solutions.backward_walk)
    capsys.readouterr()
    assert not autograd_exercises.check_backward_walk(order, walk)
    out = capsys.readouterr().out
    assert says in out, out
    assert "+" not in _hint(out) and "sum" not in _hint(out)


def test_the_backward_walk_is_restored_after_a_check():
    from tinylab import Tensor
    autograd_exercises.check_backward_walk(solutions.topological_order, _library_walk)
    x = Tensor([2.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.numpy().tolist() == [4.0] and len(x.node.toposort()) == 1


# ---- 02 ----------------------------------------------------------------------------------------

def _table_of_02() -> dict:
    """Notebook 02's table of expressions, read from its twin (the check runs on exactly it)."""
    twin = (NOTEBOOKS / "py" / "02_laziness_and_fusion.py").read_text()
    start = twin.index("EXPRESSIONS = {")
    namespace: dict = {}
    exec(twin[start:twin.index("\n}\n", start) + 3], namespace)
    return namespace["EXPRESSIONS"]


EXPRESSIONS = _table_of_02()


def _cut_every_reduce(reduce, views):
    from tinylab.schedule.fusion import Reason
    return Reason.BROADCAST_REDUCE


def _cut_expands_only(reduce, views):
    from tinylab.schedule.fusion import Reason
    return Reason.BROADCAST_REDUCE if any(v.op.name == "EXPAND" for v in views) else None


def _every_view_is_a_reorder(reduce, views):
    from tinylab.schedule.fusion import Reason
    return Reason.VIEW_OF_REDUCE if any(v.op.name != "RESHAPE" for v in views) else None


def test_the_table_is_the_notebooks_ten_rows():
    assert len(EXPRESSIONS) == 10 and "x.softmax(1)" in EXPRESSIONS


@pytest.mark.parametrize("wrong, says", [(_cut_every_reduce, "(x*y).sum(1): your rule gives 2"),
                                         (_cut_expands_only, "m = x @ y; m + m.T: your rule"),
                                         (_every_view_is_a_reorder, "the counts match")])
def test_cut_rule_both_ways(wrong, says, capsys):
    assert schedule_exercises.check_cut_rule(solutions.cut_rule, EXPRESSIONS)
    capsys.readouterr()
    assert not schedule_exercises.check_cut_rule(wrong, EXPRESSIONS)
    out = capsys.readouterr().out
    assert says in out or says in _hint(out), out
    assert "Reason." not in _hint(out) and "EXPAND" not in _hint(out)


def test_the_cut_rule_model_counts_what_the_scheduler_counts():
    """kernels_by_rule with the reference rule gives the real schedule's kernels and cut reasons
    on expressions outside the table too (softmax of a transpose, a mean over rows)."""
    rows = {"x.T.softmax(1)": lambda x, y, w: x.T.softmax(1),
            "(x - x.mean(0)).exp()": lambda x, y, w: (x - x.mean(0)).exp()}
    assert schedule_exercises.check_cut_rule(solutions.cut_rule, rows)


# ---- 03 ----------------------------------------------------------------------------------------

def _always_constant(x, c):
    from tinylab.ir import symbolic as sym
    return sym.const(x.lo // c)   # right only where x stays within one multiple of c


@pytest.mark.parametrize("wrong", [lambda x, c: None, _always_constant, lambda x, c: x])
def test_div_rewrite_both_ways(wrong, capsys):
    assert codegen_exercises.check_div_rewrite(solutions.div_rewrite)
    capsys.readouterr()
    assert not codegen_exercises.check_div_rewrite(wrong)
    assert "x.lo // c" not in _hint(capsys.readouterr().out)


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


def _share_by_size_only(steps, size_of, keep):
    homes, plan = {}, {}
    for key in size_of:
        if key not in keep:
            plan[key] = homes.setdefault(size_of[key], key)   # ignores lifetimes
    return {k: v for k, v in plan.items() if k != v}


def _share_everything(steps, size_of, keep):
    free = [key for key in size_of if key not in keep]
    return {key: free[0] for key in free[1:]}   # overlapping lifetimes and sizes


@pytest.mark.parametrize("wrong", [lambda steps, size_of, keep: {}, _share_everything,
                                   _share_by_size_only, lambda steps, size_of, keep: {99: 2}])
def test_memory_policy_both_ways(wrong):
    assert schedule_exercises.check_memory_policy(solutions.memory_policy)
    assert not schedule_exercises.check_memory_policy(wrong)


def test_the_planner_passes_its_own_checks():
    """The checker's rules hold for schedule/memory.py's plan too (no overlap, same sizes)."""
    from tinylab.schedule.memory import share_by_lifetime
    assert schedule_exercises.check_memory_policy(lambda *problem: share_by_lifetime(*problem)[0])


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
    assert backend_exercises.check_block_sum(solutions.BLOCK_SUM)
    assert not backend_exercises.check_block_sum(wrong)


def _layernorm_numpy(x):
    y = x - x.mean(axis=1, keepdims=True)
    return y / np.sqrt((y * y).mean(axis=1, keepdims=True) + 1e-5)


def _check_layernorm(options, reason) -> bool:
    data = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    return schedule_exercises.check_fusion_options(options, reason, lambda x: x.layernorm(),
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
        "    return {}   #": "    return solutions.memory_policy(steps, size_of, keep)  #",
        "    return ...   # a Reason, or None to fuse":
        "    return solutions.cut_rule(reduce, views)"})
    assert "[x] fusion rule: every check passes" in out, out[-2000:]
    assert "[x] memory policy: every check passes" in out, out[-2000:]
    assert "[x] cut rule: every check passes" in out, out[-2000:]


def test_the_01_walk_passes_in_its_notebook_with_the_solution():
    """01's backward-walk cell, answered with the solution, passes as written."""
    out = _run_twin("01_tensors_and_autograd", {
        "    return ...   # every node once, each after its sources":
        "    import solutions; return solutions.topological_order(root)",
        "    return ...   # walk my_order(loss.node) backwards with autograd.RULES":
        "    import solutions; return solutions.backward_walk(loss, targets)"})
    assert "[x] backward walk: every check passes" in out, out[-2000:]


@pytest.mark.parametrize("answer, verdict", [
    ("solutions.BLOCK_SUM", "[x] block sum"),
    ("solutions.BLOCK_SUM.replace('stride > 0;', 'stride > 16;')", "[!] block sum: n=63: group 0")])
def test_the_04_block_sum_cell_both_ways(answer, verdict):
    """04's cell with the reference kernel passes; with one that stops after one round, fails."""
    out = _run_twin("04_backends", {"my_block_sum = ...":
                                    f"import solutions; my_block_sum = {answer}"})
    assert verdict in out, out[-2000:]




# ---- 06: a C renderer with gaps ----------------------------------------------------------------

class _Reference(solutions.CGaps, backend_exercises.ScalarCRenderer):
    pass


class _NoMask(_Reference):
    def load(self, name, type_name, buffer, index, valid, zero):
        return f"{type_name} {name} = data{buffer}[{index}];"   # reads outside the buffer


class _ZeroStart(_Reference):
    def accumulator(self, name, type_name, init):
        return f"{type_name} {name} = 0;"                      # a max of negatives gives 0


class _AlwaysAdd(_Reference):
    def accumulate(self, acc, value, op, dtype):
        return f"{acc} = {acc} + {value};"                     # every reduce a sum


class _NoBrace(_Reference):
    def open_loop(self, variable, size):
        return f"for (int {variable} = 0; {variable} < {size}; {variable}++)"


@pytest.mark.parametrize("wrong, says", [(_NoMask, "SUM of a padded view"),
                                         (_ZeroStart, "MAX of negative rows"),
                                         (_AlwaysAdd, "MAX with a NaN"),
                                         (_NoBrace, "the compiler said")])
def test_c_renderer_both_ways(wrong, says, capsys):
    """06: the reference gaps pass the op suite, reductions and masked loads on a device of
    their own (compiled by the system C compiler); each wrong gap fails where it should."""
    assert backend_exercises.check_renderer(_Reference)
    capsys.readouterr()
    assert not backend_exercises.check_renderer(wrong)
    out = capsys.readouterr().out
    assert says in out, out
    assert "?" in _hint(out) and ": 0" not in _hint(out)


def test_c_renderer_renders_what_it_runs():
    from tinylab import Tensor, trace
    backend_exercises.register_c(_Reference, "MYC_SOURCE")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with trace() as recorded:
        got = Tensor(x, device="MYC_SOURCE").max(1).numpy()
    assert got.tolist() == [2.0, 5.0]
    source = recorded.kernels[0].source
    assert "for (int ridx0 = 0; ridx0 < 3; ridx0++) {" in source and "(-INFINITY)" in source


@pytest.mark.parametrize("row, verdict", [("MAX_ROW", "[x] MAX row: every check passes"),
                                          ("WRONG_MAX_ROW", "[!] MAX row: max of")])
def test_max_row_both_ways(row, verdict):
    """06: the reference row passes the op checks and NaN propagation; Python's max does not."""
    out = _run_twin("06_write_a_backend",
                    {"my_max_row = ...": f"import solutions; my_max_row = solutions.{row}"})
    assert verdict in out, out[-2000:]


# ---- 07 ----------------------------------------------------------------------------------------

def _avx2():
    from tinylab.target.cpu_target import PRESETS, detect
    if not PRESETS["avx2"].executable_on(detect()):
        pytest.skip("this CPU cannot run AVX2 code: the reference plan is written for it")
    from tinylab import Context
    return Context(CPU_TARGET="avx2")


@pytest.fixture(scope="module")
def matmul_07():
    with _avx2():
        return plan_exercises.MatmulKernel()


def _decided(actions, matmul, capsys) -> tuple[bool, str]:
    """check_plan, run again (up to 3 times) while a run cannot tell (its spread straddles)."""
    for _ in range(3):
        with _avx2():
            verdict = plan_exercises.check_plan(actions, matmul=matmul)
        out = capsys.readouterr().out
        if "[?]" not in out:
            return verdict, out
    return verdict, out


def test_plan_07_passes_with_the_solution(matmul_07, capsys):
    """07's reference plan runs at the heuristic's speed on one core (the same plan): timed in
    15 interleaved rounds against it, its ratio's lower quartile is above 0.8."""
    passed, out = _decided(solutions.PLAN_07, matmul_07, capsys)
    assert passed and "[x] your plan is at least 0.8x as fast as the heuristic's" in out, out


@pytest.mark.parametrize("wrong, says", [
    ([("VECTORIZE", 1, 8), ("UPCAST", 1, 2), ("UPCAST", 0, 4)], "it runs at"),  # 07's a @ b
    ([("VECTORIZE", 2, 8)], "it runs at"),     # vectorized, one accumulator chain
    ([("UNROLL", 2, 4)], "it runs at"),        # the reduce loop unrolled, scalar
    ([("SWAP", 0, 1)], "it runs at"),          # the same loops in another order
    ([("THREAD", 0, 2)], "THREAD is left out"),
    ([("UPCAST", 3, 4)], "OptError"),          # there is no axis 3
    ([], "an empty list applies no action"),
    (..., "[ ] your plan")])
def test_plan_07_fails_a_slower_or_invalid_plan(matmul_07, capsys, wrong, says):
    """Each is at most 0.66x the heuristic's speed (07's a @ b plan on a @ b.T: lanes along a
    strided axis; measured 0.66x, vectorizing alone 0.5x, at load 7 on 2 cores), so its ratio's
    upper quartile falls below 0.8 however loaded the machine: both plans run in every round."""
    passed, out = _decided(wrong, matmul_07, capsys)
    assert not passed and says in out, out
    if "hint:" in out:
        assert "VECTORIZE" not in _hint(out)


def test_the_exercise_kernel_is_the_heuristics_single_core_plan(matmul_07):
    from tinylab.engine.realize import choose_plan
    with _avx2():
        full = choose_plan("CPU", matmul_07.kernel.ast, noopt=False, beam=0)
    assert [str(o) for o in matmul_07.heuristic.opts] == \
        [str(o) for o in full.opts if o.action.value != "THREAD"]
    assert [tuple([o.action.value, o.axis, o.amount]) for o in matmul_07.heuristic.opts] == \
        solutions.PLAN_07


def _neon_facts(matmul):
    from dataclasses import replace

    from tinylab.target.cpu_target import PRESETS
    return plan_exercises.heuristic_facts(matmul.kernel.ast, replace(PRESETS["neon"], cores=2))


@pytest.fixture(scope="module")
def matmul_07_untransposed():
    with _avx2():
        return plan_exercises.MatmulKernel(transposed=False)


def test_target_07_both_ways(matmul_07_untransposed, capsys):
    """07's prediction of the heuristic under the NEON preset for the notebook's a @ b: the
    reference answers match what choose_opts decides (3/3); AVX2's numbers (a reader who
    ignores the target) and a tile the size of the whole budget do not, and a wrong try shows
    a hint, not the answer."""
    facts = _neon_facts(matmul_07_untransposed)
    exercises.check_all(solutions.TARGET_07, facts)
    assert capsys.readouterr().out.endswith("3/3 right\n")
    avx2 = {"vector lanes": 8, "accumulator registers": 12, "vector accumulators in the tile": 8}
    exercises.check_all(avx2, facts, hints={"vector lanes": "how wide is a float32?"})
    out = capsys.readouterr().out
    assert out.endswith("0/3 right\n") and "how wide is a float32?" in out
    assert "answer: 4" not in out
    exercises.check_all(dict(solutions.TARGET_07, **{"vector accumulators in the tile": 24}), facts)
    assert capsys.readouterr().out.endswith("2/3 right\n")


def test_target_07_facts_come_from_the_heuristic(matmul_07_untransposed):
    """heuristic_facts reads the plan choose_opts makes: under the notebooks' own AVX2 target it
    gives the heuristic plan's vector width and UPCAST product (8 lanes, 2 x 4 accumulators)."""
    from tinylab import Device
    from tinylab.engine.realize import choose_plan
    with _avx2():
        facts = plan_exercises.heuristic_facts(matmul_07_untransposed.kernel.ast,
                                               Device["CPU"].target)
        opts = choose_plan("CPU", matmul_07_untransposed.kernel.ast, noopt=False, beam=0).opts
    assert facts["vector lanes"] == next(o.amount for o in opts if o.action.value == "VECTORIZE")
    assert facts["vector accumulators in the tile"] == int(np.prod(
        [o.amount for o in opts if o.action.value == "UPCAST"]))

