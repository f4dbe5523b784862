"""Every row of the bridge's ATen table against PyTorch eager: each case of aten_cases.py is
traced to an ATen graph (with its backward ops where it has a gradient), run by the bridge and
compared output by output (dtype, shape, values; special values where the op has them); and the
cases together reach every row of the table.
"""
import pytest

torch = pytest.importorskip("torch")

from aten_cases import all_cases, make  # noqa: E402
from bridge_check import assert_close, flat, run_both, seeded  # noqa: E402
from tinylab.torch.aten_table import TABLE  # noqa: E402

CASES = all_cases()


def case_inputs(case) -> list:
    """The case's inputs, drawn one after another from one generator seeded by its name (two
    inputs of one shape differ)."""
    generator = seeded(case.name)
    return [make(spec, generator) for spec in case.inputs]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_case_matches_pytorch(case):
    inputs = case_inputs(case)
    got, expected, _ = run_both(case.fn, inputs, grad=case.grad, frozen=case.frozen)
    assert len(got) == len(expected)
    learned = sum(x.is_floating_point() for x in inputs) - len(case.frozen)
    count = len(got) - (learned if case.grad else 0)
    special = any(spec[0] == "special" for spec in case.inputs)
    for i, (g, e) in enumerate(zip(got, expected)):
        tolerance = 1e-4 if i < count else 1e-3   # forward outputs, then gradients
        assert_close(g, e, tolerance, case.atol, f"{case.name} output {i}", special)


def _reached(case) -> set:
    """The ops of the ATen graphs AOTAutograd makes for a case (run eagerly: nothing compiled)."""
    from functorch.compile import aot_function
    found = set()

    def keep(gm, example_inputs):
        for node in gm.graph.nodes:
            if node.op == "call_function":
                found.update({node.target, getattr(node.target, "overloadpacket", None)})
        return gm
    inputs = case_inputs(case)
    inputs = [x.requires_grad_(case.grad and x.is_floating_point() and i not in case.frozen)
              for i, x in enumerate(inputs)]
    compiled = aot_function(case.fn, fw_compiler=keep, bw_compiler=keep, inference_compiler=keep)
    with torch.set_grad_enabled(case.grad):
        outs = [o for o in flat(compiled(*inputs)) if o.requires_grad]
    if outs:
        torch.autograd.grad(sum(o.sum() for o in outs), [x for x in inputs if x.requires_grad],
                            allow_unused=True)
    return found


def test_cases_reach_every_row_of_the_table():
    """A row no case reaches is untested: each key must be an op (overload or packet) of some
    case's forward or backward graph, or of the compiled models' graphs (BY_DYNAMO)."""
    reached = set().union(*(_reached(case) for case in CASES))
    missing = [str(key) for key in TABLE if key not in reached and str(key) not in BY_DYNAMO]
    assert not missing, f"rows no case reaches: {missing}"


# rows that only Dynamo/AOTAutograd graphs produce (the symbolic-size arithmetic, copies AOT
# inserts): reached by the compiled-model tests in test_compile.py and test_dynamic.py
BY_DYNAMO = {"aten.native_dropout", "aten.native_dropout_backward",  # random: test_compile.py
             "aten.bernoulli.p", "aten.bernoulli.default",
             "aten.lift_fresh_copy", "aten.alias", "aten._unsafe_view", "aten.sym_size.int",
             "aten.sym_numel", "<built-in function add>", "<built-in function sub>",
             "<built-in function mul>", "<built-in function floordiv>",
             "<built-in function mod>", "<built-in function neg>"}
