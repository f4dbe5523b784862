// The "What-if, measured" panel: every scenario of one realize (fusion rules off, no optimization
// actions, BEAM=2, matmul not packed) with Δkernels and Δbytes from the model, and a "run" button
// that asks the Python kernel to re-schedule, compile and time it beside the actual schedule
// (inspection/what_if_run.py). Results come back in the model (answer.measured), so they stay in
// the saved widget state and in the static HTML.

const WHAT_IF_TIMEOUT_MS = 600000;   // BEAM=2 over a big realize takes minutes

function signed(value, format) {
  if (value === null || value === undefined) return "–";
  return (value > 0 ? "+" : value < 0 ? "−" : "±") + format(Math.abs(value));
}

class WhatIfPanel {
  constructor(app) {
    this.app = app;
    // kept on the app, so the new model a run brings back keeps the realize in view
    this.realizeIndex = app.whatIfRealize ??
      Math.max(0, app.data.realizes.findIndex((r) => r.what_if && r.what_if.length));
    this.status = new Map();    // "realize|key" -> text while a run is under way or failed
    this.body = h("div", { class: "tl-whatif-body" });
    this.element = h("div", { class: "tl-panel tl-whatif" },
      h("div", { class: "tl-toolbar" }, h("b", {}, "What-if, measured"),
        h("span", { class: "tl-muted" },
          "run a scenario: it is re-scheduled, compiled and timed beside the actual schedule")),
      this.body);
  }

  render() {
    const realize = this.app.data.realizes[this.realizeIndex];
    if (!realize || !realize.what_if || !realize.what_if.length) {
      this.body.replaceChildren(h("div", { class: "tl-muted" }, "no what-if answers in this trace"));
      return;
    }
    const choose = (event) => {
      this.realizeIndex = this.app.whatIfRealize = Number(event.target.value);
      this.render();
    };
    const select = h("select", { class: "tl-whatif-realize", onchange: choose },
      ...this.app.data.realizes.filter((r) => r.what_if && r.what_if.length).map((r) =>
        h("option", { value: String(r.index) }, `${r.index + 1}: ${r.forced_code}`)));
    select.value = String(this.realizeIndex);
    const head = h("tr", {}, ...["scenario", "kernels", "Δkernels", "Δbytes", "actual time",
      "scenario time", "Δtime", ""].map((title) => h("th", {}, title)));
    const rows = realize.what_if.map((answer) => this.row(realize, answer));
    this.body.replaceChildren(h("div", { class: "tl-toolbar" }, "realize ", select),
      h("table", { class: "tl-table tl-whatif-table" }, h("thead", {}, head), h("tbody", {}, ...rows)));
  }

  row(realize, answer) {
    const measured = answer.measured;
    const state = this.status.get(`${realize.index}|${answer.key}`);
    const button = h("button", { class: "tl-button tl-whatif-run", dataset: { key: answer.key },
      disabled: state === "running…", onclick: () => this.run(realize, answer) },
      measured ? "run again" : "run");
    const cells = answer.error ? [h("td", { colspan: 6, class: "tl-muted" }, answer.error)] : [
      h("td", {}, `${answer.base_kernels} → ${answer.kernels}`),
      h("td", {}, signed(answer.delta_kernels, String)),
      h("td", {}, signed(answer.delta_bytes, formatBytes)),
      h("td", { class: "tl-whatif-actual" }, measured ? formatSeconds(measured.actual_s) : ""),
      h("td", { class: "tl-whatif-scenario" }, measured ? formatSeconds(measured.scenario_s) : (state || "")),
      h("td", { class: "tl-whatif-delta" }, measured ? this.deltaText(measured) : "")];
    return h("tr", { class: `tl-whatif-row${measured ? " tl-whatif-measured" : ""}`,
      dataset: { key: answer.key }, title: answer.description },
      h("td", {}, answer.title), ...cells, h("td", {}, button));
  }

  deltaText(measured) {   // the median ratio with its quartiles and verdict (engine/timing.py)
    const [low, high] = measured.ratio_quartiles || [measured.ratio, measured.ratio];
    const ratio = measured.ratio ? ` (${measured.ratio.toFixed(2)}x, quartiles ` +
      `${low.toFixed(2)}-${high.toFixed(2)}: ${measured.verdict || ""})` : "";
    return signed(measured.delta_s, formatSeconds) + ratio;
  }

  async run(realize, answer) {
    const key = `${realize.index}|${answer.key}`;
    this.status.set(key, "running…");
    this.render();
    try {
      const reply = await askKernel(this.app, { type: "what-if-run", realize: realize.index,
        key: answer.key }, WHAT_IF_TIMEOUT_MS, "no reply from the Python kernel (this view is " +
        "not connected to it): run the cell again");   // askKernel: inspector.js
      if (reply.content.error) throw new Error(reply.content.error);
      this.status.delete(key);   // the new model (change:data) shows the measurement
    } catch (error) {
      this.status.set(key, `not run: ${error.message || error}`);
      this.render();
    }
  }

  update(_focus) {}
}
