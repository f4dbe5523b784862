"""Static HTML of the memory, roofline and measured what-if views, script-free and inline-styled:
sections of html.to_html (view_registry.py; their `options` go unused). What depends only on the
program (lifetimes, sharing, bytes, intensities) is plain; what was measured (times, % of peak,
the roofline's dots) sits between MEASURED markers, which the notebooks' nbval sanitize file
masks, and appears only when the model has timings.
"""
from __future__ import annotations

from html import escape

from .memory_timeline import memory_svg
from ..engine.peak import roofs_text
from ..schedule.items import ItemKind
from .roofline import roofline_svg
from .text import plural, size_text

MEASURED = ("<!-- measured -->", "<!-- /measured -->")
MUTED = "color:#475569;"
TABLE = "border-collapse:collapse;font-size:12px;margin:4px 0;"
CELL = "padding:1px 8px"              # each cell's style (the row carries the rule beneath it)
ROW = "border-bottom:1px solid #e2e8f0"
MAX_MEMORY_REALIZES = 8   # timelines drawn in static HTML (the widget has a realize selector)


def measured(html: str) -> str:
    return f"{MEASURED[0]}{html}{MEASURED[1]}" if html else ""


def _details(title: str, note: str, body: str) -> str:
    return (f'<details style="margin:2px 0"><summary style="cursor:pointer"><b>{title}</b> '
            f'<span style="{MUTED}">{escape(note)}</span></summary>{body}</details>')


def _table(head: list[str], rows: list[list[str]]) -> str:
    header = "".join(f'<th style="{CELL};text-align:left">{escape(h)}</th>' for h in head)
    body = "".join(f'<tr style="{ROW}">' + "".join(f'<td style="{CELL}">{c}</td>' for c in row)
                   + "</tr>" for row in rows)
    return f'<table style="{TABLE}"><tr style="{ROW}">{header}</tr>{body}</table>'


def memory_html(model: dict, options=None) -> str:
    blocks = []
    for realize in model["realizes"]:
        memory = realize.get("memory")
        if not memory or not memory["buffers"]:
            continue
        if len(blocks) == MAX_MEMORY_REALIZES:
            blocks.append(f'<div style="{MUTED}">… more realizes: see the widget</div>')
            break
        buffers = {b["id"]: b for b in memory["buffers"]}
        kernels = {k["id"]: k["name"] for k in model["kernels"]}
        shared = sum(1 for b in memory["buffers"] if b["shares_with"])
        totals = (f"peak {size_text(memory['bytes_without_plan'])} without the planner, "
                  f"{size_text(memory['bytes_with_plan'])} with it; "
                  f"{plural(shared, 'buffer')} share storage; at most "
                  f"{size_text(memory['peak_live'])} live at once")
        rows = [[escape(f"{buffers[i]['label']} ({buffers[i]['role']})"),
                 size_text(buffers[i]["bytes"]),
                 escape(", ".join(kernels[k] for k in buffers[i]["writers"]) or "-"),
                 escape(", ".join(kernels[k] for k in buffers[i]["readers"]) or "-")]
                for i in memory["largest"]]
        blocks.append(f"<div>{escape(realize['forced_code'])}: {escape(totals)}</div>"
                      f'<div style="overflow:auto">{memory_svg(memory, size_text)}</div>'
                      + _table(["largest buffer", "bytes", "written by", "read by"], rows))
    if not blocks:
        return ""
    return _details("memory", "each buffer's lifetime and the planner's sharing", "".join(blocks))


def roofline_html(model: dict, options=None) -> str:
    kernels = [k for k in model["kernels"] if k["kind"] == ItemKind.KERNEL and k["bytes"]]
    if not kernels:
        return ""
    rows = [[escape(k["name"]), f"{k['intensity']:.3f}"] for k in kernels[:200]]
    plain = _table(["kernel", "FLOPs / byte"], rows)   # its FLOPs and bytes head its <details>
    timed = []
    for device, peak in sorted(model.get("peaks", {}).items()):
        chart = roofline_svg(model, device)
        if not chart:
            continue
        percents = [[escape(k["name"]), f"{k['percent_of_peak']:.1f}% ({k['roof_level']})",
                     escape(k.get("bound", ""))] for k in kernels
                    if k["device"] == device and k.get("percent_of_peak") is not None]
        timed.append(f"<div>{escape(device)}: {peak['flops_per_s'] / 1e9:.0f} GFLOPS peak "
                     f"({escape(peak['compute_from'])}); memory roofs "
                     f"{escape(roofs_text(peak.get('levels') or []))} (the live widget's Roofline "
                     "panel says how each was measured)"
                     + "".join(f"<div>{escape(note)}</div>" for note in peak.get("raised", []))
                     + f"</div>{chart}" + _table(["kernel", "% of peak", "bound"], percents))
    return _details("roofline", "FLOPs per byte of each kernel, against the device's peak",
                    plain + measured("".join(timed)))


def what_if_measured_html(model: dict) -> str:
    rows = []
    for realize in model["realizes"]:
        for answer in realize.get("what_if", []):
            run = answer.get("measured")
            if run is None:
                continue
            rows.append([escape(realize["forced_code"]), escape(answer["title"]),
                         f"{run['delta_kernels']:+d}", f"{run['delta_bytes']:+d} B",
                         f"{run['actual_s'] * 1e6:.1f} µs", f"{run['scenario_s'] * 1e6:.1f} µs",
                         f"{run['delta_s'] * 1e6:+.1f} µs" + _ratio_text(run)])
    if not rows:
        return ""
    table = _table(["realize", "scenario", "Δkernels", "Δbytes", "actual (median)",
                    "scenario (median)", "Δtime"], rows)
    return measured(_details("what if, measured", "scenarios that were run", table))


def _ratio_text(run: dict) -> str:
    """' (1.14x, quartiles 1.02-1.30: within the spread...)' from run_scenario's result."""
    if not run.get("ratio"):
        return ""
    low, high = run.get("ratio_quartiles") or (run["ratio"], run["ratio"])
    return (f" ({run['ratio']:.2f}x, quartiles {low:.2f}-{high:.2f} over {run['repeats']} "
            f"rounds: {escape(run.get('verdict', ''))})")
