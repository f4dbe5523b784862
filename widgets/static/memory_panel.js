// The "Memory" panel: for one realize, each buffer's lifetime across the kernel order (a timeline
// of bars, one column per kernel), the buffers the memory planner made share storage (one colour
// per shared storage), bytes allocated with and without the planner, and the largest buffers.
// Clicking a buffer selects it everywhere: the kernels that write and read it light up in the
// graph and the kernels table. Reads realize.memory from the model (inspection/memory_timeline.py).

const MEMORY_ROW_HEIGHT = 16;
const MEMORY_LABEL_WIDTH = 250;
const MEMORY_MAX_ROWS = 60;
const MEMORY_ROLE_COLORS = { input: "#94a3b8", assigned: "#a78bfa", output: "#2563eb" };
const MEMORY_SHARED_COLORS = ["#f59e0b", "#10b981", "#ef4444", "#06b6d4", "#d946ef", "#84cc16", "#f97316"];

function memoryBuffers(app) {
  if (!app.memoryIndex) {
    app.memoryIndex = new Map();
    for (const realize of app.data.realizes) {
      for (const buffer of (realize.memory && realize.memory.buffers) || []) {
        app.memoryIndex.set(buffer.id, buffer);
      }
    }
  }
  return app.memoryIndex;
}

// inspector.js asks this for a selection of kind "buffer": its writers and readers, its node
function focusBuffer(app, focus, bufferId) {
  const buffer = memoryBuffers(app).get(bufferId);
  if (!buffer) return;
  focus.buffer = buffer.id;
  for (const kernel of [...buffer.writers, ...buffer.readers]) focus.kernels.add(kernel);
  if (buffer.node) focus.nodes.add(buffer.node);
  focus.primaryKernel = buffer.writers[0] || buffer.readers[0] || null;
}

class MemoryPanel {
  constructor(app) {
    this.app = app;
    // kept on the app, so a new model (a what-if result) keeps the realize in view
    this.realizeIndex = app.memoryRealize ?? Math.max(0, app.data.realizes.findIndex(
      (r) => r.memory && r.memory.buffers.length));
    this.rows = new Map();
    this.body = h("div", { class: "tl-memory-body" });
    const choices = app.data.realizes.map((r) => h("option", { value: String(r.index) },
      `${r.index + 1}: ${r.forced_code}`));
    const select = h("select", { class: "tl-memory-realize", onchange: (event) => {
      this.realizeIndex = app.memoryRealize = Number(event.target.value);
      this.render();
    } }, ...choices);
    select.value = String(this.realizeIndex);
    this.element = h("div", { class: "tl-panel tl-memory" },
      h("div", { class: "tl-toolbar" }, h("b", {}, "Memory"),
        app.data.realizes.length > 1 ? select : null,
        h("span", { class: "tl-muted" }, "each buffer's lifetime across the kernels; click one")),
      this.body);
  }

  memory() {
    const realize = this.app.data.realizes[this.realizeIndex];
    return realize && realize.memory;
  }

  render() {
    const memory = this.memory();
    this.rows.clear();
    if (!memory || !memory.buffers.length) {
      this.body.replaceChildren(h("div", { class: "tl-muted" }, "no buffers in this realize"));
      return;
    }
    this.body.replaceChildren(this.totals(memory), this.timeline(memory), this.largest(memory),
                              h("div", { class: "tl-memory-users" }));
    this.update(this.app.focus);
  }

  totals(memory) {
    const saved = memory.bytes_without_plan - memory.bytes_with_plan;
    const shared = memory.buffers.filter((b) => b.shares_with.length).length;
    return h("div", { class: "tl-memory-totals" },
      h("b", {}, "peak "), formatBytes(memory.bytes_without_plan), " without the planner → ",
      h("b", { class: "tl-memory-with" }, formatBytes(memory.bytes_with_plan)), " with it",
      h("span", { class: "tl-muted" },
        ` (saves ${formatBytes(saved)}; ${plural(shared, "buffer")} share storage; ` +
        `at most ${formatBytes(memory.peak_live)} live at once; inputs ${formatBytes(memory.input_bytes)})`));
  }

  shownBuffers(memory) {
    if (memory.buffers.length <= MEMORY_MAX_ROWS) return memory.buffers;
    const keep = new Set([...memory.buffers].sort((a, b) => b.bytes - a.bytes)
      .slice(0, MEMORY_MAX_ROWS).map((b) => b.id));
    return memory.buffers.filter((b) => keep.has(b.id));
  }

  timeline(memory) {
    const rows = this.shownBuffers(memory);
    const column = Math.max(8, Math.min(28, Math.floor(560 / Math.max(1, memory.steps))));
    const width = MEMORY_LABEL_WIDTH + column * memory.steps + 10;
    const height = MEMORY_ROW_HEIGHT * rows.length + 24;
    const chart = svg("svg", { class: "tl-memory-svg", width, height });
    memory.kernels.forEach((kernelId, step) => {
      const x = MEMORY_LABEL_WIDTH + step * column + column / 2;
      const pick = () => this.app.select({ kind: "kernel", id: kernelId }, "memory");
      chart.append(svg("text", { class: "tl-memory-step", x, y: 11, "text-anchor": "middle",
        dataset: { kernel: kernelId }, onclick: pick }, String(step + 1)));
    });
    const palette = new Map();
    rows.forEach((buffer, row) => {
      const y = 16 + row * MEMORY_ROW_HEIGHT;
      const shared = buffer.storage !== buffer.id ? ` = ${buffer.storage}` : "";
      const label = `${buffer.id} ${buffer.label} ${formatBytes(buffer.bytes)}${shared}`;
      const group = svg("g", { class: `tl-memory-row tl-memory-${buffer.role}`, dataset: { id: buffer.id },
        onclick: () => this.app.select({ kind: "buffer", id: buffer.id }, "memory") },
        svg("title", {}, this.describe(buffer)),
        svg("rect", { class: "tl-memory-hit", x: 0, y, width, height: MEMORY_ROW_HEIGHT, fill: "transparent" }),
        svg("text", { x: 2, y: y + 11 }, label.slice(0, 40)),
        svg("rect", { class: "tl-memory-bar", x: MEMORY_LABEL_WIDTH + buffer.first * column, y: y + 2,
          width: (buffer.last - buffer.first + 1) * column, height: MEMORY_ROW_HEIGHT - 4, rx: 2,
          fill: this.color(buffer, palette) }));
      this.rows.set(buffer.id, group);
      chart.append(group);
    });
    return h("div", { class: "tl-memory-scroll" }, chart);
  }

  color(buffer, palette) {
    if (buffer.shares_with.length) {
      if (!palette.has(buffer.storage)) {
        palette.set(buffer.storage, MEMORY_SHARED_COLORS[palette.size % MEMORY_SHARED_COLORS.length]);
      }
      return palette.get(buffer.storage);
    }
    return MEMORY_ROLE_COLORS[buffer.role] || "#64748b";
  }

  describe(buffer) {
    const sharing = buffer.shares_with.length ? `; shares storage with ${buffer.shares_with.join(", ")}` : "";
    return `${buffer.label}, ${formatBytes(buffer.bytes)}, ${buffer.role}, live from kernel ` +
           `${buffer.first + 1} to ${buffer.last + 1}${sharing}`;
  }

  largest(memory) {
    const buffers = memoryBuffers(this.app);
    const items = memory.largest.map((id) => {
      const buffer = buffers.get(id);
      return h("li", { class: "tl-link tl-memory-largest-item", dataset: { id },
        onclick: () => this.app.select({ kind: "buffer", id }, "memory") },
        `${formatBytes(buffer.bytes)}  ${buffer.label} (${buffer.role})`);
    });
    return h("div", { class: "tl-memory-largest" }, h("b", {}, "Largest buffers"), h("ol", {}, ...items));
  }

  update(focus) {
    const memory = this.memory();
    if (!memory) return;
    const buffers = memoryBuffers(this.app);
    for (const [id, row] of this.rows) {
      const buffer = buffers.get(id);
      const touches = [...buffer.writers, ...buffer.readers].some((k) => focus.kernels.has(k));
      row.classList.toggle("tl-selected", focus.buffer === id);
      row.classList.toggle("tl-related", focus.buffer !== id && focus.buffer === undefined && touches);
    }
    for (const item of this.body.querySelectorAll(".tl-memory-largest-item")) {
      item.classList.toggle("tl-selected", item.dataset.id === focus.buffer);
    }
    const users = this.body.querySelector(".tl-memory-users");
    const buffer = buffers.get(focus.buffer);
    if (!users) return;
    if (!buffer) { users.replaceChildren(); return; }
    const link = (kernelId) => h("a", { class: "tl-link", href: "#", onclick: (event) => {
      event.preventDefault();
      this.app.select({ kind: "kernel", id: kernelId }, "memory");
    } }, this.app.kernels.get(kernelId).name, " ");
    users.replaceChildren(h("div", {}, h("b", {}, buffer.id), " " + this.describe(buffer)),
      h("div", {}, "written by ", ...(buffer.writers.length ? buffer.writers.map(link) : ["(an input)"])),
      h("div", {}, "read by ", ...(buffer.readers.length ? buffer.readers.map(link) : ["(no kernel here)"])));
  }
}
