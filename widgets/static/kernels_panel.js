// The kernels panel: a sortable table of every kernel run (name, shape, FLOPs, bytes, time,
// GFLOPS, GB/s, cache hit; a symbolic kernel's launch shows its bound values, `i=3`, beside its
// name) and, for the selection, a details card: the kernel's source in one tab
// per language (C / OpenCL / CUDA when rendered), its loop IR, optimization actions, linear
// program and AST; or the selected op / decision with its user line. Driven by inspector.js.

const MAX_TABLE_ROWS = 1000;
const COLUMNS = [
  ["index", "#"], ["name", "kernel"], ["shape", "shape"], ["flops", "FLOPs"], ["bytes", "bytes"],
  ["run_s", "time"], ["gflops", "GFLOPS"], ["gbps", "GB/s"], ["percent_of_peak", "% peak"],
  ["cache_hit", "cache"],
];

const BUILD_WORDS = {   // engine/kernel_builder.py's KernelBuild.how, short
  "compiled": "compiled", "binary from the disk cache": "disk: binary",
  "planned program from the disk cache": "disk: program", "render only": "render only",
};

function cellText(kernel, key, index) {
  switch (key) {
    case "index": return String(index + 1);
    case "shape": return `[${kernel.shape.join(", ")}]`;
    case "flops": return formatCount(kernel.flops);
    case "bytes": return formatBytes(kernel.bytes);
    case "run_s": return formatSeconds(kernel.run_s);
    case "gflops": case "gbps": return formatRate(kernel[key]);
    case "percent_of_peak":   // of the roof at its intensity (inspection/roofline.py)
      return kernel.percent_of_peak === null || kernel.percent_of_peak === undefined ? "–"
        : `${kernel.percent_of_peak.toFixed(1)}% ${kernel.bound === "compute" ? "C" : "M"}`;
    case "cache_hit":   // how it was built, from its compile record (engine/compile_record.py)
      if (kernel.cache_hit === undefined) return "–";
      if (kernel.build) return kernel.build.unit_kernels > 1 && !kernel.cache_hit
        ? `compiled (unit of ${kernel.build.unit_kernels})` : BUILD_WORDS[kernel.build.how] || kernel.build.how;
      return kernel.cache_hit ? "hit" : "compiled";
    default: return String(kernel[key] ?? "");
  }
}

function variablesText(kernel) {   // "i=3" for a launch of a symbolic kernel, "" otherwise
  return Object.keys(kernel.variables || {}).sort()
    .map((name) => `${name}=${kernel.variables[name]}`).join(" ");
}

function cellContent(kernel, key, index) {
  const text = cellText(kernel, key, index);
  const bound = key === "name" ? variablesText(kernel) : "";
  return bound ? [text, h("span", { class: "tl-muted tl-variables" }, ` ${bound}`)] : text;
}

function sortValue(kernel, key, index) {
  if (key === "index") return index;
  if (key === "shape") return kernel.shape.reduce((a, b) => a * b, 1);
  if (key === "name") return kernel.name;
  if (key === "cache_hit") return kernel.cache_hit ? 1 : 0;
  return kernel[key] ?? -1;
}

class KernelsPanel {
  constructor(app) {
    this.app = app;
    this.sortKey = "index";
    this.direction = 1;
    this.rows = new Map();
    this.body = h("tbody");
    this.note = h("span", { class: "tl-muted" });
    this.head = h("tr");
    const table = h("table", { class: "tl-table" }, h("thead", {}, this.head), this.body);
    this.element = h("div", { class: "tl-panel tl-kernels" },
      h("div", { class: "tl-toolbar" }, h("b", {}, "Kernels"), this.note),
      h("div", { class: "tl-table-scroll" }, table));
  }

  render() {
    this.head.replaceChildren(...COLUMNS.map(([key, title]) => h("th", {
      class: key === this.sortKey ? `tl-sorted-${this.direction > 0 ? "up" : "down"}` : "",
      dataset: { key }, onclick: () => this.sortBy(key),
    }, title)));
    const order = this.sorted();
    const hidden = Math.max(0, order.length - MAX_TABLE_ROWS);
    this.note.textContent = hidden ? `showing ${MAX_TABLE_ROWS} of ${order.length}: sort to see others`
                                   : "click a header to sort, a row to select";
    this.rows.clear();
    this.body.replaceChildren(...order.slice(0, MAX_TABLE_ROWS).map(({ kernel, index }) => {
      const select = () => this.app.select({ kind: "kernel", id: kernel.id }, "kernels");
      const cells = COLUMNS.map(([key]) => h("td", { class: `tl-col-${key}` }, cellContent(kernel, key, index)));
      const row = h("tr", { class: "tl-row", dataset: { id: kernel.id }, onclick: select }, ...cells);
      this.rows.set(kernel.id, row);
      return row;
    }));
    this.update(this.app.focus);
  }

  sorted() {
    const order = this.app.data.kernels.map((kernel, index) => ({ kernel, index }));
    order.sort((a, b) => {
      const x = sortValue(a.kernel, this.sortKey, a.index);
      const y = sortValue(b.kernel, this.sortKey, b.index);
      return (x < y ? -1 : x > y ? 1 : a.index - b.index) * this.direction;
    });
    return order;
  }

  sortBy(key) {
    const ascendingFirst = key === "name" || key === "index";
    this.direction = key === this.sortKey ? -this.direction : (ascendingFirst ? 1 : -1);
    this.sortKey = key;
    this.render();
  }

  update(focus) {
    for (const [id, row] of this.rows) {
      row.classList.toggle("tl-selected", focus.primaryKernel === id);
      row.classList.toggle("tl-related", focus.primaryKernel !== id && focus.kernels.has(id));
    }
    const row = this.rows.get(focus.primaryKernel);
    if (row && focus.origin !== "kernels") row.scrollIntoView({ block: "nearest" });
  }
}

class DetailsPanel {
  constructor(app) {
    this.app = app;
    this.element = h("div", { class: "tl-panel tl-details" });
  }

  render() { this.update(this.app.focus); }

  update(focus) {
    const parts = [];
    const selection = focus.selection;
    if (selection.kind === "node") parts.push(this.nodeCard(this.app.nodes.get(selection.id)));
    if (selection.kind === "decision") parts.push(this.decisionCard(this.app.decisions.get(selection.id)));
    const kernel = this.app.kernels.get(focus.primaryKernel);
    if (kernel) parts.push(this.kernelCard(kernel));
    if (!parts.length) {
      parts.push(h("div", { class: "tl-muted" },
        "Select a kernel, an op or a decision to see its source, loop IR and why it is there."));
    }
    this.element.replaceChildren(...parts);
  }

  nodeCard(node) {
    const kernels = node.kernels.map((id) => this.kernelLink(id));
    const origin = node.role === "input" ? "an input buffer" : "built inside tinylab";
    const where = kernels.length > 1 ? "computed in kernels " : "computed in kernel ";
    return h("div", { class: "tl-card" },
      h("div", {}, h("b", {}, `${node.op} ${node.arg}`.trim()),
        h("span", { class: "tl-muted" }, `  ${node.dtype}[${node.shape.join(", ")}]`)),
      node.line ? h("div", { class: "tl-line" }, node.line) : h("div", { class: "tl-muted" }, origin),
      kernels.length ? h("div", {}, where, ...kernels) : null);
  }

  decisionCard(decision) {
    return h("div", { class: `tl-card ${decision.merged ? "" : "tl-card-cut"}` },
      h("div", {}, h("b", {}, decision.merged ? "merged: " : "kernel boundary: "), decision.reason),
      h("div", {}, decision.text),
      h("div", { class: "tl-muted" }, decision.explanation));
  }

  kernelLink(kernelId) {
    const select = (event) => {
      event.preventDefault();
      this.app.select({ kind: "kernel", id: kernelId }, "details");
    };
    return h("a", { class: "tl-link", href: "#", onclick: select }, this.app.kernels.get(kernelId).name, " ");
  }

  costText(kernel) {
    const cost = [`${formatCount(kernel.flops)} FLOPs`, formatBytes(kernel.bytes)];
    if (kernel.run_s !== undefined) {
      const compiled = kernel.cache_hit ? "cache hit" : `compiled in ${formatSeconds(kernel.compile_s)}`;
      cost.push(`run ${formatSeconds(kernel.run_s)}`, `${formatRate(kernel.gflops)} GFLOPS`,
                `${formatRate(kernel.gbps)} GB/s`, kernel.build ? `build: ${kernel.build.text}` : compiled);
    }
    return cost.join(" · ");
  }

  kernelCard(kernel) {
    const realize = this.app.data.realizes[kernel.realize];
    const program = this.app.data.programs[kernel.name];
    const expand = kernel.fused.length ? h("button", {
      class: "tl-button", onclick: () => this.app.toggleExpand(kernel.id),
    }, this.app.expanded.has(kernel.id) ? "collapse in graph" : "expand in graph") : null;
    const bound = variablesText(kernel);
    const about = `  ${kernel.device} · [${kernel.shape.join(", ")}]${bound ? ` · ${bound}` : ""}` +
      ` · ${kernel.ops.join(" ")}`;
    const card = h("div", { class: "tl-card tl-kernel-card", dataset: { kernel: kernel.id } },
      h("div", { class: "tl-kernel-title" },
        h("b", {}, kernel.name), h("span", { class: "tl-muted" }, about), expand),
      h("div", { class: "tl-muted" },
        `realize ${kernel.realize}, forced by ${realize.forced_code} · ${this.costText(kernel)}`));
    if (!program) {
      card.append(h("div", { class: "tl-muted" }, "no program recorded (not run)"));
      return card;
    }
    const actions = program.opts.length ? program.opts.join(", ") : "none (plain loops)";
    const name = kernel.name;   // the key of its program in the model
    card.append(this.sourceTabs(program, name), this.gpuBlock(kernel),
      this.passBlock("Loop IR", program, name, "plan", true),
      h("div", { class: "tl-actions" }, h("b", {}, "Actions: "), actions),
      this.passBlock("Linear program", program, name, "linear", false),
      this.passBlock("Kernel AST", program, name, "ast", false));
    return card;
  }

  sourceTabs(program, name) {
    const languages = Object.keys(program.sources);
    const wanted = this.app.sourceLanguage;
    const code = h("pre", { class: "tl-source tl-code" });
    const tabs = h("div", { class: "tl-tabs" });
    const show = (language) => {
      code.dataset.language = language;
      showCode(code, undefined, program.sources[language]);
      this.app.highlighted(name).then((html) => {
        if (html && code.dataset.language === language) {
          showCode(code, html.sources[language], program.sources[language]);
        }
      });
      for (const tab of tabs.children) {
        tab.classList.toggle("tl-tab-active", tab.dataset.language === language);
      }
    };
    for (const language of languages) {
      const ran = language === program.language;
      const choose = () => { this.app.sourceLanguage = language; show(language); };
      tabs.append(h("button", {
        class: "tl-tab", dataset: { language }, onclick: choose,
        title: ran ? "the source that ran" : "rendered for this backend (not run)",
      }, language + (ran ? " ✓" : "")));
    }
    show(languages.includes(wanted) ? wanted : program.language);
    return h("div", { class: "tl-source-box" }, tabs, code);
  }

  gpuBlock(kernel) {
    const result = h("div", { class: "tl-gpu-result tl-muted" },
      `Runs this kernel's WGSL on your GPU (WebGPU) with the inputs recorded in the trace, and ` +
      `compares with what ${kernel.device} computed.`);
    const button = h("button", { class: "tl-button tl-gpu-run" }, "Run on this browser's GPU");
    button.addEventListener("click", () => this.runOnGPU(kernel, button, result));
    return h("div", { class: "tl-gpu" }, button, result);
  }

  async runOnGPU(kernel, button, result) {
    button.disabled = true;
    result.className = "tl-gpu-result tl-muted";
    result.textContent = "running…";
    try {
      const gpu = await this.app.webgpu();   // says why first when there is no WebGPU
      const { content, buffers } = await this.app.requestKernelData(kernel.id);
      if (!content.ok) throw new Error(content.reason);
      const [compiled] = await compileKernels(gpu, [content.kernel]);
      const bound = content.arguments.map((arg, i) => makeBuffer(gpu, arg.nbytes, buffers[i]));
      const timing = await dispatchAll(gpu, [{ compiled, buffers: bound }]);
      const lines = [];
      for (const [k, output] of content.outputs.entries()) {
        const arg = content.arguments[output];
        const got = decodeValues(await readBuffer(gpu, bound[output], arg.nbytes), arg.dtype);
        const expected = decodeValues(buffers[content.arguments.length + k], arg.dtype);
        const errors = compareValues(got, expected);
        result.dataset.maxAbs = String(errors.maxAbs);
        result.dataset.maxRel = String(errors.maxRel);
        result.dataset.count = String(errors.count);
        lines.push(`output data${output} (${errors.count} × ${arg.dtype}) vs ${content.device}: ` +
          `max abs error ${errors.maxAbs.toPrecision(3)}, max rel error ` +
          `${errors.maxRel.toPrecision(3)}` + (errors.mismatched ? ` (${errors.mismatched} differ)` : " (identical)"));
      }
      bound.forEach((buffer) => buffer.destroy());
      lines.push(`adapter: ${gpu.name}`,
        `time: ${(timing.seconds * 1e6).toFixed(1)} µs (${timing.timer})`);
      if (content.note) lines.push(content.note);
      result.className = "tl-gpu-result tl-gpu-done";
      result.replaceChildren(...lines.map((line) => h("div", {}, line)));
    } catch (error) {
      result.className = "tl-gpu-result tl-gpu-problem";
      result.textContent = `Cannot run here: ${error.message || error}`;
    }
    button.disabled = false;
  }

  passBlock(title, program, name, key, open) {
    const text = h("pre", { class: "tl-pass-text tl-code" });
    showCode(text, undefined, program.passes[key]);
    this.app.highlighted(name).then((html) => {
      if (html) showCode(text, html.passes[key], program.passes[key]);
    });
    return h("details", { class: "tl-pass", open }, h("summary", {}, title), text);
  }
}
