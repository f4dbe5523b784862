// The "why" panel: every fusion decision (kernel boundaries first, merges on request) with its
// reason and explanation, and a "what if" switch that shows the schedule with a fusion rule off
// (kernel count, bytes moved, the edges that would be cut), from answers computed in Python when
// the widget was built, so it also works from saved widget state. Driven by inspector.js.

const MAX_LISTED_DECISIONS = 400;
const MAX_LISTED_CUTS = 8;

class WhyPanel {
  constructor(app) {
    this.app = app;
    this.showMerges = false;
    this.items = new Map();
    this.list = h("div", { class: "tl-decisions" });
    this.whatIf = h("div", { class: "tl-what-if" });
    const cuts = app.data.decisions.filter((d) => !d.merged).length;
    const counts = `${cuts} kernel ${cuts === 1 ? "boundary" : "boundaries"}, ` +
                   plural(app.data.decisions.length - cuts, "merge");
    const toggle = h("input", { type: "checkbox", onchange: (event) => {
      this.showMerges = event.target.checked;
      this.render();
    } });
    this.element = h("div", { class: "tl-panel tl-why" },
      h("div", { class: "tl-toolbar" }, h("b", {}, "Why"), h("span", { class: "tl-muted" }, counts),
        h("label", { class: "tl-muted" }, toggle, " show merges")),
      this.list, this.whatIfSelector(), this.whatIf);
  }

  whatIfSelector() {
    const options = this.app.scenarios().map((s) => h("option", { value: s.key }, s.title));
    const choose = (event) => this.app.setWhatIf(event.target.value);
    const select = h("select", { class: "tl-what-if-select", onchange: choose },
      h("option", { value: "" }, "actual schedule"), ...options);
    return h("div", { class: "tl-toolbar" }, h("b", {}, "What if"), select,
      h("span", { class: "tl-muted" }, "re-scheduled with a fusion rule off"));
  }

  render() {
    this.renderList(this.app.focus);
    this.renderWhatIf();
    this.update(this.app.focus);
  }

  visible(focus) {
    return this.app.data.decisions.filter((d) => !d.merged || this.showMerges || focus.decisions.has(d.id));
  }

  renderList(focus) {
    const shown = this.visible(focus);
    this.items.clear();
    const rows = shown.slice(0, MAX_LISTED_DECISIONS).map((decision) => this.decisionRow(decision));
    const more = shown.length - MAX_LISTED_DECISIONS;
    if (more > 0) rows.push(h("div", { class: "tl-muted" }, `… ${more} more`));
    if (!rows.length) rows.push(h("div", { class: "tl-muted" }, "no decisions (nothing was scheduled)"));
    this.list.replaceChildren(...rows);
  }

  decisionRow(decision) {
    const select = () => this.app.select({ kind: "decision", id: decision.id }, "why");
    const kind = decision.merged ? "tl-merged" : "tl-cut";
    const row = h("div", { class: `tl-decision ${kind}`, dataset: { id: decision.id }, onclick: select },
      h("span", { class: "tl-badge" }, decision.merged ? "merged" : "CUT"),
      h("span", { class: "tl-reason" }, decision.reason),
      h("span", { class: "tl-edge-text" }, "  " + decision.edge),
      h("div", { class: "tl-muted tl-explanation" }, decision.detail || decision.explanation));
    this.items.set(decision.id, row);
    return row;
  }

  update(focus) {
    const shown = this.visible(focus).slice(0, MAX_LISTED_DECISIONS);
    if (shown.length !== this.items.size || shown.some((d) => !this.items.has(d.id))) this.renderList(focus);
    let first = null;
    for (const [id, row] of this.items) {
      const selected = focus.selection.kind === "decision" && focus.selection.id === id;
      row.classList.toggle("tl-selected", selected);
      row.classList.toggle("tl-related", !selected && focus.decisions.has(id));
      row.classList.toggle("tl-would-cut", this.app.whatIfDecisions.has(id));
      if ((selected || focus.decisions.has(id)) && !first) first = row;
    }
    if (first && focus.origin !== "why") first.scrollIntoView({ block: "nearest" });
  }

  renderWhatIf() {
    const key = this.app.whatIfKey;
    if (!key) {
      this.whatIf.replaceChildren();
      return;
    }
    const blocks = this.app.data.realizes.map((realize) => {
      const answer = (realize.what_if || []).find((a) => a.key === key);
      if (!answer) return null;
      if (answer.error) return h("div", {}, `${realize.forced_code}: not schedulable: ${answer.error}`);
      return this.answerBlock(realize, answer);
    });
    const scenario = this.app.scenarios().find((s) => s.key === key);
    const description = h("div", { class: "tl-muted" }, scenario ? scenario.description : "");
    this.whatIf.replaceChildren(description, ...blocks.filter(Boolean));
  }

  answerBlock(realize, answer) {
    const sign = answer.delta_kernels >= 0 ? "+" : "";
    const delta = `${sign}${answer.delta_kernels}`;
    const numbers = `kernels ${answer.base_kernels} → ${answer.kernels} (${delta}) · ` +
      `bytes read+written ${formatBytes(answer.base_bytes)} → ${formatBytes(answer.bytes)} · ` +
      plural(answer.new_cut_count, "new cut");
    const pick = (cut) => cut.consumer && this.app.select({ kind: "node", id: cut.consumer }, "why");
    const cuts = answer.new_cuts.slice(0, MAX_LISTED_CUTS).map((cut) => h("li", {
      class: "tl-link", onclick: () => pick(cut),
    }, cut.text));
    const more = answer.new_cut_count - MAX_LISTED_CUTS;
    if (more > 0) cuts.push(h("li", { class: "tl-muted" }, `… ${more} more`));
    const kernels = answer.items.map((item) => `[${item.ops.join(" ")}]`).join(" ");
    return h("div", { class: "tl-what-if-realize" },
      h("div", {}, h("b", {}, realize.forced_code)),
      h("div", { class: "tl-what-if-numbers" }, numbers),
      cuts.length ? h("ul", {}, ...cuts) : null,
      h("div", { class: "tl-muted" }, "kernels: " + kernels));
  }
}
