"""The speed tables of docs/speed.md (speed, and cold start: bench/cold.py's rows) are the ones
bench/speed_table.py makes from bench/results/*.json, cell by cell; bench.run merges a new run
into its CPU's file row by row."""
import json

from bench import run, speed_table
from bench.common import Row


def test_the_speed_page_holds_the_generated_tables():
    page = speed_table.PAGE.read_text()
    assert speed_table.page_table(page) == speed_table.table(speed_table.load()), \
        "run python -m bench.speed_table --write"
    cold = speed_table.page_table(page, speed_table.COLD_BEGIN, speed_table.COLD_END)
    assert cold == speed_table.cold_table(speed_table.load(speed_table.COLD_RESULTS)), \
        "run python -m bench.speed_table --write"


def test_cold_rows_make_their_own_table():
    values = {"tinylab cold": 1.5, "tinylab warm disk": 0.4, "tinylab warm": 0.05,
              "cold schedule": 0.1, "cold plan": 0.5, "cold render": 0.05,
              "cold compile_wait": 0.8, "cold load": 0.01, "cold kernels": 40.0,
              "torch first": 0.2, "torch warm": 0.04}
    row = Row("softmax 256x1000", "s cold", values, "first call ≤ 3× warm + 1 s").as_dict()
    report = {"cpu": {"model": "Test CPU", "isa": ["avx2"]}, "rows": [row]}
    assert speed_table.cold_cell(row) == (
        "**1.50 s** (schedule 0.10 + plan 0.50 + render 0.05 + compile 0.80 + load 0.01; "
        "40 kernels) · warm disk 0.40 s · warm 50.0 ms · PyTorch 0.20 s / 40.0 ms")
    values["tinylab next calls"] = 0.09   # the calls after the first (its quick build)
    assert "· warm disk 0.40 s · next calls 90.0 ms · warm 50.0 ms ·" in speed_table.cold_cell(
        Row("softmax 256x1000", "s cold", values, "first call ≤ 3× warm + 1 s").as_dict())
    assert "softmax 256x1000" not in speed_table.table([report])
    assert "| softmax 256x1000 | first call ≤ 3× warm + 1 s | **1.50 s**" in \
        speed_table.cold_table([report])


def test_cells_speak_of_speed_or_time():
    speed = Row("matmul 1024x1024 fp32", "GFLOPS", {"tinylab": 90.0, "numpy": 100.0},
                ratio=0.9, reference="numpy").as_dict()
    time = Row("conv2 32->32 5x5 @24 forward b512", "ms", {"tinylab": 50.0, "torch": 40.0},
               ratio=0.8, reference="torch").as_dict()
    assert speed_table.cell(speed) == "0.90× numpy (90 GFLOPS)"
    assert speed_table.cell(time) == "1.25× PyTorch's time (50 ms)"


def test_cold_rows_go_to_their_own_file(tmp_path, monkeypatch):
    monkeypatch.setattr(run, "RESULTS", tmp_path)
    cpu = {"model": "Test CPU, family 1", "isa": ["avx2"], "target_fields": {"name": "avx2"}}
    run.save(cpu, [Row("a", "ms", {"tinylab": 1.0}), Row("c", "s cold", {"tinylab cold": 2.0})],
             1.0)
    speeds, colds = speed_table.load(tmp_path), speed_table.load(tmp_path / "cold")
    assert [r["workload"] for r in speeds[0]["rows"]] == ["a"]
    assert [r["workload"] for r in colds[0]["rows"]] == ["c"]


def test_a_run_replaces_its_rows_and_keeps_the_others(tmp_path, monkeypatch):
    monkeypatch.setattr(run, "RESULTS", tmp_path)
    cpu = {"model": "Test CPU, family 1", "isa": ["avx2"], "target_fields": {"name": "avx2"}}
    run.save(cpu, [Row("a", "ms", {"tinylab": 1.0}), Row("b", "ms", {"tinylab": 2.0})], 1.0)
    path = run.save(cpu, [Row("b", "ms", {"tinylab": 3.0})], 1.0)
    assert path.name == "test-cpu-family-1--avx2.json"
    rows = {r["workload"]: r["values"]["tinylab"] for r in json.loads(path.read_text())["rows"]}
    assert rows == {"a": 1.0, "b": 3.0}
    (report,) = speed_table.load(tmp_path)
    assert "Test CPU, family 1 · AVX2, avx2 target" in speed_table.column(report)
