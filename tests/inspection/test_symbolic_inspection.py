"""The inspector with symbolic shapes (issue 16 item 4): the Trace records each launch's bound
values; the kernels table, text and static HTML show one kernel (one program, its source taking
the variable) launched once per length with each value; so does a `%%tinygrad` cell."""
import json

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import tinylab
from tinylab import Context, Tensor, Variable
from tinylab.inspection import build_model, summary_text, to_html, to_json, to_text


@pytest.fixture(scope="module")
def two_lengths():
    x = Tensor(np.arange(32, dtype=np.float32).reshape(4, 8)).realize()
    with Context(DEV="CPU"), tinylab.trace() as recorded:
        for n in (3, 5):
            out = (x[:, :Variable("i", 1, 8).bind(n)] * 2).sum(1).numpy()
            np.testing.assert_allclose(out, (np.arange(32).reshape(4, 8)[:, :n] * 2).sum(1))
    return recorded


def test_the_trace_records_each_launchs_values(two_lengths):
    launches = two_lengths.kernels
    assert [k.name for k in launches] == ["r_4_i", "r_4_i"]  # named after the variable
    assert [k.var_vals for k in launches] == [{"i": 3}, {"i": 5}]
    assert launches[0].ast is launches[1].ast   # one symbolic kernel
    assert "const int i" in launches[0].source and "ridx0 < i" in launches[0].source
    assert launches[0].flops * 5 == launches[1].flops * 3 > 0  # loops run to the bound value


def test_model_text_and_html_show_one_kernel_launched_with_both_values(two_lengths):
    model = build_model(two_lengths, timings=False)
    json.loads(to_json(two_lengths))  # symbolic shapes serialize as text
    assert list(model["programs"]) == ["r_4_i"]  # one kernel...
    assert [(k["name"], k["variables"], k["shape"]) for k in model["kernels"]] == \
        [("r_4_i", {"i": 3}, [4, "<i[1-8]>"]), ("r_4_i", {"i": 5}, [4, "<i[1-8]>"])]  # ...twice
    summary = summary_text(model)
    assert "r_4_i  [4, <i[1-8]>]  i=3" in summary and "r_4_i  [4, <i[1-8]>]  i=5" in summary
    text = to_text(model, source=True)
    assert "variables: i=3" in text and "variables: i=5" in text and "const int i" in text
    html = to_html(model)
    assert "<script" not in html
    assert "[4, &lt;i[1-8]&gt;] · i=3" in html and "[4, &lt;i[1-8]&gt;] · i=5" in html


def test_tinygrad_cell_magic_shows_both_lengths():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "tinylab")
    shell.run_cell("import numpy as np\nfrom tinylab import Tensor, Variable\n"
                   "x = Tensor(np.arange(32, dtype=np.float32).reshape(4, 8)).realize()")
    try:
        with capture_output() as captured:
            shell.run_cell("%%tinygrad --static\n"
                           "for n in (2, 6):\n"
                           "    (x[:, :Variable('i', 1, 8).bind(n)] + 1).sum(1).numpy()")
    finally:
        shell.run_line_magic("tinygrad", "off")
    (bundle,) = [output.data for output in captured.outputs]
    plain, html = bundle["text/plain"], bundle["text/html"]
    assert plain.count("r_4_i") == 2 and "i=2" in plain and "i=6" in plain
    assert "i=2" in html and "i=6" in html and "<script" not in html


def test_kernel_names_do_not_depend_on_what_the_process_ran_before():
    """A trace named its kernels from a process-wide table: after test_symbolic_shapes.py had
    compiled four other r_4_i programs, this one was r_4_in4. A trace now numbers same-named
    programs itself, in the order it first launches them."""
    x = Tensor(np.arange(32, dtype=np.float32).reshape(4, 8)).realize()
    v = Variable("i", 1, 8).bind(5)
    expected = np.arange(32, dtype=np.float32).reshape(4, 8)[:, :5]
    np.testing.assert_allclose(x[:, :v].max(1).numpy(), expected.max(1))  # untraced, compiled
    for _ in range(2):  # the same names in two traces
        with Context(DEV="CPU"), tinylab.trace() as recorded:
            np.testing.assert_allclose((x[:, :v] - 7).sum(1).numpy(), (expected - 7).sum(1))
            np.testing.assert_allclose(x[:, :v].max(1).numpy(), expected.max(1))
            np.testing.assert_allclose((x[:, :v] - 7).sum(1).numpy(), (expected - 7).sum(1))
        assert [k.name for k in recorded.kernels] == ["r_4_i", "r_4_in1", "r_4_i"]
        assert list(build_model(recorded, timings=False)["programs"]) == ["r_4_i", "r_4_in1"]
