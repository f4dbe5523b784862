// The "Roofline" panel: each timed kernel as a dot at (FLOPs per byte, FLOP/s) under its device's
// roofs (one bandwidth slope per memory level, L1 ... DRAM, then the compute peak), from
// model.peaks and each kernel's cost
// (inspection/roofline.py). A dot's colour says how close it came to the roof; clicking one
// selects its kernel everywhere. The kernels table's "% peak" column reads the same numbers.

const ROOF_WIDTH = 560;
const ROOF_HEIGHT = 320;
const ROOF_MARGIN = 48;
const LEVEL_COLORS = { L1: "#f59e0b", L2: "#f97316", L3: "#ea580c", DRAM: "#dc2626" };

function roofPoints(app, device) {
  return app.data.kernels.filter((k) => k.device === device && k.run_s && k.flops && k.bytes);
}

function percentColor(percent) {
  if (percent === null || percent === undefined) return "#64748b";
  if (percent >= 50) return "#16a34a";
  if (percent >= 10) return "#f59e0b";
  return "#dc2626";
}

class RooflinePanel {
  constructor(app) {
    this.app = app;
    this.dots = new Map();
    this.body = h("div", { class: "tl-roofline-body" });
    this.element = h("div", { class: "tl-panel tl-roofline" },
      h("div", { class: "tl-toolbar" }, h("b", {}, "Roofline"),
        h("span", { class: "tl-muted" }, "each kernel's FLOP/s against its device's peak; click a dot")),
      this.body);
  }

  render() {
    this.dots.clear();
    const peaks = this.app.data.peaks || {};
    const devices = Object.keys(peaks).filter((d) => peaks[d].flops_per_s && peaks[d].bytes_per_s);
    if (!devices.length) {
      this.body.replaceChildren(h("div", { class: "tl-muted" },
        this.app.data.timings ? "no timed kernel on a device with a known peak" :
                                "no timings in this trace (built without them)"));
      return;
    }
    this.body.replaceChildren(...devices.map((device) => this.chart(device, peaks[device])));
    this.update(this.app.focus);
  }

  chart(device, peak) {
    const points = roofPoints(this.app, device);
    const levels = peak.levels && peak.levels.length ? peak.levels :
      [{ level: "DRAM", bytes_per_s: peak.bytes_per_s, how: peak.bandwidth_from }];
    const ridges = levels.map((row) => peak.flops_per_s / row.bytes_per_s);
    const xs = points.map((k) => k.flops / k.bytes).concat(ridges);
    const ys = points.map((k) => k.flops / k.run_s).concat([peak.flops_per_s]);
    const lowX = Math.log10(Math.min(...xs)) - 0.5, highX = Math.log10(Math.max(...xs)) + 0.5;
    const lowY = Math.log10(Math.min(...ys)) - 0.5, highY = Math.log10(Math.max(...ys)) + 0.3;
    const at = (x, y) => [
      ROOF_MARGIN + (Math.log10(x) - lowX) / (highX - lowX) * (ROOF_WIDTH - 2 * ROOF_MARGIN),
      ROOF_HEIGHT - ROOF_MARGIN - (Math.log10(y) - lowY) / (highY - lowY) * (ROOF_HEIGHT - 2 * ROOF_MARGIN)];
    const start = 10 ** lowX;
    const chart = svg("svg", { class: "tl-roofline-svg", width: ROOF_WIDTH, height: ROOF_HEIGHT,
      dataset: { device } },
      svg("rect", { x: ROOF_MARGIN, y: ROOF_MARGIN, width: ROOF_WIDTH - 2 * ROOF_MARGIN,
        height: ROOF_HEIGHT - 2 * ROOF_MARGIN, fill: "#f8fafc", stroke: "#cbd5e1" }),
      svg("text", { x: ROOF_MARGIN, y: ROOF_HEIGHT - 14 }, "FLOPs per byte (log) →"),
      svg("text", { x: 4, y: ROOF_MARGIN - 10 }, `FLOP/s (log) ↑  ${device}`));
    levels.forEach((row, index) => {   // one roof per memory level (inspection/roofline.py)
      const corner = at(start, Math.max(row.bytes_per_s * start, 10 ** lowY));
      const roof = [corner, at(ridges[index], peak.flops_per_s), at(10 ** highX, peak.flops_per_s)];
      const color = LEVEL_COLORS[row.level] || "#dc2626";
      chart.append(svg("polyline", { class: "tl-roof", fill: "none", stroke: color, "stroke-width": 2,
        dataset: { level: row.level },
        points: roof.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" ") }),
      svg("text", { x: (corner[0] + 4).toFixed(1), y: (corner[1] - 4).toFixed(1), fill: color }, row.level));
    });
    for (const kernel of points) {
      const [x, y] = at(kernel.flops / kernel.bytes, kernel.flops / kernel.run_s);
      const percent = kernel.percent_of_peak;
      const text = `${kernel.name}: ${formatCount(kernel.flops / kernel.run_s)} FLOP/s, ` +
        `${(kernel.flops / kernel.bytes).toFixed(2)} FLOP/B, ` +
        `${percent === null || percent === undefined ? "–" : percent.toFixed(1) + "%"} of peak ` +
        `(${kernel.bound}-bound, ${kernel.roof_level || "DRAM"} roof)`;
      const dot = svg("circle", { class: "tl-roof-point", cx: x.toFixed(1), cy: y.toFixed(1), r: 5,
        fill: percentColor(percent), dataset: { id: kernel.id },
        onclick: () => this.app.select({ kind: "kernel", id: kernel.id }, "roofline") },
        svg("title", {}, text));
      this.dots.set(kernel.id, dot);
      chart.append(dot);
    }
    const roofs = levels.map((row) => `${row.level} ${formatBytes(row.bytes_per_s)}/s`).join(", ");
    const about = h("div", { class: "tl-muted tl-roofline-peak" },
      `${device}: ${formatCount(peak.flops_per_s)} FLOP/s peak (${peak.compute_from}); ` +
      `memory roofs ${roofs}; ridge at ${ridges[ridges.length - 1].toFixed(1)} FLOP/B (DRAM)`,
      h("ul", {}, ...levels.map((row) => h("li", {}, `${row.level}: ${row.how}`))));
    return h("div", { class: "tl-roofline-device" }, h("div", { class: "tl-roofline-scroll" }, chart), about);
  }

  update(focus) {
    for (const [id, dot] of this.dots) {
      dot.classList.toggle("tl-selected", focus.primaryKernel === id);
      dot.classList.toggle("tl-related", focus.primaryKernel !== id && focus.kernels.has(id));
    }
  }
}
