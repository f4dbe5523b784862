"""Inline SVG of the graph collapsed by kernel, for static HTML: Graphviz `dot` when installed
(output cleaned so it is the same on every machine: no version comments, no ids), otherwise the
pure-Python layered layout drawn here. `graph_svg(model, engine="auto"|"dot"|"python")`.
"""
from __future__ import annotations

import html
import re
import shutil
import subprocess

from ..schedule.items import ItemKind
from .kernel_graph import CUT_COLOR, PLAIN_COLOR, fill_of, to_dot
from .layout import LINE_HEIGHT, PADDING, Layout, layered_layout

DOT_TIMEOUT_S = 20
MAX_DOT_BOXES = 400   # dot is slow on big graphs: the Python layout takes over beyond this


def dot_available() -> bool:
    return shutil.which("dot") is not None


def graph_svg(model: dict, engine: str = "auto") -> str:
    graph = model["graph"]
    use_dot = engine == "dot" or (engine == "auto" and dot_available()
                                  and len(graph["boxes"]) <= MAX_DOT_BOXES)
    if use_dot:
        svg = dot_svg(to_dot(model))
        if svg is not None:
            return svg
    transforms = {box["id"]: box.get("transform", "") for box in graph["boxes"]}
    return layout_svg(layered_layout(graph["boxes"], graph["links"]), transforms)


def dot_svg(dot_text: str) -> str | None:
    """`dot -Tsvg`, cleaned to be deterministic and safe to inline; None if dot fails."""
    try:
        done = subprocess.run(["dot", "-Tsvg"], input=dot_text.encode(), capture_output=True,
                              timeout=DOT_TIMEOUT_S, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return clean_svg(done.stdout.decode())


def clean_svg(svg: str) -> str:
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)          # version and node-name comments
    svg = re.sub(r'\s(id|xmlns:xlink)="[^"]*"', "", svg)        # ids collide between outputs
    svg = re.sub(r"<title>.*?</title>", "", svg, flags=re.S)
    svg = re.sub(r">\s+<", "><", svg)          # one line: a saved notebook stores each line apart
    svg = re.sub(r'="[^"]*"', _whole_points, svg)   # coordinates in whole points, labels as drawn
    fonts = ' font-family="Helvetica,sans-Serif" font-size="10"'   # each label's, once (inherited)
    svg = svg.replace(' font-family="Helvetica,sans-Serif"', "").replace(' font-size="10"', "")
    return svg.replace("<svg ", f'<svg style="max-width:100%;height:auto"{fonts} ', 1).strip() + "\n"


def _whole_points(attribute: re.Match) -> str:
    return re.sub(r"-?\d+\.\d+", lambda number: f"{float(number.group()):.0f}", attribute.group())


def _text(x: float, y: float, text: str, **style) -> str:
    attributes = " ".join(f'{key.replace("_", "-")}="{value}"' for key, value in style.items())
    return (f'<text x="{x:.1f}" y="{y:.1f}" {attributes}>{html.escape(text)}</text>')


def _edge(points: list, color: str) -> str:
    """A polyline through `points` ending in an arrowhead."""
    (x1, y1), (x2, y2) = points[-2], points[-1]
    length = max(((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5, 1e-6)
    ux, uy = (x2 - x1) / length, (y2 - y1) / length
    left = (x2 - 8 * ux - 4 * uy, y2 - 8 * uy + 4 * ux)
    right = (x2 - 8 * ux + 4 * uy, y2 - 8 * uy - 4 * ux)
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return (f'<polyline points="{line}" fill="none" stroke="{color}"/>'
            f'<polygon points="{x2:.1f},{y2:.1f} {left[0]:.1f},{left[1]:.1f} '
            f'{right[0]:.1f},{right[1]:.1f}" fill="{color}"/>')


def layout_svg(layout: Layout, transforms: dict | None = None) -> str:
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{layout.width:.0f}" '
             f'height="{layout.height:.0f}" viewBox="0 0 {layout.width:.0f} {layout.height:.0f}"'
             ' style="max-width:100%;height:auto" font-family="monospace" font-size="11">']
    for points, label, link in layout.edges:
        color = CUT_COLOR if link.get("cut") and label != "requested" else PLAIN_COLOR
        parts.append(_edge(points, color))
        if label:
            (x1, y1), (x2, y2) = points[-2], points[-1]   # beside the arrow it explains
            parts.append(_text((x1 + x2) / 2 + 4, (y1 + y2) / 2 + 4, label, fill=color,
                               font_size="10", stroke="#ffffff", stroke_width="3",
                               paint_order="stroke"))
    for box in layout.boxes.values():
        radius = box.height / 2 if box.kind == "input" else 5
        parts.append(f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" '
                     f'height="{box.height:.1f}" rx="{radius:.1f}" '
                     f'fill="{fill_of(box.kind, (transforms or {}).get(box.id, ""))}" '
                     'stroke="#334155"/>')
        for i, line in enumerate(box.lines):
            weight = "bold" if i == 0 and box.kind in (ItemKind.KERNEL, ItemKind.COPY) else "normal"
            x = box.x + box.width / 2
            y = box.y + PADDING + LINE_HEIGHT * i + 8
            parts.append(_text(x, y, line, text_anchor="middle", font_weight=weight))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"

