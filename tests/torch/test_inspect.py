"""The inspector on a compiled PyTorch model: every kernel names the line of the model's forward
that made it (the FX node's stack trace) and the ATen ops it came from; the trace, the JSON model
and the static HTML show it; DEBUG=2 prints the kernels of a compiled call as for tinylab code.
"""
import json
import re

import pytest

torch = pytest.importorskip("torch")

import tinylab  # noqa: E402
from tinylab import Context, inspection  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 4)

    def forward(self, x):
        hidden = self.linear(x)
        activated = hidden.relu() * 2
        return activated.sum(1)


def _traced_call():
    torch._dynamo.reset()
    model = torch.compile(Block(), backend="tinylab")
    with torch.no_grad(), tinylab.trace() as record:
        model(torch.randn(3, 8))
    return record


def test_each_kernel_names_the_forward_line_and_its_aten_ops():
    text = inspection.to_text(_traced_call())
    assert re.search(r"← test_inspect\.py:\d+  hidden = self\.linear\(x\)  \[aten: addmm\]", text)
    assert re.search(r"← test_inspect\.py:\d+  activated = hidden\.relu\(\) \* 2  "
                     r"\[aten: relu, mul\.Tensor\]", text)
    assert "forward (compiled, inference graph)" in text


def test_the_json_model_and_static_html_carry_the_line_and_origin():
    record = _traced_call()
    model = json.loads(inspection.to_json(record))
    origins = {n.get("origin") for n in model["nodes"]} - {None}
    assert {"addmm", "relu", "mul.Tensor", "sum.dim_IntList"} <= origins
    assert any("activated = hidden.relu() * 2" in n["line"] for n in model["nodes"])
    assert "hidden = self.linear(x)" in inspection.to_html(record)


def test_backward_kernels_name_the_forward_line_they_differentiate():
    torch._dynamo.reset()
    model = torch.compile(Block(), backend="tinylab")
    x = torch.randn(3, 8)
    with tinylab.trace() as record:
        model(x).sum().backward()
    text = inspection.to_text(record)
    assert "forward (compiled, backward graph)" in text
    assert "threshold_backward" in text   # relu's gradient, labelled by its ATen op


def test_debug_2_prints_one_line_per_kernel_of_a_compiled_call(capfd):
    torch._dynamo.reset()
    model = torch.compile(Block(), backend="tinylab")
    x = torch.randn(3, 8)
    for _ in range(3):   # past the calls that capture: DEBUG=2 still sees every launch
        model(x)
    capfd.readouterr()
    with torch.no_grad(), Context(DEBUG=2):
        model(x)
    printed = capfd.readouterr().out
    assert len(re.findall(r"\*\*\* CPU", printed)) >= 2, printed
