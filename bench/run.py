"""`make bench`: every benchmark, tinylab beside numpy / PyTorch measured in the same run; prints
the CPU it runs on and the CPU target the planner uses, then a table of medians and ratios, and
writes bench/results/latest.json (the CPU and the target recorded with every row). `--quick`
shrinks the slow ones; `--only demo,conv` runs some suites.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from bench import (backends, cnn_step, conv, demo, elementwise, matmul, per_example, tiny_gpt,
                   trace_overhead)
from bench.common import Row, cpu_description

RESULTS = Path(__file__).parent / "results"


def format_row(row: Row) -> str:
    values = "  ".join(f"{k} {v:,.2f}" for k, v in row.values.items())
    ratio = f"{row.ratio:.2f}× {row.reference}" if row.ratio is not None else "-"
    return f"{row.workload:<44} {row.metric:<10} {values:<48} ratio {ratio:<14} target {row.target}"


def suites(quick: bool, runs: int) -> dict:
    return {
        "matmul": lambda: [matmul.run(1024, runs)] + ([] if quick else [matmul.run(4096, 3)]),
        "elementwise": lambda: [elementwise.run(1 << 22 if quick else 1 << 24, runs)],
        "conv": lambda: conv.run(64 if quick else 512, runs),
        "cnn_step": lambda: cnn_step.run(64 if quick else 512, runs),
        "trace_overhead": lambda: trace_overhead.run(32 if quick else 128, runs),
        "demo": lambda: demo.run(steps=10 if quick else 70, rounds=1 if quick else 2),
        "per_example": lambda: [per_example.run(32 if quick else 64, runs)],
        "tiny_gpt": lambda: tiny_gpt.run(tokens=50 if quick else 100, runs=runs),
        "webgpu": lambda: backends.as_rows(("WEBGPU", "CPU"), runs, quick),   # where wgpu runs
    }


def main(argv=None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, fewer runs")
    parser.add_argument("--only", default="", help="comma-separated suites to run")
    args = parser.parse_args(argv)
    runs = 3 if args.quick else 5
    cpu = cpu_description()
    print(f"CPU: {cpu['model']} ({cpu['cores']} cores usable)\ntarget: {cpu['target']}",
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
    RESULTS.mkdir(exist_ok=True)
    report = {"machine": platform.platform(), "processor": platform.processor(), "cpu": cpu,
              "seconds": round(time.time() - started, 1), "rows": [r.as_dict() for r in rows]}
    (RESULTS / "latest.json").write_text(json.dumps(report, indent=2))
    print(f"wrote {RESULTS / 'latest.json'}")
    return rows


if __name__ == "__main__":
    main()
