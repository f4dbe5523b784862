"""`make bench`: every benchmark, tinylab beside numpy / PyTorch measured in the same run; prints
the CPU it runs on and the CPU target the planner uses, then a table of medians and ratios, and
merges them into bench/results/<cpu>--<target>.json (one file per CPU and target, the latest run
of each row; `python -m bench.speed_table --write` makes docs/speed.md's table from those). `--quick`
shrinks the slow ones; `--only demo,conv` runs some suites.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
from pathlib import Path

from bench import (backends, cnn_step, cold, conv, demo, elementwise, matmul, per_example,
                   small_work, tiny_gpt, torch_bridge, trace_overhead)
from bench.common import Row, cpu_description

RESULTS = Path(__file__).parent / "results"


def format_row(row: Row) -> str:
    values = "  ".join(f"{k} {v:,.2f}" for k, v in row.values.items())
    ratio = f"{row.ratio:.2f}× {row.reference}" if row.ratio is not None else "-"
    return f"{row.workload:<44} {row.metric:<10} {values:<48} ratio {ratio:<14} target {row.target}"


def suites(quick: bool, runs: int) -> dict:
    return {
        # a 1024 call takes ~12 ms, and on a shared machine one process's calls swing by 30%
        # for seconds at a time: three times the rounds, interleaved with the references
        "matmul": lambda: [matmul.run(1024, 3 * runs)] + ([] if quick else [matmul.run(4096, 3)]),
        "elementwise": lambda: [elementwise.run(1 << 22 if quick else 1 << 24, runs)],
        "conv": lambda: conv.run(64 if quick else 512, runs),
        "cnn_step": lambda: cnn_step.run(64 if quick else 512, runs),
        "small": lambda: small_work.run(100 if quick else 200),
        "trace_overhead": lambda: trace_overhead.run(32 if quick else 128, runs),
        "demo": lambda: demo.run(steps=10 if quick else 70, rounds=1 if quick else 2),
        "per_example": lambda: [per_example.run(32 if quick else 64, runs)],
        "tiny_gpt": lambda: tiny_gpt.run(tokens=50 if quick else 100, runs=runs),
        "webgpu": lambda: backends.as_rows(("WEBGPU", "CPU"), runs, quick),   # where wgpu runs
        # PyTorch models through torch.compile(backend="tinylab"), eager and Inductor beside
        "torch_bridge": lambda: torch_bridge.run(2 * runs - 1, quick),   # 9 interleaved by default
        "cold": lambda: cold.run(quick),   # first calls, each in a new process (its own table)
    }


def main(argv=None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, fewer runs")
    parser.add_argument("--only", default="", help="comma-separated suites to run")
    args = parser.parse_args(argv)
    runs = 3 if args.quick else 5
    cpu = cpu_description()
    print(f"CPU: {cpu['model']} ({cpu['cores']} cores usable)\ntarget: {cpu['target']}\n"
          f"references: {cpu['references']}",
          flush=True)
    started = time.time()
    rows: list[Row] = []
    chosen = suites(args.quick, runs)
    if args.only:
        chosen = {name: chosen[name] for name in args.only.split(",")}
    for suite in chosen.values():
        for row in suite():
            row.cpu = cpu
            print(format_row(row), flush=True)
            rows.append(row)
    path = save(cpu, rows, round(time.time() - started, 1))
    print(f"wrote {path} (python -m bench.speed_table --write puts it in docs/speed.md)")
    return rows


def results_path(cpu: dict, target: str, folder: Path | None = None) -> Path:
    """bench/results/<cpu model>--<target>.json: one file per CPU and CPU target (the cold-start
    suite's rows in bench/results/cold/, so its runs date no speed column)."""
    slug = re.sub(r"[^a-z0-9]+", "-", cpu["model"].lower()).strip("-")
    return (folder or RESULTS) / f"{slug}--{target}.json"


def save(cpu: dict, rows: list[Row], seconds: float) -> Path:
    """Merge `rows` into this CPU's results files: a workload run again replaces its row, the
    others keep theirs (each the latest run of that row). Rows of the cold-start suite (metric
    cold.METRIC) go to their own file; the path of the last file written."""
    split = {RESULTS: [r for r in rows if r.metric != cold.METRIC],
             RESULTS / "cold": [r for r in rows if r.metric == cold.METRIC]}
    return [_save(cpu, found, seconds, folder) for folder, found in split.items() if found][-1]


def _save(cpu: dict, rows: list[Row], seconds: float, folder: Path) -> Path:
    target = cpu.get("target_fields", {}).get("name", "native")
    path = results_path(cpu, target, folder)
    old = json.loads(path.read_text()).get("rows", []) if path.exists() else []
    new = {r.workload: r.as_dict() for r in rows}
    kept = [r for r in old if r["workload"] not in new]
    for row in new.values():
        row.pop("cpu", None)  # once per file
    described = {k: v for k, v in cpu.items() if k != "target_fields"}
    report = {"cpu": described, "target": target, "date": time.strftime("%Y-%m-%d"),
              "load": f"{os.getloadavg()[0]:.1f}",  # the 1-minute load average at the end
              "machine": platform.platform(), "seconds": seconds,
              "source": "python -m bench.run", "rows": kept + list(new.values())}
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return path


if __name__ == "__main__":
    main()
