"""Each kernel against its device's roofs: arithmetic intensity (FLOPs per byte), and, when the
model has timings, its measured FLOP/s and "% of peak": the share of the roof at its intensity,
min(peak compute, intensity x bandwidth of the memory level its buffers fit in: L1, L2, L3 or
DRAM), it reached, i.e. the larger of its share of the compute roof and of that bandwidth. A
kernel above a roof raises that roof (engine/peak.raise_roof, noted in peaks[device]["raised"]
with the kernel's working set and the level it fits): never > 100%. `add_roofline(model)` is
called by model.build_model; `roofline_svg` draws the static chart with every roof.
"""
from __future__ import annotations

from html import escape
from math import log10

from ..engine.peak import device_peak, raise_roof


def roof_level(nbytes: int, peak: dict) -> str:
    """The smallest memory level whose roof applies to a kernel moving `nbytes` (its buffers,
    its working set): the first of the peak's levels it fits, else the last (DRAM)."""
    levels = peak.get("levels") or [{"level": "DRAM", "fits_bytes": None}]
    return next((row["level"] for row in levels
                 if row["fits_bytes"] is not None and nbytes <= row["fits_bytes"]),
                levels[-1]["level"])


def level_bandwidth(nbytes: int, peak: dict) -> float | None:
    level = roof_level(nbytes, peak)
    return next((row["bytes_per_s"] for row in peak.get("levels") or ()
                 if row["level"] == level), peak.get("bytes_per_s"))


def fits_words(nbytes: int, peak: dict) -> str:
    """'its 4 MiB working set fits L3 (up to 32 MiB), not L2 (up to 1 MiB)': why a kernel is
    compared with (or raises) the roof of its level."""
    from ..engine.peak import size_words
    levels = peak.get("levels") or []
    level = roof_level(nbytes, peak)
    index = next((i for i, row in enumerate(levels) if row["level"] == level), 0)
    row = levels[index] if levels else {"level": level, "fits_bytes": None}
    text = f"its {size_words(nbytes)} working set fits {level}"
    if row["fits_bytes"]:
        text += f" (up to {size_words(row['fits_bytes'])})"
    if index > 0 and levels[index - 1]["fits_bytes"]:
        below = levels[index - 1]
        text += f", not {below['level']} (up to {size_words(below['fits_bytes'])})"
    return text


def shares(flops: int, nbytes: int, run_s: float | None, peak: dict) -> tuple:
    """(share of the compute roof, share of its level's bandwidth roof); None where unknown."""
    if not run_s:
        return None, None
    bandwidth = level_bandwidth(nbytes, peak)
    compute = flops / run_s / peak["flops_per_s"] if peak.get("flops_per_s") else None
    memory = nbytes / run_s / bandwidth if bandwidth else None
    return compute, memory


def percent_of_peak(flops: int, nbytes: int, run_s: float | None, peak: dict) -> float | None:
    """100 x achieved / the roof at this kernel's intensity, at most 100 (None: no time or no
    roof); a kernel above its roof raises it first (add_roofline)."""
    found = [share for share in shares(flops, nbytes, run_s, peak) if share is not None]
    return min(100.0, 100.0 * max(found)) if found else None


def bound(flops: int, nbytes: int, peak: dict) -> str:
    """"memory" below the ridge point (peak FLOP/s / bandwidth), "compute" above it."""
    bandwidth = level_bandwidth(nbytes, peak)
    if not peak.get("flops_per_s") or not bandwidth or not nbytes:
        return ""
    return "compute" if flops / nbytes >= peak["flops_per_s"] / bandwidth else "memory"


def add_roofline(model: dict) -> None:
    """Intensity on every kernel; with timings, the devices' roofs (model["peaks"], raised by any
    kernel measured above them) and each timed kernel's % of peak, roof level and bound."""
    for kernel in model["kernels"]:
        kernel["intensity"] = kernel["flops"] / kernel["bytes"] if kernel["bytes"] else None
    if not model["timings"]:
        return
    devices = sorted({k["device"] for k in model["kernels"] if k.get("run_s")})
    for device in devices:
        _raise_roofs(device, [k for k in model["kernels"] if k["device"] == device])
    model["peaks"] = {device: device_peak(device).as_dict() for device in devices}
    for kernel in model["kernels"]:
        peak = model["peaks"].get(kernel["device"])
        if peak is not None:
            kernel["percent_of_peak"] = percent_of_peak(kernel["flops"], kernel["bytes"],
                                                        kernel.get("run_s"), peak)
            kernel["roof_level"] = roof_level(kernel["bytes"], peak)
            kernel["bound"] = bound(kernel["flops"], kernel["bytes"], peak)


def _raise_roofs(device: str, kernels: list) -> None:
    """A kernel measured above a roof lifts it to what the kernel reached; the note names the
    kernel and why its working set belongs to that level."""
    peak = device_peak(device).as_dict()
    for kernel in kernels:
        compute, memory = shares(kernel["flops"], kernel["bytes"], kernel.get("run_s"), peak)
        who = f"kernel {kernel['name']} ({kernel['id']}) was measured above it"
        if compute is not None and compute > 1:
            raise_roof(device, "compute", kernel["flops"] / kernel["run_s"], who)
        if memory is not None and memory > 1:
            raise_roof(device, roof_level(kernel["bytes"], peak),
                       kernel["bytes"] / kernel["run_s"],
                       f"{who}; {fits_words(kernel['bytes'], peak)}")
        peak = device_peak(device).as_dict()


def chart_points(model: dict) -> list[dict]:
    """The kernels a chart can place: timed, with FLOPs and bytes."""
    return [k for k in model["kernels"] if k.get("run_s") and k["flops"] and k["bytes"]]


LEVEL_COLORS = {"L1": "#f59e0b", "L2": "#f97316", "L3": "#ea580c", "DRAM": "#dc2626"}


def _axes(points: list, peak: dict, levels: list) -> tuple:
    """log10 bounds (low_x, high_x, low_y, high_y) that hold every dot and every ridge point."""
    ridges = [peak["flops_per_s"] / row["bytes_per_s"] for row in levels]
    x_values = [k["intensity"] for k in points] + ridges
    y_values = [k["flops"] / k["run_s"] for k in points] + [peak["flops_per_s"]]
    return (log10(min(x_values)) - 0.5, log10(max(x_values)) + 0.5,
            log10(min(y_values)) - 0.5, log10(max(y_values)) + 0.3)


def roofline_svg(model: dict, device: str, width: int = 520, height: int = 300) -> str:
    """Log-log roofline of one device: a roof per memory level (its bandwidth slope up to the
    flat compute roof, labelled L1 ... DRAM) and a dot per timed kernel at (FLOPs / byte,
    FLOP/s), its title naming the level it is compared with."""
    peak = model.get("peaks", {}).get(device, {})
    points = [k for k in chart_points(model) if k["device"] == device]
    levels = peak.get("levels") or []
    if not points or not peak.get("flops_per_s") or not levels:
        return ""
    low_x, high_x, low_y, high_y = _axes(points, peak, levels)
    margin = 44

    def at(x: float, y: float) -> tuple[float, float]:
        return (margin + (log10(x) - low_x) / (high_x - low_x) * (width - 2 * margin),
                height - margin - (log10(y) - low_y) / (high_y - low_y) * (height - 2 * margin))

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             'font-family="ui-monospace,Menlo,monospace" font-size="11">',
             f'<rect x="{margin}" y="{margin}" width="{width - 2 * margin}" '
             f'height="{height - 2 * margin}" fill="#f8fafc" stroke="#cbd5e1"/>']
    start = 10 ** low_x
    for row in levels:
        ridge = peak["flops_per_s"] / row["bytes_per_s"]
        corner = at(start, max(row["bytes_per_s"] * start, 10 ** low_y))
        roof = [corner, at(ridge, peak["flops_per_s"]), at(10 ** high_x, peak["flops_per_s"])]
        color = LEVEL_COLORS.get(row["level"], "#dc2626")
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="'
                     + " ".join(f"{x:.1f},{y:.1f}" for x, y in roof) + '"/>'
                     f'<text x="{corner[0] + 4:.1f}" y="{corner[1] - 4:.1f}" fill="{color}">'
                     f'{escape(row["level"])}</text>')
    for kernel in points:
        x, y = at(kernel["intensity"], kernel["flops"] / kernel["run_s"])
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="#2563eb">'
                     f'<title>{escape(kernel["name"])}: '
                     f'{kernel.get("percent_of_peak") or 0:.1f}% of peak '
                     f'({escape(kernel.get("roof_level", ""))} roof)</title></circle>')
    roofs = ", ".join(f"{row['level']} {row['bytes_per_s'] / 1e9:.0f}" for row in levels)
    parts.append(f'<text x="{margin}" y="{height - 12}">FLOPs per byte (log) →  roofs '
                 f'{roofs} GB/s, {peak["flops_per_s"] / 1e9:.0f} GFLOPS</text>')
    parts.append(f'<text x="4" y="{margin - 10}">FLOP/s (log) ↑  {escape(device)}</text></svg>')
    return "".join(parts)
