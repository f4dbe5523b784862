// The graph panel: the op graph collapsed by kernel (one box per kernel, labelled with its fused
// ops; cut edges labelled with their reason), drawn as SVG. Click selects (a kernel, an op, a
// decision's edge); the ± badge or a double-click expands a kernel into its ops. Takes the
// Inspector (inspector.js) for data, selection and expansion; draws into its own element.

class GraphPanel {
  constructor(app) {
    this.app = app;
    this.zoom = 1;
    this.uid = Math.random().toString(36).slice(2, 8);
    this.status = h("span", { class: "tl-muted" });
    this.scroller = h("div", { class: "tl-graph-scroll" });
    const button = (text, title, action) => h("button", { class: "tl-button", title, onclick: action }, text);
    this.element = h("div", { class: "tl-panel tl-graph" },
      h("div", { class: "tl-toolbar" },
        h("b", {}, "Graph"),
        button("−", "zoom out", () => this.setZoom(this.zoom / 1.25)),
        button("+", "zoom in", () => this.setZoom(this.zoom * 1.25)),
        button("fit", "fit the width", () => this.fit()),
        button("collapse all", "one box per kernel", () => app.collapseAll()),
        this.status),
      this.scroller);
  }

  render() {
    const started = performance.now();
    const display = displayGraph(this.app.data, this.app.expanded);
    this.display = display;
    this.placed = layoutGraph(display);
    this.drawn = { items: new Map(), edges: [], clusters: new Map() };
    this.svg = this.drawSvg();
    this.scroller.replaceChildren(this.svg);
    this.setZoom(this.zoom);
    this.update(this.app.focus);
    const elapsed = performance.now() - started;
    this.app.el.dataset.graphRenderMs = elapsed.toFixed(1);
    const boxes = display.items.length;
    const edges = plural(display.edges.length, "edge");
    this.status.textContent = `${boxes} box${boxes === 1 ? "" : "es"}, ${edges}` +
      (this.app.expanded.size ? ` · ${this.app.expanded.size} expanded` : " · collapsed by kernel") +
      " · double-click a kernel to expand it";
  }

  drawSvg() {
    const { width, height } = this.placed;
    const root = svg("svg", { class: "tl-graph-svg", viewBox: `0 0 ${width} ${height}`, width, height });
    this.titles = this.display.items.length <= DAGRE_LIMIT;   // hover titles cost time on big graphs
    root.addEventListener("click", (event) => this.onClick(event));
    root.addEventListener("dblclick", (event) => this.onDoubleClick(event));
    root.append(svg("defs", {}, this.marker("plain"), this.marker("cut")));
    for (const cluster of this.display.clusters) root.append(this.drawCluster(cluster));
    this.display.edges.forEach((edge, index) => root.append(this.drawEdge(edge, this.placed.edges[index])));
    for (const item of this.display.items) root.append(this.drawItem(item));
    return root;
  }

  marker(kind) {
    return svg("marker", { id: `tl-arrow-${kind}-${this.uid}`, viewBox: "0 0 10 10", refX: 9, refY: 5,
                           markerUnits: "userSpaceOnUse", markerWidth: 9, markerHeight: 9,
                           orient: "auto-start-reverse" },
      svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: `tl-arrow-${kind}` }));
  }

  drawCluster(cluster) {
    const box = this.placed.clusters.get(cluster.id);
    if (!box) return svg("g");
    const group = svg("g", { class: "tl-cluster", dataset: { kernel: cluster.ref.id } },
      svg("rect", { x: box.x - box.width / 2, y: box.y - box.height / 2, width: box.width,
                    height: box.height, rx: 8 }),
      svg("text", { x: box.x - box.width / 2 + 8, y: box.y - box.height / 2 + 15, class: "tl-cluster-label" },
          cluster.label),
      svg("title", {}, `${cluster.label}: double-click to collapse`));
    this.drawn.clusters.set(cluster.ref.id, group);
    return group;
  }

  drawEdge(edge, laid) {
    const kind = edge.cut && edge.label !== "requested" ? "cut" : "plain";
    const path = "M " + laid.points.map((p) => `${p.x.toFixed(1)} ${p.y.toFixed(1)}`).join(" L ");
    const group = svg("g", { class: `tl-edge tl-edge-${kind}`, dataset: { edge: this.drawn.edges.length } },
      svg("path", { d: path, "marker-end": `url(#tl-arrow-${kind}-${this.uid})` }),
      this.titles ? svg("path", { d: path, class: "tl-edge-hit" }) : null);
    if (edge.label) {
      group.append(svg("text", { x: laid.labelX, y: laid.labelY + 4, "text-anchor": "middle",
                                 class: "tl-edge-label" }, edge.label));
    }
    const decision = edge.decisions[0];
    if (decision && this.titles) group.append(svg("title", {}, this.app.decisions.get(decision).text));
    this.drawn.edges.push({ edge, group });
    return group;
  }

  drawItem(item) {
    const box = this.placed.items.get(item.id);
    const left = box.x - box.width / 2, top = box.y - box.height / 2;
    const radius = item.kind === "input" ? box.height / 2 : 5;
    const dataset = { id: item.id, ref: item.ref.id };
    const group = svg("g", { class: `tl-box tl-box-${item.kind}`, dataset },
      svg("rect", { x: left, y: top, width: box.width, height: box.height, rx: radius }),
      svg("text", { x: box.x, y: top + 14, "text-anchor": "middle", class: "tl-box-label" },
          clip(item.label)));
    if (item.detail) {
      group.append(svg("text", { x: box.x, y: top + 28, "text-anchor": "middle", class: "tl-box-detail" },
                       clip(item.detail)));
    }
    if (item.expandable) {
      const badge = svg("g", { class: "tl-expand", dataset: { expand: item.id } },
        svg("circle", { cx: left + box.width - 1, cy: top + 1, r: 6 }),
        svg("text", { x: left + box.width - 1, y: top + 4.5, "text-anchor": "middle" }, "+"));
      if (this.titles) badge.append(svg("title", {}, "expand this kernel into its ops"));
      group.append(badge);
    }
    const title = item.kind === "kernel" ? `${item.label}: ${item.detail}` : item.label;
    if (this.titles) group.append(svg("title", {}, title));
    this.drawn.items.set(item.id, { item, group });
    return group;
  }

  target(event) {
    const found = event.target.closest("[data-expand], [data-id], [data-edge], .tl-cluster");
    if (!found) return null;
    if (found.dataset.expand) return { expand: found.dataset.expand };
    if (found.dataset.id) return { item: this.drawn.items.get(found.dataset.id).item };
    if (found.dataset.edge) return { edge: this.drawn.edges[Number(found.dataset.edge)].edge };
    return { cluster: found.dataset.kernel };
  }

  onClick(event) {
    const hit = this.target(event);
    if (!hit) return;
    if (hit.expand) this.app.toggleExpand(hit.expand);
    else if (hit.item) this.app.select(hit.item.ref, "graph");
    else if (hit.edge && hit.edge.decisions.length) {
      this.app.select({ kind: "decision", id: hit.edge.decisions[0] }, "graph");
    }
    else if (hit.cluster) this.app.select({ kind: "kernel", id: hit.cluster }, "graph");
  }

  onDoubleClick(event) {
    const hit = this.target(event);
    if (!hit || hit.expand) return;
    if (hit.item && hit.item.expandable) this.app.toggleExpand(hit.item.id);
    else if (hit.item && hit.item.parent) this.app.toggleExpand(hit.item.kernel);
    else if (hit.cluster) this.app.toggleExpand(hit.cluster);
  }

  update(focus) {
    if (!this.drawn) return;
    let first = null;
    for (const { item, group } of this.drawn.items.values()) {
      const selected = focus.matches(item.ref);
      const related = !selected && item.kernel && focus.kernels.has(item.kernel);
      group.classList.toggle("tl-selected", selected);
      group.classList.toggle("tl-related", !!related);
      const splits = item.ref.kind === "kernel" && this.app.whatIfKernels.has(item.kernel);
      group.classList.toggle("tl-would-split", splits);
      if (selected && !first) first = item.id;
    }
    for (const [kernelId, group] of this.drawn.clusters) {
      group.classList.toggle("tl-selected", focus.kernels.has(kernelId));
      group.classList.toggle("tl-would-split", this.app.whatIfKernels.has(kernelId));
    }
    for (const { edge, group } of this.drawn.edges) {
      const chosen = focus.selection.kind === "decision"
        && edge.decisions.some((d) => focus.decisions.has(d));
      group.classList.toggle("tl-selected", chosen);
      group.classList.toggle("tl-would-cut", edge.decisions.some((d) => this.app.whatIfDecisions.has(d)));
    }
    if (first && focus.origin !== "graph") this.reveal(first);
  }

  reveal(itemId) {
    const box = this.placed.items.get(itemId);
    if (!box) return;
    this.scroller.scrollLeft = box.x * this.zoom - this.scroller.clientWidth / 2;
    this.scroller.scrollTop = box.y * this.zoom - this.scroller.clientHeight / 2;
  }

  setZoom(zoom) {
    this.zoom = Math.min(4, Math.max(0.05, zoom));
    if (!this.svg) return;
    this.svg.setAttribute("width", (this.placed.width * this.zoom).toFixed(0));
    this.svg.setAttribute("height", (this.placed.height * this.zoom).toFixed(0));
  }

  fit() {
    const available = this.scroller.clientWidth || 800;
    this.setZoom(Math.min(1.5, (available - 8) / this.placed.width));
  }
}

function clip(text, limit = 48) {
  return text.length > limit ? text.slice(0, limit - 1) + "…" : text;
}
