// The training monitor's "slowest kernels" panel: the latest step's kernels by time, each with its
// share of the device's peak (% of the roof at its intensity, computed in Python by
// inspection/roofline.py), redrawn with the rest of the monitor on every publish.

const SLOWEST_SHOWN = 5;

function slowestKernels(kernels) {
  const timed = kernels.filter((k) => k.run_s).sort((a, b) => b.run_s - a.run_s).slice(0, SLOWEST_SHOWN);
  if (!timed.length) return null;
  const total = kernels.reduce((sum, k) => sum + (k.run_s || 0), 0);
  const rows = timed.map((k) => {
    const percent = k.percent_of_peak === null || k.percent_of_peak === undefined ? "–" : `${k.percent_of_peak.toFixed(1)}%`;
    const share = total ? (100 * k.run_s / total).toFixed(0) + "% of kernel time" : "";
    return h("tr", { class: "tl-slow-kernel", dataset: { name: k.name } },
      h("td", {}, k.name), h("td", {}, formatSeconds(k.run_s)), h("td", {}, share),
      h("td", { class: "tl-slow-peak" }, percent), h("td", { class: "tl-muted" }, k.bound || ""));
  });
  const header = ["kernel", "time", "share", "% of peak", "bound"].map((t) => h("th", {}, t));
  return h("div", { class: "tl-slowest" },
    h("div", {}, `slowest kernels of the latest step (of ${kernels.length})`),
    h("table", { class: "tl-table" }, h("thead", {}, h("tr", {}, ...header)), h("tbody", {}, ...rows)));
}
