"""The widgets in-process: the inspector's mimebundle (widget + script-free HTML + the text
summary), its front-end assets as installed package data, the magics in an IPython shell, and
the training monitor's numbers (including TinyJit replays, which are not traced).
"""
import json
import shutil
import subprocess
from importlib import resources

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from tinylab import Tensor, TinyJit
from tinylab.inspection import build_model, summary_text
from tinylab_widgets import Inspector, TrainingMonitor
from tinylab_widgets.assets import all_asset_names, inspector_module, monitor_module

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def test_mimebundle_has_widget_static_html_and_text(softmax_trace):
    inspector = Inspector(softmax_trace)
    data, _ = inspector._repr_mimebundle_()
    assert set(data) == {WIDGET_MIME, "text/html", "text/plain"}
    assert data[WIDGET_MIME]["model_id"] == inspector.model_id
    assert data["text/plain"] == summary_text(build_model(softmax_trace, timings=False))
    assert "<svg" in data["text/html"] and "<script" not in data["text/html"]
    html = data["text/html"]
    # three kernels, the what-if answers, memory and the roofline
    assert html.count('<details style="margin:2px 0">') == 6
    assert html.count('<details class="tinylab-passes"') == 1   # the first kernel's passes only


def test_widget_model_carries_everything_the_front_end_needs(softmax_trace):
    data = Inspector(softmax_trace).data
    json.dumps(data)   # it syncs as JSON
    assert {"realizes", "nodes", "kernels", "decisions", "programs", "graph"} <= set(data)
    assert all(k["name"] in data["programs"] for k in data["kernels"])
    assert {a["key"] for a in data["realizes"][0]["what_if"]} >= {"fuse_off", "no_recompute"}
    assert all("run_s" in k for k in data["kernels"])


def test_selection_is_a_synced_trait(softmax_trace):
    inspector = Inspector(softmax_trace)
    inspector.select("kernel", "k1")
    assert inspector.get_state("selection")["selection"] == {"kind": "kernel", "id": "k1"}


def test_assets_are_installed_package_data():
    static = resources.files("tinylab_widgets") / "static"
    for name in all_asset_names():
        assert (static / name).is_file(), f"{name} is not installed with tinylab_widgets"
    assert "Chris Pettitt" in (static / "vendor" / "dagre.LICENSE").read_text()
    module = inspector_module()
    assert module.count("export default") == 1 and "var dagre=" in module
    assert "http://" not in module.replace("http://www.w3.org/2000/svg", "")   # no CDN
    assert monitor_module().count("export default") == 1


@pytest.fixture()
def shell():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "tinylab")
    shell.run_cell("import numpy as np\nfrom tinylab import Tensor\n"
                   "x = Tensor(np.arange(20, dtype=np.float32).reshape(4, 5)).realize()")
    yield shell
    shell.run_line_magic("tinygrad", "off")


def displayed(captured) -> list[dict]:
    return [output.data for output in captured.outputs]


def test_cell_magic_displays_the_inspector(shell):
    with capture_output() as captured:
        shell.run_cell("%%tinygrad\ny = x.softmax(1)\ny.numpy().shape")
    bundles = displayed(captured)
    assert len(bundles) == 1 and WIDGET_MIME in bundles[0]
    assert "3 kernels" in bundles[0]["text/plain"]


def test_static_option_and_line_magic(shell):
    with capture_output() as captured:
        shell.run_cell("%%tinygrad --static\n(x * 2).sum().item()")
        shell.run_cell("%tinygrad x.exp()")
    static, line = displayed(captured)
    assert WIDGET_MIME not in static and "<svg" in static["text/html"]
    assert "x.exp()  (%tinygrad)" in line["text/plain"]


def test_on_and_off_inspect_every_cell(shell):
    with capture_output() as captured:
        shell.run_line_magic("tinygrad", "on")
        shell.run_cell("(x + 1).numpy().shape")
        shell.run_cell("1 + 1")                      # no kernels: nothing shown
        shell.run_line_magic("tinygrad", "off")
        shell.run_cell("(x + 2).numpy().shape")
    bundles = displayed(captured)
    assert len(bundles) == 1 and "(x + 1).numpy().shape" in bundles[0]["text/plain"]


def test_monitor_records_losses_kernels_and_time_split():
    monitor = TrainingMonitor(total_steps=3, update_every_s=0)
    x = Tensor(np.ones((4, 4), dtype=np.float32)).realize()
    for step in monitor.track(range(3)):
        loss = ((x * (step + 1)) ** 2).mean()
        monitor.log(loss)
    assert monitor.losses == [1.0, 4.0, 9.0] and monitor.finished
    assert [s["step"] for s in monitor.steps] == [1, 2, 3]
    for step in monitor.steps:
        assert step["launches"] >= 1
        assert step["other_s"] >= 0
        assert step["compile_s"] + step["run_s"] <= step["wall_s"] + 1e-9
    assert monitor.kernels and all(row["launches"] >= 1 for row in monitor.kernels)
    assert monitor._repr_mimebundle_()[0]["text/plain"] == "training: step 3/3, loss 9"


def test_monitor_shows_captured_kernels_on_tinyjit_replays():
    double = TinyJit(lambda t: (t * 2 + 1).realize())
    monitor = TrainingMonitor(jit=double, update_every_s=0)
    for _ in range(4):
        with monitor.step():
            double(Tensor(np.ones(8, dtype=np.float32)).realize())
    assert [s["replayed"] for s in monitor.steps] == [False, False, True, True]
    assert monitor.kernels[0].get("replayed") and monitor.kernels[0]["run_s"] is None


def test_monitor_names_a_jit_that_is_not_a_tinyjit():
    with pytest.raises(TypeError, match="TrainingMonitor: jit must be a TinyJit.*function"):
        TrainingMonitor(jit=lambda t: t * 2)


def _new_kernels(count: int, seed: int) -> list[Tensor]:
    """`count` kernels no other test compiled (random constants in their ASTs)."""
    rng = np.random.default_rng(seed)
    x = Tensor(rng.random(29, dtype=np.float32)).realize()
    return [x * float(rng.random() + 2) + float(rng.random()) for _ in range(count)]


def test_monitor_shows_compiles_under_way_from_engine_progress():
    monitor = TrainingMonitor(total_steps=1, update_every_s=0)
    seen = []
    monitor.observe(lambda change: seen.append([t["text"] for t in change["new"]]), "work")
    outputs = _new_kernels(3, seed=101)
    with monitor.step():
        Tensor.realize(*outputs)
    assert seen[0] == ["compiling 3 kernels: 0/3"]
    assert [texts[0].split(": ")[1][:3] for texts in seen[:-1]] == ["0/3", "1/3", "2/3", "3/3"]
    assert seen[-1] == [] and monitor.work == []      # the task ended: nothing under way
    monitor.finish()
    seen.clear()
    Tensor.realize(*_new_kernels(2, seed=102))
    assert seen == []                                 # a finished monitor stops listening


def test_a_closed_monitor_is_not_kept_alive_by_its_listener():
    import gc

    from tinylab.engine import progress
    before = len(progress._LISTENERS)
    monitor = TrainingMonitor()
    assert len(progress._LISTENERS) == before + 1
    monitor.close()                                   # ipywidgets lets go of a closed widget
    del monitor
    gc.collect()
    Tensor.realize(*_new_kernels(2, seed=103))        # the next event removes the dead listener
    assert len(progress._LISTENERS) == before


def test_front_end_modules_parse(tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (the browser tests still load the modules)")
    for name, module in (("inspector", inspector_module()), ("monitor", monitor_module())):
        path = tmp_path / f"{name}.mjs"
        path.write_text(module)
        subprocess.run([node, "--check", str(path)], check=True, timeout=60)
