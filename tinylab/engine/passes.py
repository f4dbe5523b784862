"""A kernel's compilation, step by step, as printed text: the kernel AST, the plan before any
optimization action, the plan after each action in the order they were applied, the linear
program and the source. realize.py calls `kernel_steps(runner)` only while tracing (the Trace's
KernelRecord.steps); inspection/passes.py adds the diffs between consecutive steps.
"""
from __future__ import annotations

from ..codegen.decompose import decompose
from ..codegen.plan import KernelPlan
from ..ir.printer import print_graph
from .devices import Device

MAX_PRINTED_TREE = 20000  # the loop IR prints expressions as trees: a large DAG is exponential


def tree_size(ast) -> int:
    """Nodes of `ast` counted as a tree (a shared subexpression once per use)."""
    size: dict = {}
    for node in ast.toposort():
        size[node] = 1 + sum(size[s] for s in node.src)
    return size[ast]


def kernel_steps(runner) -> list[tuple[str, str]]:
    """[(title, printed text)] for one compiled kernel, made once per runner (kept in the
    engine's state, Device.state.kernel_steps)."""
    made = Device.state.kernel_steps
    if runner not in made:
        made[runner] = _steps(runner)
    return list(made[runner])


def _steps(runner) -> list[tuple[str, str]]:
    steps = [("kernel AST", print_graph(runner.ast))]
    renderer = Device[runner.device].renderer
    decomposed = decompose(runner.ast, renderer)
    if decomposed is not runner.ast:
        steps.append(("kernel AST in the renderer's ops", print_graph(decomposed)))
    if tree_size(runner.ast) > MAX_PRINTED_TREE:
        note = f"(loop IR not printed: its expression tree has over {MAX_PRINTED_TREE} nodes)"
        steps.append(("plan before actions", note))
    else:
        plan = KernelPlan.from_ast(decomposed)
        steps.append(("plan before actions", plan.describe()))
        for number, opt in enumerate(runner.plan.opts, 1):
            plan = plan.apply(opt)
            steps.append((f"action {number}: {opt}", plan.describe()))
    steps.append(("linear program", runner.program.print()))
    steps.append((f"source ({renderer.language})", runner.source))
    return steps
