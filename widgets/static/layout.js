// The graph the graph panel draws, and where each box goes. `displayGraph(data, expanded)` turns
// the model's collapsed graph (one box per kernel) into items + edges, replacing each expanded
// kernel by a cluster of its ops; `layoutGraph(display)` places them with the vendored dagre
// (small graphs) or a linear-time layered layout (large ones). Used by graph_panel.js.

const DAGRE_LIMIT = 300;     // items laid out by dagre; beyond this the fast layered layout
const EXPAND_LIMIT = 1500;   // op nodes shown expanded at once
const CHAR_WIDTH = 6.6;
const ROW_LIMIT = 40;        // fast layout: boxes per row before a layer wraps

function indexById(list) {
  const map = new Map();
  for (const entry of list) map.set(entry.id, entry);
  return map;
}

function boxRef(box) {
  if (box.kind === "kernel" || box.kind === "copy") return { kind: "kernel", id: box.id };
  if (box.kind === "input") return { kind: "node", id: box.id };
  return { kind: "realize", id: box.id };
}

function expandedItems(kernel, nodes) {
  const cluster = `cluster:${kernel.id}`;
  return kernel.fused.map((nodeId) => {
    const node = nodes.get(nodeId);
    return {
      id: `${kernel.id}:${nodeId}`, kind: node.role === "view" ? "view" : "op",
      label: node.arg ? `${node.op} ${node.arg}` : node.op,
      detail: `${node.dtype}[${node.shape.join(", ")}]`, parent: cluster,
      ref: { kind: "node", id: nodeId }, kernel: kernel.id,
    };
  });
}

function displayGraph(data, expanded) {
  const kernels = indexById(data.kernels);
  const nodes = indexById(data.nodes);
  const decisions = indexById(data.decisions);
  const items = [], edges = [], clusters = [], outputItem = new Map();
  for (const box of data.graph.boxes) {
    const kernel = kernels.get(box.id);
    if (kernel && expanded.has(box.id) && kernel.fused.length) {
      clusters.push({ id: `cluster:${box.id}`, label: kernel.name, ref: { kind: "kernel", id: box.id } });
      items.push(...expandedItems(kernel, nodes));
      const last = kernel.fused[kernel.fused.length - 1];
      const output = kernel.fused.includes(kernel.output) ? kernel.output : last;
      outputItem.set(box.id, `${box.id}:${output}`);
    } else {
      items.push({ id: box.id, kind: box.kind, label: box.label, detail: box.detail, ref: boxRef(box),
                   kernel: kernel ? box.id : null, expandable: !!kernel && kernel.fused.length > 0 });
    }
  }
  for (const link of data.graph.links) {
    if (outputItem.has(link.target)) continue;   // drawn from the expanded kernel's own edges
    edges.push({ source: outputItem.get(link.source) || link.source, target: link.target,
                 label: link.reason, cut: link.cut, decisions: link.decisions });
  }
  const producer = new Map();
  for (const kernel of data.kernels) {
    if (outputItem.has(kernel.id)) edges.push(...expandedEdges(kernel, producer, outputItem, decisions));
    if (kernel.output) producer.set(kernel.output, kernel.id);
  }
  const known = new Set(items.map((item) => item.id));
  return { items, clusters, edges: edges.filter((e) => known.has(e.source) && known.has(e.target)) };
}

function expandedEdges(kernel, producer, outputItem, decisions) {
  const fused = new Set(kernel.fused), edges = [];
  for (const [from, to, decisionId] of kernel.edges) {
    let source = `${kernel.id}:${from}`;
    if (!fused.has(from)) {
      const writer = producer.get(from);
      source = writer ? (outputItem.get(writer) || writer) : from;
    }
    const decision = decisionId ? decisions.get(decisionId) : null;
    edges.push({ source, target: `${kernel.id}:${to}`,
                 label: decision && decision.reason !== "view" ? decision.reason : "",
                 cut: decision ? !decision.merged : producer.has(from),
                 decisions: decision ? [decisionId] : [] });
  }
  return edges;
}

function itemSize(item) {
  const longest = Math.max(item.label.length, (item.detail || "").length, 4);
  return { width: Math.min(longest, 48) * CHAR_WIDTH + 18, height: item.detail ? 36 : 22 };
}

function layoutGraph(display) {
  if (display.items.length <= DAGRE_LIMIT && typeof dagre !== "undefined") {
    try { return dagreLayout(display); } catch (error) { console.warn("tinylab: dagre failed", error); }
  }
  return fastLayout(display);
}

function dagreLayout(display) {
  const graph = new dagre.graphlib.Graph({ compound: display.clusters.length > 0, multigraph: true });
  graph.setGraph({ rankdir: "TB", nodesep: 16, ranksep: 30, edgesep: 8, marginx: 12, marginy: 12 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const cluster of display.clusters) graph.setNode(cluster.id, { label: cluster.label, paddingTop: 24 });
  for (const item of display.items) {
    graph.setNode(item.id, itemSize(item));
    if (item.parent) graph.setParent(item.id, item.parent);
  }
  display.edges.forEach((edge, index) => {
    const label = edge.label ? { width: edge.label.length * 6 + 6, height: 12, labelpos: "c" } : {};
    graph.setEdge(edge.source, edge.target, label, `e${index}`);
  });
  dagre.layout(graph);
  const placed = { items: new Map(), clusters: new Map(), edges: [], width: 0, height: 0 };
  for (const item of display.items) {
    const node = graph.node(item.id);
    placed.items.set(item.id, { x: node.x, y: node.y, width: node.width, height: node.height });
  }
  for (const cluster of display.clusters) {
    const node = graph.node(cluster.id);
    placed.clusters.set(cluster.id, { x: node.x, y: node.y, width: node.width, height: node.height });
  }
  display.edges.forEach((edge, index) => {
    const laid = graph.edge({ v: edge.source, w: edge.target, name: `e${index}` });
    placed.edges.push({ points: laid.points, labelX: laid.x, labelY: laid.y });
  });
  const size = graph.graph();
  placed.width = size.width || 100;
  placed.height = size.height || 60;
  return placed;
}

function topologicalOrder(display) {
  const incoming = new Map(display.items.map((item) => [item.id, 0]));
  const outgoing = new Map(display.items.map((item) => [item.id, []]));
  for (const edge of display.edges) {
    incoming.set(edge.target, incoming.get(edge.target) + 1);
    outgoing.get(edge.source).push(edge.target);
  }
  const ready = display.items.filter((item) => incoming.get(item.id) === 0).map((item) => item.id);
  const order = [];
  while (ready.length) {
    const id = ready.pop();
    order.push(id);
    for (const next of outgoing.get(id)) {
      incoming.set(next, incoming.get(next) - 1);
      if (incoming.get(next) === 0) ready.push(next);
    }
  }
  const seen = new Set(order);   // a cycle (never expected) keeps its given order
  for (const item of display.items) if (!seen.has(item.id)) order.push(item.id);
  return { order, outgoing };
}

function fastLayout(display) {
  const { order, outgoing } = topologicalOrder(display);
  const layer = new Map(order.map((id) => [id, 0]));
  for (const id of order) {
    for (const next of outgoing.get(id)) layer.set(next, Math.max(layer.get(next), layer.get(id) + 1));
  }
  const rows = [];
  for (const id of order) {
    const index = layer.get(id);
    while (rows.length <= index) rows.push([]);
    rows[index].push(id);
  }
  const byId = indexById(display.items);
  const placed = { items: new Map(), clusters: new Map(), edges: [], width: 0, height: 0 };
  let top = 12;
  for (const row of rows) {
    for (let start = 0; start < row.length; start += ROW_LIMIT) {
      let left = 12, tallest = 0;
      for (const id of row.slice(start, start + ROW_LIMIT)) {
        const size = itemSize(byId.get(id));
        placed.items.set(id, { x: left + size.width / 2, y: top + size.height / 2, ...size });
        left += size.width + 16;
        tallest = Math.max(tallest, size.height);
      }
      placed.width = Math.max(placed.width, left);
      top += tallest + 34;
    }
  }
  placed.height = top;
  for (const edge of display.edges) {
    const a = placed.items.get(edge.source), b = placed.items.get(edge.target);
    const points = [{ x: a.x, y: a.y + a.height / 2 }, { x: b.x, y: b.y - b.height / 2 }];
    placed.edges.push({ points, labelX: (a.x + b.x) / 2, labelY: (a.y + b.y) / 2 });
  }
  return placed;
}
