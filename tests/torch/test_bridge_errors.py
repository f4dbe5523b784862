"""What the bridge cannot run, it says before anything runs: an unmapped ATen op names itself,
its inputs' shapes and dtypes and the user's line; fallback="eager" runs it in PyTorch and the
inspector marks it; a dtype tinylab lacks is an error, not a cast; explain() lists Dynamo's graph
breaks and the kernels that ran.
"""
import pytest

torch = pytest.importorskip("torch")

import tinylab  # noqa: E402
from bridge_check import assert_close  # noqa: E402
from tinylab import GlobalCounters, inspection  # noqa: E402
from tinylab.torch import explain  # noqa: E402


def erfinv_chain(x):
    y = x * 2
    return torch.erfinv(y).sum(0)


def test_an_unmapped_op_is_named_with_its_inputs_and_line_before_anything_runs():
    torch._dynamo.reset()
    launched = GlobalCounters.kernel_count
    with pytest.raises(Exception) as raised:
        torch.compile(erfinv_chain, backend="tinylab")(torch.rand(3, 4) - 0.5)
    message = str(raised.value)
    assert "aten.erfinv(float32[3, 4])" in message
    assert "test_bridge_errors.py" in message and "return torch.erfinv(y).sum(0)" in message
    assert "fallback" in message
    assert GlobalCounters.kernel_count == launched   # refused before the multiply ran


def test_fallback_eager_runs_the_op_in_pytorch_and_the_inspector_marks_it():
    torch._dynamo.reset()
    x = torch.rand(3, 4) - 0.5
    compiled = torch.compile(erfinv_chain, backend="tinylab", options={"fallback": "eager"})
    with tinylab.trace() as record:
        got = compiled(x)
    assert_close(got, erfinv_chain(x), 1e-5)
    text = inspection.to_text(record)
    assert "ran in PyTorch (not a tinylab kernel): aten.erfinv" in text
    assert "return torch.erfinv(y).sum(0)" in text
    assert "ran in PyTorch" in inspection.to_html(record)
    assert len(record.kernels) >= 2   # the multiply before it and the sum after it: tinylab's


def test_a_dtype_tinylab_lacks_is_an_error_not_a_cast():
    torch._dynamo.reset()

    def to_complex(x):
        return (x.to(torch.complex64) * 2).real
    with pytest.raises(Exception, match="tinylab has no complex64 dtype.*_to_copy"):
        torch.compile(to_complex, backend="tinylab")(torch.rand(3))


class Breaks(torch.nn.Module):
    def forward(self, x):
        y = (x * 2).relu()
        torch._dynamo.graph_break()
        return y.sum(1) + 1


def test_explain_lists_graph_breaks_and_the_kernels_that_ran(capsys):
    x = torch.randn(3, 4)
    result = explain(Breaks(), x)
    printed = capsys.readouterr().out
    assert result.graphs == 2 and len(result.breaks) == 1
    assert "graph_break" in printed or "graph break" in printed
    assert "test_bridge_errors.py" in result.breaks[0][1]
    assert "y = (x * 2).relu()" in printed and "return y.sum(1) + 1" in printed
    assert len(result.trace.kernels) >= 2


def test_a_partly_broken_graph_runs_both_parts_on_tinylab_and_agrees():
    torch._dynamo.reset()
    x = torch.randn(3, 4)
    with tinylab.trace() as record:
        got = torch.compile(Breaks(), backend="tinylab")(x)
    assert_close(got, Breaks()(x), 1e-6)
    lines = inspection.to_text(record)
    assert "y = (x * 2).relu()" in lines and "return y.sum(1) + 1" in lines
