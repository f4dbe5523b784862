"""A small layered layout for graphs of boxes, in pure Python, used for static SVG when Graphviz's
`dot` is not installed: layers by longest path from the inputs, order within a layer by the
barycenter of neighbours (a few sweeps), boxes packed left to right and centred. Straight edges.
`layered_layout(boxes, links) -> Layout`; svg.py draws it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

CHAR_WIDTH, LINE_HEIGHT = 6.6, 14.0    # 11px monospace text
PADDING, GAP_X, GAP_Y = 8.0, 24.0, 46.0
DUMMY_WIDTH = 10.0   # the room a long edge takes in each row it crosses
SWEEPS = 4


@dataclass
class Placed:
    id: str
    x: float        # left
    y: float        # top
    width: float
    height: float
    lines: list
    kind: str


@dataclass
class Layout:
    boxes: dict = field(default_factory=dict)   # id -> Placed
    edges: list = field(default_factory=list)   # (points, label, link) per drawn link
    width: float = 0.0
    height: float = 0.0


def box_lines(box: dict) -> list[str]:
    return [box["label"]] + ([box["detail"]] if box.get("detail") else [])


def _size(lines: list[str]) -> tuple[float, float]:
    widest = max(len(line) for line in lines)
    return widest * CHAR_WIDTH + 2 * PADDING, len(lines) * LINE_HEIGHT + 2 * PADDING - 4


def _layers(ids: list[str], links: list[dict]) -> dict[str, int]:
    """Longest path from sources, in the boxes' given (topological) order; back edges ignored."""
    position = {box_id: i for i, box_id in enumerate(ids)}
    preds: dict[str, list] = {box_id: [] for box_id in ids}
    for link in links:
        source, target = link["source"], link["target"]
        if source in position and target in position and position[source] != position[target]:
            preds[target].append(source)
    layer: dict[str, int] = {}
    for box_id in _topological(ids, preds):
        layer[box_id] = 1 + max((layer[p] for p in preds[box_id] if p in layer), default=-1)
    return layer


def _topological(ids: list[str], preds: dict) -> list[str]:
    order, state = [], {}
    for start in ids:
        stack = [(start, False)]
        while stack:
            node, done = stack.pop()
            if done:
                state[node] = 2
                order.append(node)
                continue
            if state.get(node):
                continue
            state[node] = 1
            stack.append((node, True))
            stack.extend((p, False) for p in reversed(preds[node]) if not state.get(p))
    return order


def _order(rows: list[list[str]], links: list[dict]) -> list[list[str]]:
    """Reorder each layer by the mean position of its neighbours, down then up."""
    neighbours: dict[str, list] = {}
    for link in links:
        neighbours.setdefault(link["target"], []).append(("up", link["source"]))
        neighbours.setdefault(link["source"], []).append(("down", link["target"]))
    for sweep in range(SWEEPS):
        direction = "up" if sweep % 2 == 0 else "down"
        sequence = rows[1:] if direction == "up" else list(reversed(rows[:-1]))
        rank = {box_id: i for row in rows for i, box_id in enumerate(row)}
        for row in sequence:
            def weight(box_id, rank=rank, direction=direction):
                near = [rank[other] for side, other in neighbours.get(box_id, ())
                        if side == direction and other in rank]
                return sum(near) / len(near) if near else rank[box_id]
            row.sort(key=weight)
            rank.update({box_id: i for i, box_id in enumerate(row)})
    return rows


def _with_dummies(layer: dict, links: list[dict]) -> tuple[list[list], list[dict]]:
    """Split each link spanning several layers into a chain through dummy points, one per layer
    it crosses, so it gets its own place in every row. Returns (chains, one-layer links)."""
    chains, short = [], []
    for index, link in enumerate(links):
        source, target = link["source"], link["target"]
        if source not in layer or target not in layer or layer[target] <= layer[source]:
            continue
        path = [source] + [f"~{index}.{depth}" for depth in range(layer[source] + 1, layer[target])]
        for depth, point in enumerate(path[1:], start=layer[source] + 1):
            layer[point] = depth
        path.append(target)
        chains.append((path, link))
        short += [{"source": a, "target": b} for a, b in zip(path, path[1:])]
    return chains, short


def layered_layout(boxes: list[dict], links: list[dict]) -> Layout:
    ids = [box["id"] for box in boxes]
    layer = _layers(ids, links)
    chains, short = _with_dummies(layer, links)
    rows: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for point in list(ids) + [p for path, _ in chains for p in path[1:-1]]:
        rows[layer[point]].append(point)
    rows = _order(rows, short)
    by_id = {box["id"]: box for box in boxes}
    sizes = {point: _size(box_lines(by_id[point])) if point in by_id else (DUMMY_WIDTH, 0.0)
             for row in rows for point in row}
    layout = Layout()
    row_widths = [sum(sizes[b][0] for b in row) + GAP_X * (len(row) - 1) for row in rows]
    layout.width = max(row_widths, default=0) + 2 * GAP_X
    top, centres = GAP_X / 2, {}
    for row, row_width in zip(rows, row_widths):
        height = max(sizes[b][1] for b in row)
        x = (layout.width - row_width) / 2
        for point in row:
            width, box_height = sizes[point]
            centres[point] = (x + width / 2, top + height / 2)
            if point in by_id:
                layout.boxes[point] = Placed(point, x, top + (height - box_height) / 2, width,
                                             box_height, box_lines(by_id[point]),
                                             by_id[point]["kind"])
            x += width + GAP_X
        top += height + GAP_Y
    layout.height = top - GAP_Y + GAP_X / 2
    layout.edges = _routes(layout, chains, centres)
    return layout


def _routes(layout: Layout, chains: list, centres: dict) -> list:
    """(points, label, link) per link: leaving the bottom of its source and entering the top of
    its target at spread-out points, through its dummy points in between."""
    outgoing: dict[str, list] = {}
    incoming: dict[str, list] = {}
    for path, _ in chains:
        outgoing.setdefault(path[0], []).append(centres[path[1]][0])
        incoming.setdefault(path[-1], []).append(centres[path[-2]][0])

    def attach(box: Placed, others: list, x_towards: float, bottom: bool) -> tuple:
        rank = sorted(others).index(x_towards)
        x = box.x + box.width * (rank + 1) / (len(others) + 1)
        return (x, box.y + box.height if bottom else box.y)

    routes = []
    for path, link in chains:
        source, target = layout.boxes[path[0]], layout.boxes[path[-1]]
        start = attach(source, outgoing[path[0]], centres[path[1]][0], True)
        end = attach(target, incoming[path[-1]], centres[path[-2]][0], False)
        points = [start] + [centres[p] for p in path[1:-1]] + [end]
        routes.append((points, link.get("reason", ""), link))
    return routes
