"""The speed table of docs/speed.md is the one bench/speed_table.py makes from
bench/results/*.json, cell by cell; bench.run merges a new run into its CPU's file row by row."""
import json

from bench import run, speed_table
from bench.common import Row


def test_the_speed_page_holds_the_generated_table():
    page = speed_table.PAGE.read_text()
    assert speed_table.page_table(page) == speed_table.table(speed_table.load()), \
        "run python -m bench.speed_table --write"


def test_cells_speak_of_speed_or_time():
    speed = Row("matmul 1024x1024 fp32", "GFLOPS", {"tinylab": 90.0, "numpy": 100.0},
                ratio=0.9, reference="numpy").as_dict()
    time = Row("conv2 32->32 5x5 @24 forward b512", "ms", {"tinylab": 50.0, "torch": 40.0},
               ratio=0.8, reference="torch").as_dict()
    assert speed_table.cell(speed) == "0.90× numpy (90 GFLOPS)"
    assert speed_table.cell(time) == "1.25× PyTorch's time (50 ms)"


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
