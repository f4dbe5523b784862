"""Each kernel against its device's roof: arithmetic intensity (FLOPs per byte), and, when the
model has timings, its measured FLOP/s and "% of peak": the share of the roof at its intensity,
min(peak compute, intensity x bandwidth), it reached; that is the larger of its share of the peak
compute and its share of the bandwidth. `add_roofline(model)` is called by model.build_model;
`roofline_svg` draws the chart for the static HTML (the widget draws its own, clickable).
"""
from __future__ import annotations

from html import escape
from math import log10

from ..engine.peak import device_peak


def percent_of_peak(flops: int, nbytes: int, run_s: float | None, peak: dict) -> float | None:
    """100 x achieved / the roof at this kernel's intensity (None: no time or no roof)."""
    if not run_s or (not peak.get("flops_per_s") and not peak.get("bytes_per_s")):
        return None
    shares = []
    if peak.get("flops_per_s"):
        shares.append(flops / run_s / peak["flops_per_s"])
    if peak.get("bytes_per_s"):
        shares.append(nbytes / run_s / peak["bytes_per_s"])
    return 100.0 * max(shares)


def bound(flops: int, nbytes: int, peak: dict) -> str:
    """"memory" below the ridge point (peak FLOP/s / bandwidth), "compute" above it."""
    if not peak.get("flops_per_s") or not peak.get("bytes_per_s") or not nbytes:
        return ""
    return "compute" if flops / nbytes >= peak["flops_per_s"] / peak["bytes_per_s"] else "memory"


def add_roofline(model: dict) -> None:
    """Intensity on every kernel; with timings, the devices' peaks (model["peaks"]) and each
    timed kernel's % of peak and bound."""
    for kernel in model["kernels"]:
        kernel["intensity"] = kernel["flops"] / kernel["bytes"] if kernel["bytes"] else None
    if not model["timings"]:
        return
    devices = sorted({k["device"] for k in model["kernels"] if k.get("run_s")})
    model["peaks"] = {device: device_peak(device).as_dict() for device in devices}
    for kernel in model["kernels"]:
        peak = model["peaks"].get(kernel["device"])
        if peak is not None:
            kernel["peak_percent"] = percent_of_peak(kernel["flops"], kernel["bytes"],
                                                     kernel.get("run_s"), peak)
            kernel["bound"] = bound(kernel["flops"], kernel["bytes"], peak)


def chart_points(model: dict) -> list[dict]:
    """The kernels a chart can place: timed, with FLOPs and bytes."""
    return [k for k in model["kernels"] if k.get("run_s") and k["flops"] and k["bytes"]]


def roofline_svg(model: dict, device: str, width: int = 520, height: int = 300) -> str:
    """Log-log roofline of one device: the roof (bandwidth slope, then flat compute) and a dot
    per timed kernel at (FLOPs / byte, FLOP/s)."""
    peak = model.get("peaks", {}).get(device, {})
    points = [k for k in chart_points(model) if k["device"] == device]
    if not points or not peak.get("flops_per_s") or not peak.get("bytes_per_s"):
        return ""
    x_values = [k["intensity"] for k in points] + [peak["flops_per_s"] / peak["bytes_per_s"]]
    y_values = [k["flops"] / k["run_s"] for k in points] + [peak["flops_per_s"]]
    low_x, high_x = log10(min(x_values)) - 0.5, log10(max(x_values)) + 0.5
    low_y, high_y = log10(min(y_values)) - 0.5, log10(max(y_values)) + 0.3
    margin = 44

    def at(x: float, y: float) -> tuple[float, float]:
        return (margin + (log10(x) - low_x) / (high_x - low_x) * (width - 2 * margin),
                height - margin - (log10(y) - low_y) / (high_y - low_y) * (height - 2 * margin))

    ridge = peak["flops_per_s"] / peak["bytes_per_s"]
    start = 10 ** low_x
    roof = [at(start, max(peak["bytes_per_s"] * start, 10 ** low_y)), at(ridge, peak["flops_per_s"]),
            at(10 ** high_x, peak["flops_per_s"])]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             'font-family="ui-monospace,Menlo,monospace" font-size="11">',
             f'<rect x="{margin}" y="{margin}" width="{width - 2 * margin}" '
             f'height="{height - 2 * margin}" fill="#f8fafc" stroke="#cbd5e1"/>',
             '<polyline fill="none" stroke="#dc2626" stroke-width="2" points="'
             + " ".join(f"{x:.1f},{y:.1f}" for x, y in roof) + '"/>']
    for kernel in points:
        x, y = at(kernel["intensity"], kernel["flops"] / kernel["run_s"])
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="#2563eb">'
                     f'<title>{escape(kernel["name"])}: '
                     f'{kernel.get("peak_percent") or 0:.1f}% of peak</title></circle>')
    parts.append(f'<text x="{margin}" y="{height - 12}">FLOPs per byte (log) →  roof '
                 f'{peak["bytes_per_s"] / 1e9:.1f} GB/s, {peak["flops_per_s"] / 1e9:.0f} '
                 'GFLOPS</text>')
    parts.append(f'<text x="4" y="{margin - 10}">FLOP/s (log) ↑  {escape(device)}</text></svg>')
    return "".join(parts)
