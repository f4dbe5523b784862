"""The backend registry (engine/backends.py) and its one public call, `tinylab.register_backend`:
a toy backend registered in a test is seen by the device table, `python -m tinylab.device`, the
inspector's source tabs and highlighting, and the peak model, and computes what numpy computes;
clashing rows are refused early."""
import subprocess
import sys

import numpy as np
import pytest

import tinylab
from tinylab import Device, Tensor, register_backend, trace
from tinylab.engine import backends
from tinylab.engine.peak import device_peak
from tinylab.errors import DeviceError
from tinylab.inspection import build_model, to_html
from tinylab.inspection.sources import language_of
from tinylab.renderers.python import PythonRenderer
from tinylab.runtimes.python import PythonRuntime


class ToyRenderer(PythonRenderer):
    device = "TOYPY"


class ToyRuntime(PythonRuntime):
    name = "TOYPY"


@pytest.fixture
def toy():
    saved = dict(backends.BACKENDS)
    row = register_backend("TOYPY", ToyRenderer, ToyRuntime, language="ToyPython",
                           lexer="python", aliases=("TOY",), null_alias="NULL:TOY", shown=True,
                           description="the registry test's toy backend")
    yield row
    backends.BACKENDS.clear()
    backends.BACKENDS.update(saved)


def test_the_public_call_is_exported():
    assert tinylab.register_backend is register_backend and "register_backend" in tinylab.__all__


def test_a_registered_backend_runs_and_matches_numpy(toy):
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    with trace() as recorded:
        got = ((Tensor(x, device="TOY") * 2 + 1).relu().sum(1)).numpy()
    np.testing.assert_allclose(got, np.maximum(x * 2 + 1, 0).sum(1))
    assert recorded.kernels[-1].device == "TOYPY" and recorded.kernels[-1].language == "ToyPython"


def test_the_device_table_derives_from_the_row(toy):
    assert Device.canonicalize("toy") == "TOYPY" and Device["TOY"] is Device["TOYPY"]
    assert Device["NULL:TOY"].render_only and Device.backend_of("NULL:TOY") == "TOYPY"
    assert Device.canonicalize("NULL:TOYPY") == "NULL:TOY"
    known = Device.known()
    assert "TOYPY" in known and "NULL:TOY" in known
    rows = {name: (usable, why) for name, usable, why in Device.status()}
    assert rows["TOYPY"] == (True, "the registry test's toy backend")
    assert rows["NULL:TOY"][0] and "renders ToyPython source only" in rows["NULL:TOY"][1]
    assert "TOYPY" in Device.caps() and Device.caps()["NULL:TOY"].device == "NULL:TOY"


def test_the_device_listing_command_lists_a_registered_backend():
    program = ("from tinylab import register_backend\n"
               "from tinylab.renderers.python import PythonRenderer\n"
               "from tinylab.runtimes.python import PythonRuntime\n"
               "register_backend('TOYPY', PythonRenderer, PythonRuntime, language='ToyPython',"
               " aliases=('TOY',), null_alias='NULL:TOY', description='toy')\n"
               "from tinylab.device import main\nmain()\n")
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True).stdout
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert " yes " in rows["TOYPY"] and "toy" in rows["TOYPY"]
    assert " yes " in rows["NULL:TOY"]
    assert "writes ToyPython; also TOY, NULL:TOY (render-only)" in rows["TOYPY:"]


def test_the_inspector_shows_and_highlights_its_source(toy):
    assert language_of("TOY") == "ToyPython" and language_of("NULL:TOY") == "ToyPython"
    assert backends.lexer_of("ToyPython") == "python" and "TOYPY" in backends.shown_backends()
    assert backends.language_devices()["ToyPython"] == "TOYPY"
    x = np.arange(6, dtype=np.float32)
    with trace() as recorded:
        (Tensor(x, device="CPU") * 3).realize()
    model = build_model(recorded, backends=backends.shown_backends())
    sources = next(iter(model["programs"].values()))["sources"]
    assert list(sources)[0] == "C" and "ToyPython" in sources   # tab order from the rows
    assert "def " in sources["ToyPython"] and "3.0" in sources["ToyPython"]
    with trace() as on_toy:
        (Tensor(x, device="TOY") * 3).realize()
    html = to_html(build_model(on_toy))
    assert "ToyPython source" in html and "<span" in html   # Pygments' Python lexer ran


def test_the_peak_model_reads_its_family(toy):
    assert device_peak("TOYPY").flops_per_s is None
    assert "not known" in device_peak("TOYPY").compute_from
    assert "render-only" in device_peak("NULL:TOY").bandwidth_from
    assert device_peak("CPU").flops_per_s > 0   # the CPU row's family: measured roofs


def test_replacing_a_row_compiles_again(toy):
    x = np.arange(4, dtype=np.float32)
    assert np.array_equal((Tensor(x, device="TOYPY") + 1).numpy(), x + 1)

    class Marked(ToyRenderer):   # a renderer that differs: its kernels must not be reused
        def render(self, program) -> str:
            return "# the second renderer\n" + super().render(program)
    register_backend("TOYPY", Marked, ToyRuntime, language="ToyPython", aliases=("TOY",),
                     null_alias="NULL:TOY")
    assert isinstance(Device["TOYPY"].renderer, Marked)
    with trace() as recorded:
        got = (Tensor(x, device="TOYPY") + 1).numpy()
    assert recorded.kernels[-1].source.startswith("# the second renderer")
    assert np.array_equal(got, x + 1)


@pytest.mark.parametrize("arguments,message", [
    (dict(name="GPU"), "already names CL"), (dict(aliases=("OPENCL",)), "already names CL"),
    (dict(null_alias="NULL:C"), "already names CPU"), (dict(null_alias="TOYNULL"), "NULL:"),
    (dict(name="to y"), "upper case"), (dict(peak="tpu"), "peak family"),
    (dict(peak="cpu"), "CPU target")])
def test_clashing_or_malformed_rows_are_refused(arguments, message):
    before = dict(backends.BACKENDS)
    arguments = dict(dict(name="TOYBAD"), **arguments)
    with pytest.raises(DeviceError, match=message):
        register_backend(arguments.pop("name"), ToyRenderer, ToyRuntime, **arguments)
    assert backends.BACKENDS == before


def test_every_change_to_the_rows_changes_their_key(toy, monkeypatch):
    """rows_key() is a change count, so caches of derived facts (device spellings, caps, the
    device table) see a row added, replaced or removed however it was written."""
    keys = [backends.rows_key()]
    register_backend("TOYPY", ToyRenderer, ToyRuntime, null_alias="NULL:TOY")   # replaced
    keys.append(backends.rows_key())
    monkeypatch.setitem(backends.BACKENDS, "TOYPY", toy)                        # written directly
    keys.append(backends.rows_key())
    backends.BACKENDS.pop("TOYPY")
    keys.append(backends.rows_key())
    assert len(set(keys)) == len(keys)
    assert Device.canonicalize("toy") != "TOYPY"   # the alias left with its row
    backends.BACKENDS.update(TOYPY=toy)
    assert Device.canonicalize("toy") == "TOYPY" and backends.rows_key() not in keys
