// The tinylab inspector widget (anywidget front end). Takes the model built by
// tinylab.inspection.build_model (trait `data`), the panels to show and the preferred source
// language; gives the graph, kernels, details and why panels, all driven by one selection, so
// clicking a node, a kernel or a decision selects it everywhere, with or without a Python kernel.

class Focus {
  constructor(selection, origin) {
    this.selection = selection || {};
    this.origin = origin || "";
    this.kernels = new Set();
    this.nodes = new Set();
    this.decisions = new Set();
    this.primaryKernel = null;
  }

  matches(ref) {
    return !!ref && ref.kind === this.selection.kind && ref.id === this.selection.id;
  }
}

class Inspector {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.expanded = new Set();
    this.whatIfKey = "";
    this.whatIfDecisions = new Set();
    this.whatIfKernels = new Set();
  }

  mount() {
    this.data = this.model.get("data") || {};
    this.memoryIndex = null;
    this.highlights = new Map();
    if (!this.data.kernels) {
      this.el.replaceChildren(h("div", { class: "tl-muted" }, "tinylab: nothing traced"));
      return;
    }
    this.kernels = indexById(this.data.kernels);
    this.nodes = indexById(this.data.nodes);
    this.decisions = indexById(this.data.decisions);
    this.decisionsByNode = new Map();
    for (const decision of this.data.decisions) {
      for (const nodeId of [decision.producer, decision.consumer]) {
        if (!nodeId) continue;
        if (!this.decisionsByNode.has(nodeId)) this.decisionsByNode.set(nodeId, []);
        this.decisionsByNode.get(nodeId).push(decision.id);
      }
    }
    this.sourceLanguage = this.model.get("source_language") || "";
    this.focus = this.focusOf(this.model.get("selection") || {}, "");
    this.buildPanels();
  }

  // The views come from tinylab/inspection/view_registry.py (VIEWS and PANEL_CLASSES, written into this
  // module by assets.py): every registered view unless the trait `panels` names some.
  buildPanels() {
    const wanted = new Set(this.model.get("panels") || VIEWS.map((view) => view.name));
    this.panels = [];
    const header = h("div", { class: "tl-header" }, h("b", {}, "tinylab"),
                     h("span", { class: "tl-muted" }, this.headline()));
    const grid = h("div", { class: "tl-grid" });
    for (const view of VIEWS.filter((view) => wanted.has(view.name))) {
      const panels = view.panels.map((name) => new PANEL_CLASSES[name](this));
      this.panels.push(...panels);
      const elements = panels.map((panel) => panel.element);
      grid.append(elements.length === 1 ? elements[0] : h("div", { class: "tl-columns" }, ...elements));
    }
    this.el.replaceChildren(h("div", { class: "tl-inspector" }, header, grid));
    for (const panel of this.panels) panel.render();
  }

  headline() {
    const kernels = this.data.kernels.filter((k) => k.kind === "kernel").length;
    const cuts = this.data.decisions.filter((d) => !d.merged).length;
    const forced = this.data.realizes.slice(0, 3).map((r) => r.forced_code).join("; ");
    const omitted = this.data.omitted_realizes ? ` (and ${this.data.omitted_realizes} more not shown)` : "";
    const realizes = plural(this.data.realizes.length, "realize") + omitted;
    return `  ${realizes} · ${plural(kernels, "kernel")} · ${plural(cuts, "cut")} · ${forced}`;
  }

  focusOf(selection, origin) {
    const focus = new Focus(selection, origin);
    const add = (set, values) => { for (const value of values) if (value) set.add(value); };
    if (selection.kind === "kernel" && this.kernels.has(selection.id)) {
      const kernel = this.kernels.get(selection.id);
      focus.kernels.add(kernel.id);
      add(focus.nodes, kernel.fused);
      add(focus.decisions, kernel.decisions);
      focus.primaryKernel = kernel.id;
    } else if (selection.kind === "node" && this.nodes.has(selection.id)) {
      const node = this.nodes.get(selection.id);
      focus.nodes.add(node.id);
      add(focus.kernels, node.kernels);
      add(focus.decisions, this.decisionsByNode.get(node.id) || []);
      if (!node.kernels.length) {   // an input: the kernels that read it
        add(focus.kernels, this.data.kernels.filter((k) => k.reads.includes(node.id)).map((k) => k.id));
      }
      focus.primaryKernel = [...focus.kernels][0] || null;
    } else if (selection.kind === "decision" && this.decisions.has(selection.id)) {
      const decision = this.decisions.get(selection.id);
      focus.decisions.add(decision.id);
      add(focus.nodes, [decision.producer, decision.consumer]);
      add(focus.kernels, [...decision.kernels, decision.from_kernel]);
      focus.primaryKernel = decision.kernels[0] || decision.from_kernel || null;
    } else if (selection.kind === "buffer") {
      focusBuffer(this, focus, selection.id);   // memory_panel.js
    } else if (selection.kind === "realize") {
      const realize = this.data.realizes[Number(String(selection.id).slice(1))];
      if (realize) {
        add(focus.kernels, realize.kernels);
        focus.primaryKernel = realize.kernels[realize.kernels.length - 1];
      }
    }
    return focus;
  }

  select(selection, origin) {
    this.focus = this.focusOf(selection, origin);
    for (const panel of this.panels) panel.update(this.focus);
    try {
      this.model.set("selection", { kind: selection.kind, id: selection.id });
      this.model.save_changes();
    } catch (error) { /* saved state without a kernel: selection stays in the browser */ }
  }

  toggleExpand(kernelId) {
    if (this.expanded.has(kernelId)) this.expanded.delete(kernelId);
    else {
      const size = [...this.expanded].reduce((n, id) => n + this.kernels.get(id).fused.length, 0);
      if (size + this.kernels.get(kernelId).fused.length > EXPAND_LIMIT) {
        window.alert(`tinylab: expanding this kernel would draw more than ${EXPAND_LIMIT} ops; ` +
                     "collapse others first");
        return;
      }
      this.expanded.add(kernelId);
    }
    this.rerender();
  }

  collapseAll() { this.expanded.clear(); this.rerender(); }

  rerender() { for (const panel of this.panels) panel.render(); }

  scenarios() {
    const first = this.data.realizes.find((r) => r.what_if && r.what_if.length);
    return first ? first.what_if.map(({ key, title, description }) => ({ key, title, description })) : [];
  }

  setWhatIf(key) {
    this.whatIfKey = key;
    this.whatIfDecisions = new Set();
    this.whatIfKernels = new Set();
    const pairs = new Set();
    for (const realize of this.data.realizes) {
      const answer = (realize.what_if || []).find((a) => a.key === key);
      for (const cut of (answer && answer.new_cuts) || []) {
        pairs.add(`${realize.index}|${cut.producer}|${cut.consumer}`);
      }
    }
    for (const decision of this.data.decisions) {
      if (pairs.has(`${decision.realize}|${decision.producer}|${decision.consumer}`)) {
        this.whatIfDecisions.add(decision.id);
        for (const kernel of decision.kernels) this.whatIfKernels.add(kernel);
      }
    }
    this.rerender();
  }
}

// "Run on this browser's GPU": the kernel's WGSL and recorded buffers come from the Python kernel
// on request (custom messages), never with the model, and only when the learner clicks.
const REPLY_TIMEOUT_MS = 20000;

Inspector.prototype.requestKernelData = function (kernelId) {
  return askKernel(this, { type: "webgpu-request", kernel: kernelId }, REPLY_TIMEOUT_MS,
    "no reply from the Python kernel that recorded this trace (the recorded buffers live there; " +
    "this view is not connected to it): run the cell again");
};

// A request to the Python kernel (a custom message with a `request` id), resolved with
// { content, buffers } when receive() gets the reply with the same id.
function askKernel(app, message, timeoutMs, noReply) {
  app.pending = app.pending || new Map();
  app.requests = (app.requests || 0) + 1;
  const request = `r${app.requests}`;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { app.pending.delete(request); reject(new Error(noReply)); }, timeoutMs);
    app.pending.set(request, (content, buffers) => { clearTimeout(timer); resolve({ content, buffers }); });
    try {
      app.model.send({ ...message, request });
    } catch (error) {   // a saved page: no kernel to send to
      clearTimeout(timer);
      app.pending.delete(request);
      reject(new Error("not connected to a Python kernel"));
    }
  });
}

Inspector.prototype.receive = function (message, buffers) {
  if (!message || !message.request || !this.pending) return;   // replies to webgpu / what-if requests
  const resolve = this.pending.get(message.request);
  if (!resolve) return;
  this.pending.delete(message.request);
  resolve(message, (buffers || []).map((view) => new Uint8Array(view.buffer, view.byteOffset, view.byteLength)));
};

// A program's texts as HTML highlighted by Pygments (widgets/highlight.py): carried by the
// model in a saved page, else asked of the Python kernel once per program; null where neither
// answers (the panels keep the plain text).
Inspector.prototype.highlighted = function (name) {
  const program = (this.data.programs || {})[name];
  if (!program) return Promise.resolve(null);
  if (program.html) return Promise.resolve(program.html);
  this.highlights = this.highlights || new Map();
  if (!this.highlights.has(name)) {
    this.highlights.set(name, askKernel(this, { type: "highlight-request", program: name },
      REPLY_TIMEOUT_MS, "no highlighting").then(({ content }) => content.html || null, () => null));
  }
  return this.highlights.get(name);
};

Inspector.prototype.webgpu = function () {
  if (!this.gpu) this.gpu = openWebGPU().catch((error) => { this.gpu = null; throw error; });
  return this.gpu;
};

function render({ model, el }) {
  el.classList.add("tinylab-widget");
  const app = new Inspector(model, el);
  app.mount();
  const receive = (message, buffers) => app.receive(message, buffers);
  model.on("msg:custom", receive);
  const refresh = () => app.mount();
  const follow = () => {
    const selection = model.get("selection") || {};
    const current = app.focus ? app.focus.selection : null;
    if (current && (selection.kind !== current.kind || selection.id !== current.id)) {
      app.focus = app.focusOf(selection, "python");
      for (const panel of app.panels || []) panel.update(app.focus);
    }
  };
  model.on("change:data", refresh);
  model.on("change:selection", follow);
  return () => {
    model.off("change:data", refresh); model.off("change:selection", follow);
    model.off("msg:custom", receive);
  };
}

export default { render };
