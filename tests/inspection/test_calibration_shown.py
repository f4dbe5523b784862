"""The inspector shows what calibration measured (issue 30 item 3): a traced CPU matmul's text,
HTML and JSON model carry the calibrated micro-kernel and how it was obtained, read from the
calibration record in the kernel cache (never timed for display: timing raises here). With
calibration off (TINYLAB_CALIBRATE=0) no such line appears."""
import json

import numpy as np

import tinylab
from tinylab import Context, Device, Tensor, inspection
from tinylab.engine import calibrate
from tinylab.target.cpu_target import preset

RNG = np.random.default_rng(11)
SUMMARY = "micro-kernel 6x16 block 256 at 51.0 GFLOPS on 1 core (model 40.0), 5 candidates in 2.0 s"


def _write_record(cache_dir, target_name):
    """The record a calibration of this CPU stored (as engine/calibrate.py writes it)."""
    with Context(CPU_TARGET=target_name, TINYLAB_CALIBRATE=0):
        target = Device["CPU"].target
        compiler = Device["CPU"].runtime.version()
    folder = cache_dir / "calibration"
    folder.mkdir(parents=True)
    record = {"micro_kernel": [6, 2, 256], "summary": SUMMARY, "timed": {"6x16 block 256": 51.0}}
    (folder / f"{calibrate.calibration_key(target, compiler)}.json").write_text(json.dumps(record))


def _traced_matmul():
    a, b = RNG.standard_normal((48, 64), np.float32), RNG.standard_normal((64, 32), np.float32)
    with tinylab.trace() as recorded:
        out = (Tensor(a) @ Tensor(b)).numpy()
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)
    return recorded


def test_a_calibrated_cpu_kernel_shows_its_measured_micro_kernel(tmp_path, monkeypatch):
    def no_timing(*args, **kwargs):
        raise AssertionError("the calibration was timed again, not read from its record")
    monkeypatch.setattr(calibrate, "_calibrate", no_timing)
    calibrate.forget()
    _write_record(tmp_path, "avx2")
    with Context(CPU_TARGET="avx2", TINYLAB_CALIBRATE=1, TINYLAB_CACHE=str(tmp_path), DEV="CPU"):
        assert Device["CPU"].target.micro_kernel == (6, 2, 256)
        recorded = _traced_matmul()
    calibrate.forget()
    text = inspection.to_text(recorded)
    expected = ("calibration: micro-kernel 6x16 block 256 for avx2; measured on first use on this "
                f"CPU ({SUMMARY}) and kept in the kernel cache")
    assert expected in text, text
    assert "calibration: micro-kernel 6x16 block 256" in inspection.to_html(recorded)
    kernels = json.loads(inspection.to_json(recorded))["kernels"]
    assert [k["calibration"] for k in kernels if "calibration" in k]


def test_without_calibration_no_line_is_shown():
    with Context(TINYLAB_CALIBRATE=0, DEV="CPU"):
        recorded = _traced_matmul()
    assert "calibration:" not in inspection.to_text(recorded)
    assert preset("avx2").measured == ""
