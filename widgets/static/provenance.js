// The provenance panel: the selected kernel's source in C / OpenCL / CUDA side by side, rows
// aligned where the loop structure agrees (model programs[].aligned), each line knowing the graph
// nodes it computes (programs[].lines -> kernels[].ast_nodes). Click a line: its nodes light up in
// the graph (the kernel is expanded) and the user lines that built them are listed. Select a node
// in the graph, or click a user line: the source lines it became light up in every language.

class ProvenancePanel {
  constructor(app) {
    this.app = app;
    this.hit = { nodes: new Set(), lines: new Set(), users: [] };
    this.note = h("span", { class: "tl-muted" });
    this.body = h("div", { class: "tl-prov-body" });
    this.users = h("div", { class: "tl-prov-users" });
    this.element = h("div", { class: "tl-panel tl-provenance" },
      h("div", { class: "tl-toolbar" }, h("b", {}, "Provenance"), this.note), this.users, this.body);
  }

  render() {   // a redraw (a kernel expanded, say) keeps what is lit
    this.draw(this.app.kernels.get(this.app.focus.primaryKernel));
    this.paint();
  }

  update(focus) {
    const kernel = this.app.kernels.get(focus.primaryKernel);
    if (!kernel || kernel.id !== this.kernelId) this.draw(kernel);
    if (focus.origin !== "provenance") {
      if (focus.selection.kind === "node") this.fromNodes([focus.selection.id], false);
      else this.clear();
    }
    this.paint();
  }

  draw(kernel) {
    this.kernelId = kernel ? kernel.id : null;
    this.kernel = kernel;
    this.program = kernel ? this.app.data.programs[kernel.name] : null;
    this.cells = [];   // {language, line, element}
    const lines = this.program && this.program.lines;
    if (!kernel || !lines || !Object.keys(lines).length || !kernel.ast_nodes) {
      this.note.textContent = kernel ? "no line map recorded for this kernel" :
        "select a kernel: click a source line to see the ops and your lines it came from";
      this.body.replaceChildren();
      return;
    }
    this.note.textContent = `${kernel.name}: click a line of source, an op in the graph, or one of your lines`;
    const aligned = this.program.aligned || { languages: [], rows: [] };
    const languages = aligned.languages.length ? aligned.languages : Object.keys(lines).slice(0, 1);
    const rows = aligned.rows.length ? aligned.rows :
      this.sourceLines(languages[0]).map((_, number) => [number]);
    const head = h("tr", {}, ...languages.map((language) => h("th", {}, language +
      (language === this.program.language ? " ✓" : ""))));
    const header = aligned.header_rows || 0;   // includes, typedefs, helpers: hidden at first
    const body = rows.map((row, index) => h("tr", {
      class: index < header ? "tl-prov-header" : "", hidden: index < header && !this.showHeader,
    }, ...languages.map((language, column) => this.cell(language, row[column]))));
    const toggle = header ? h("button", {
      class: "tl-button tl-prov-toggle",
      onclick: () => { this.showHeader = !this.showHeader; this.draw(kernel); this.paint(); },
    }, this.showHeader ? "hide includes and helpers" : `show ${header} lines of includes and helpers`)
      : null;
    this.body.replaceChildren(toggle || "", h("table", { class: "tl-prov-table" },
                                              h("thead", {}, head), h("tbody", {}, ...body)));
  }

  sourceLines(language) { return (this.program.sources[language] || "").split("\n"); }

  cell(language, line) {
    if (line === null || line === undefined) return h("td", { class: "tl-prov-gap" });
    const ids = this.nodesOfLine(language, line);
    const element = h("td", {
      class: "tl-prov-line" + (ids.length ? " tl-prov-mapped" : ""),
      dataset: { language, line: String(line), nodes: ids.join(" ") },
      title: ids.length ? ids.map((id) => this.app.nodes.get(id).op).join(" ") : "",
      onclick: () => this.clickLine(language, line),
    }, this.sourceLines(language)[line] || " ");
    this.cells.push({ language, line, element, ids });
    return element;
  }

  nodesOfLine(language, line) {
    const indices = ((this.program.lines[language] || [])[line]) || [];
    const ids = new Set();
    for (const index of indices) for (const id of this.kernel.ast_nodes[index] || []) ids.add(id);
    return [...ids].sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
  }

  clickLine(language, line) {
    const ids = this.nodesOfLine(language, line);
    this.fromNodes(ids, true);
    this.hit.clicked = `${language}:${line}`;
    const kernel = this.kernel;
    if (ids.length && !this.app.expanded.has(kernel.id)) {
      this.app.expanded.add(kernel.id);   // the ops are drawn only inside an expanded kernel
      this.app.rerender();                // (calls render() here, which repaints)
      return;
    }
    this.paint();
  }

  clickUser(line) {
    const ids = this.app.data.nodes.filter((node) => node.line === line).map((node) => node.id);
    this.fromNodes(ids, false);
    this.hit.users = [line];
    this.paint();
  }

  fromNodes(ids, listUsers) {
    const wanted = new Set(ids);
    this.hit = { nodes: wanted, lines: new Set(), users: [] };
    for (const { language, line, ids: lineIds } of this.cells || []) {
      if (lineIds.some((id) => wanted.has(id))) this.hit.lines.add(`${language}:${line}`);
    }
    const users = new Set();
    for (const id of wanted) { const node = this.app.nodes.get(id); if (node && node.line) users.add(node.line); }
    this.hit.users = [...users];
    this.hit.listUsers = listUsers;
  }

  clear() { this.hit = { nodes: new Set(), lines: new Set(), users: [] }; }

  paint() {
    for (const { language, line, element } of this.cells || []) {
      element.classList.toggle("tl-prov-hit", this.hit.lines.has(`${language}:${line}`));
      element.classList.toggle("tl-prov-clicked", this.hit.clicked === `${language}:${line}`);
    }
    let shown = null;
    for (const box of this.app.el.querySelectorAll(".tl-box[data-ref]")) {
      const lit = this.hit.nodes.has(box.dataset.ref);
      box.classList.toggle("tl-prov-hit", lit);
      if (lit && !shown) shown = box.dataset.id;
    }
    const graph = this.app.panels.find((panel) => panel instanceof GraphPanel);
    if (shown && graph && this.hit.clicked !== undefined) graph.reveal(shown);   // scroll to it
    this.element.dataset.nodes = [...this.hit.nodes].join(" ");
    const first = this.element.querySelector(".tl-prov-hit");
    if (first && this.hit.clicked === undefined) first.scrollIntoView({ block: "nearest" });
    this.users.replaceChildren(...(this.hit.users.length ? [h("span", { class: "tl-muted" }, "your lines: ")] : []),
      ...this.hit.users.map((line) => h("a", {
        class: "tl-prov-user", href: "#", dataset: { line },
        onclick: (event) => { event.preventDefault(); this.clickUser(line); },
      }, line)));
  }
}
