"""Golden files for three canonical examples: the printed IR, the schedule with its decisions,
the kernel's loop IR, linear program and generated C. Review changes as diffs."""
import numpy as np
import pytest

from tinylab import Device, Tensor
from tinylab.codegen.linearize import linearize
from tinylab.codegen.plan import KernelPlan
from tinylab.engine.realize import REALIZED
from tinylab.ir.graph_printer import print_graph
from tinylab.schedule.schedule import schedule

N = 8


def _inputs():
    rng = np.random.default_rng(0)
    return [Tensor(rng.standard_normal((N, N)).astype(np.float32)).realize() for _ in range(2)]


EXAMPLES = {
    "elementwise": lambda a, b: ((a + b) * 2).relu().exp(),
    "reduce": lambda a, b: (a * b).sum(1).sqrt(),
    "matmul": lambda a, b: (a.reshape(N, 1, N) * b.T.reshape(1, N, N)).sum(axis=2),
}


def _normalize(text: str) -> str:
    import re
    text = re.sub(r"<b\d+( v\d+)?>", "<buf>", text)  # buffer serial numbers vary per run
    return re.sub(r" {2,}", "  ", text)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_golden(name, golden):
    a, b = _inputs()
    out = EXAMPLES[name](a, b)
    golden(f"{name}.graph.txt", _normalize(print_graph(out.node)) + "\n")
    sched = schedule([out.node], realized=REALIZED)
    golden(f"{name}.schedule.txt", str(sched) + "\n")
    (kernel,) = sched.kernels
    plan = KernelPlan.from_ast(kernel.ast)
    golden(f"{name}.loops.txt", plan.describe() + "\n")
    golden(f"{name}.linear.txt", linearize(plan).print() + "\n")
    # rendered from the plan directly: compile_kernel's names get n1, n2... suffixes that depend
    # on what else this process compiled
    golden(f"{name}.c", Device["CPU"].renderer.render(linearize(plan, plan.name)))
