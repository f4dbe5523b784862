"""`python -m bench.speed_table [--write]`: the speed table of docs/speed.md, generated from
bench/results/*.json (one file per CPU and target, the latest `bench.run` of each row there).
One column per file, its CPU, ISA and date in the header; one line per workload with the
issue's bar. The cold-start rows (bench/cold.py, metric "s cold") make a second table. Prints
the tables, or with --write replaces them in docs/speed.md between their markers
(tests/test_speed_table.py checks the page holds exactly these tables).
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
COLD_RESULTS = RESULTS / "cold"   # bench/cold.py's rows, one file per CPU and target
PAGE = Path(__file__).parent.parent / "docs" / "speed.md"
BEGIN = "<!-- speed table: python -m bench.speed_table --write; edit the JSON, not this -->"
END = "<!-- end of speed table -->"
COLD_BEGIN = "<!-- cold-start table: python -m bench.speed_table --write; edit the JSON -->"
COLD_END = "<!-- end of cold-start table -->"
COLD = "s cold"  # the metric of bench/cold.py's rows: their own table (cold_table)
SPEEDS = ("GFLOPS", "GB/s eq.", "tokens/s")  # higher is better; the rest are times
BARS = {  # workload -> the bar it is held to (issue 30), when its row names none
    "matmul 1024x1024 fp32": "≥ 0.9× numpy",
    "matmul 4096x4096 fp32": "≥ 0.9× numpy",
    "conv2 32->32 5x5 @24 forward b512": "≤ 1.0× PyTorch's time",
    "conv2 32->32 5x5 @24 backward b512": "≤ 1.0× PyTorch's time",
    "conv3 32->64 3x3 @10 forward b512": "≤ 1.0× PyTorch's time",
    "conv3 32->64 3x3 @10 backward b512": "≤ 1.0× PyTorch's time",
    "conv4 64->64 3x3 @8 forward b512": "≤ 1.0× PyTorch's time",
    "conv4 64->64 3x3 @8 backward b512": "≤ 1.0× PyTorch's time",
    "beautiful_mnist train step b512": "≤ 1.15× PyTorch's time",
}


def load(folder: Path = RESULTS) -> list[dict]:
    """Every results file, ordered by its column name."""
    files = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))
             if p.name != "latest.json"]
    return sorted(files, key=column)


def column(report: dict) -> str:
    cpu = report.get("cpu", {})
    isa = report.get("isa") or _isa(cpu)
    date, load = report.get("date", ""), report.get("load", "")
    load = f"load {load}" if load.replace(".", "").isdigit() else load
    return f"{cpu.get('model', '?')} · {isa}, {report.get('target', 'native')} target · {date}, {load}"


def _isa(cpu: dict) -> str:
    flags = cpu.get("isa", [])
    return "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else \
        (flags[-1].upper() if flags else "?")


def cell(row: dict) -> str:
    """A row's ratio in words: speed against the reference for speeds, time for times."""
    if row.get("cell"):
        return row["cell"]
    ratio, reference = row.get("ratio"), row.get("reference", "")
    values = row.get("values", {})   # tinylab's figure; a row of variants (vmap(grad)) leads with it
    ours = values.get("tinylab", next(iter(values.values()), None))
    if ratio is None or not ratio:
        return "—" if ours is None else f"{_number(ours)} {row.get('metric', '')}"
    name = {"torch": "PyTorch", "numpy": "numpy"}.get(reference, reference)
    if row.get("metric") in SPEEDS:
        return f"{ratio:.2f}× {name} ({ours:,.0f} {row['metric']})"
    return f"{1 / ratio:.2f}× {name}'s time ({_number(ours)} {row.get('metric', '')})"


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def table(reports: list[dict]) -> str:
    workloads: list[str] = []
    for report in reports:
        for row in report["rows"]:
            if row["workload"] not in workloads and row.get("values") is not None \
                    and row.get("metric") != COLD:
                workloads.append(row["workload"])
    order = list(BARS)
    workloads.sort(key=lambda w: (order.index(w) if w in order else len(order)))
    lines = ["| workload | bar | " + " | ".join(column(r) for r in reports) + " |",
             "|---|---|" + "---|" * len(reports)]
    for workload in workloads:
        rows = [{r["workload"]: r for r in report["rows"]}.get(workload) for report in reports]
        bar = BARS.get(workload) or next((r.get("target", "") for r in rows if r), "")
        cells = [cell(r) if r else "—" for r in rows]
        lines.append(f"| {workload} | {bar} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cold_cell(row: dict) -> str:
    """A cold-start row in words: first call from an empty cache (its parts), in a new process
    on a warm cache, the calls right after the first (where measured), warm; PyTorch's first
    and warm calls, torch.compile's first."""
    v = row["values"]
    if set(v) == {"tinylab cold"}:
        return f"{v['tinylab cold']:.2f} s"
    parts = " + ".join(f"{name} {v[f'cold {key}']:.2f}" for key, name in
                       (("schedule", "schedule"), ("plan", "plan"), ("render", "render"),
                        ("compile_wait", "compile"), ("load", "load")))
    text = (f"**{v['tinylab cold']:.2f} s** ({parts}; {v['cold kernels']:.0f} kernels) · "
            f"warm disk {v['tinylab warm disk']:.2f} s · "
            + (f"next calls {_seconds(v['tinylab next calls'])} · " if "tinylab next calls" in v
               else "") + f"warm {_seconds(v['tinylab warm'])}")
    if "torch first" in v:
        text += f" · PyTorch {_seconds(v['torch first'])} / {_seconds(v['torch warm'])}"
    if "torch.compile first" in v:
        text += f", torch.compile {v['torch.compile first']:.1f} s"
    return text


def _seconds(value: float) -> str:
    return f"{value * 1e3:.1f} ms" if value < 0.1 else f"{value:.2f} s"


def cold_table(reports: list[dict]) -> str:
    """bench/cold.py's rows: one line per workload, one column per CPU that ran them."""
    reports = [r for r in reports if any(row.get("metric") == COLD for row in r["rows"])]
    workloads: list[str] = []
    for report in reports:
        workloads += [row["workload"] for row in report["rows"]
                      if row.get("metric") == COLD and row["workload"] not in workloads]
    lines = ["| first call | goal | " + " | ".join(column(r) for r in reports) + " |",
             "|---|---|" + "---|" * len(reports)]
    for workload in workloads:
        rows = [{r["workload"]: r for r in report["rows"]}.get(workload) for report in reports]
        goal = next((r.get("target", "") for r in rows if r), "")
        lines.append(f"| {workload} | {goal} | "
                     + " | ".join(cold_cell(r) if r else "—" for r in rows) + " |")
    return "\n".join(lines)


def page_table(text: str, begin: str = BEGIN, end: str = END) -> str:
    """The table as the page holds it now (between the markers)."""
    match = re.search(re.escape(begin) + r"\n(.*?)\n" + re.escape(end), text, re.S)
    if match is None:
        raise SystemExit(f"{PAGE} has no table markers ({begin!r})")
    return match.group(1)


def write(page: Path = PAGE) -> None:
    text = page.read_text()
    for begin, end, made in ((BEGIN, END, table(load())),
                             (COLD_BEGIN, COLD_END, cold_table(load(COLD_RESULTS)))):
        old = page_table(text, begin, end)
        text = text.replace(f"{begin}\n{old}\n{end}", f"{begin}\n{made}\n{end}")
    page.write_text(text)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="replace the tables in docs/speed.md")
    if parser.parse_args(argv).write:
        write()
    else:
        print(table(load()), cold_table(load(COLD_RESULTS)), sep="\n\n")


if __name__ == "__main__":
    main()
