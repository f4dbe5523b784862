"""`make bench`: every benchmark, tinylab beside numpy / PyTorch measured in the same run; prints a
table of medians and ratios and writes bench/results/latest.json. `--quick` shrinks the slow ones.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from bench import backends, cnn_step, conv, elementwise, matmul
from bench.common import Row

RESULTS = Path(__file__).parent / "results"


def _format(row: Row) -> str:
    values = "  ".join(f"{k} {v:,.2f}" for k, v in row.values.items())
    ratio = f"{row.ratio:.2f}× {row.reference}" if row.ratio is not None else "-"
    return f"{row.workload:<44} {row.metric:<10} {values:<48} ratio {ratio:<14} target {row.target}"


def main(argv=None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, fewer runs")
    args = parser.parse_args(argv)
    runs = 3 if args.quick else 5
    started = time.time()
    rows: list[Row] = []
    suites = [
        lambda: [matmul.run(1024, runs)] + ([] if args.quick else [matmul.run(4096, 3)]),
        lambda: [elementwise.run(1 << 22 if args.quick else 1 << 24, runs)],
        lambda: conv.run(64 if args.quick else 512, runs),
        lambda: cnn_step.run(64 if args.quick else 512, runs),
        lambda: backends.as_rows(("WEBGPU", "CPU"), runs, args.quick),   # where wgpu runs
    ]
    for suite in suites:
        for row in suite():
            print(_format(row), flush=True)
            rows.append(row)
    RESULTS.mkdir(exist_ok=True)
    report = {"machine": platform.platform(), "processor": platform.processor(),
              "seconds": round(time.time() - started, 1), "rows": [r.as_dict() for r in rows]}
    (RESULTS / "latest.json").write_text(json.dumps(report, indent=2))
    print(f"wrote {RESULTS / 'latest.json'}")
    return rows


if __name__ == "__main__":
    main()
