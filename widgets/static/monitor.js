// The training monitor widget (anywidget front end). Takes traits losses, steps, kernels,
// total_steps, title, finished, work from tinylab_widgets/monitor.py; gives a progress bar, the
// compiles and searches under way (done / total, time left), a loss curve, the latest step's time
// split (compile / kernels / rest) and its kernel table, redrawn whenever the loop publishes.

function lossCurve(losses) {
  const width = 400, height = 150, pad = 6;
  const chart = svg("svg", { class: "tl-loss-curve", viewBox: `0 0 ${width} ${height}`,
                             preserveAspectRatio: "none" });
  if (losses.length < 2) return chart;
  const stride = Math.max(1, Math.floor(losses.length / 1000));
  const sampled = losses.filter((_, i) => i % stride === 0);
  const logScale = Math.min(...sampled) > 0 && Math.max(...sampled) / Math.min(...sampled) > 100;
  const points = logScale ? sampled.map(Math.log10) : sampled;
  const low = Math.min(...points), high = Math.max(...points);
  const span = high - low || 1;
  const coordinates = points.map((value, i) => {
    const x = pad + (i / (points.length - 1)) * (width - 2 * pad);
    const y = height - pad - ((value - low) / span) * (height - 2 * pad);
    return `${x.toFixed(1)},${y.toFixed(1)}`;
  });
  chart.append(svg("polyline", { points: coordinates.join(" ") }));
  if (logScale) {
    chart.append(svg("text", { x: width - pad, y: 12, "text-anchor": "end", "font-size": 10,
                               fill: "#64748b" }, "log scale"));
  }
  return chart;
}

function totals(steps) {
  const sum = (key) => formatSeconds(steps.reduce((total, step) => total + step[key], 0));
  return h("div", { class: "tl-muted" }, `all ${plural(steps.length, "step")}: ` +
    `compile ${sum("compile_s")}, kernels ${sum("run_s")}, Python/scheduling ${sum("other_s")}`);
}

function timeSplit(step) {
  if (!step) return h("div", { class: "tl-muted" }, "no step yet");
  const total = step.wall_s || 1e-9;
  const part = (name, value) => h("div", {
    class: `tl-split-${name}`, title: `${name} ${formatSeconds(value)}`,
    style: `width:${(100 * value / total).toFixed(1)}%`,
  });
  const split = h("div", { class: "tl-split" },
    part("compile", step.compile_s), part("run", step.run_s), part("other", step.other_s));
  return h("div", {}, split, h("div", { class: "tl-muted" },
    `step ${step.step}: ${formatSeconds(step.wall_s)} = compile ${formatSeconds(step.compile_s)} + ` +
    `kernels ${formatSeconds(step.run_s)} + Python/scheduling ${formatSeconds(step.other_s)}` +
    (step.replayed ? " (TinyJit replay)" : "")));
}

function kernelTable(kernels) {
  const header = ["kernel", "launches", "FLOPs", "bytes", "time", "compiled"].map((t) => h("th", {}, t));
  const rows = kernels.map((k) => h("tr", {},
    h("td", {}, k.name), h("td", {}, String(k.launches)), h("td", {}, formatCount(k.flops)),
    h("td", {}, formatBytes(k.bytes)), h("td", {}, k.run_s === null ? "replay" : formatSeconds(k.run_s)),
    h("td", {}, k.compiled ? `${k.compiled} (${formatSeconds(k.compile_s)})` : "cached")));
  const table = h("table", { class: "tl-table" },
    h("thead", {}, h("tr", {}, ...header)), h("tbody", {}, ...rows));
  return h("div", { class: "tl-table-scroll" }, table);
}

function headline(model, steps, losses) {
  const total = model.get("total_steps") || 0;
  const done = steps.length ? steps[steps.length - 1].step : 0;
  let text = `  step ${done}${total ? "/" + total : ""}`;
  if (losses.length) text += ` · loss ${losses[losses.length - 1].toPrecision(4)}`;
  if (model.get("finished")) return text + " · done";
  if (total && steps.length) {
    const perStep = steps.reduce((sum, step) => sum + step.wall_s, 0) / steps.length;
    text += ` · about ${formatSeconds((total - done) * perStep)} left`;
  }
  return text;
}

function workUnderWay(work) {
  if (!work.length) return null;
  return h("div", { class: "tl-work" }, ...work.map((task) => {
    const fraction = task.total ? Math.min(1, task.done / task.total) : 0;
    return h("div", { class: "tl-work-task" + (task.nested ? " tl-work-nested" : "") },
      h("div", { class: "tl-muted" }, task.text),
      h("div", { class: "tl-progress tl-work-bar" },
        h("div", { class: "tl-progress-bar", style: `width:${(100 * fraction).toFixed(1)}%` })));
  }));
}

function drawMonitor(model, el) {
  const losses = model.get("losses") || [], steps = model.get("steps") || [];
  const kernels = model.get("kernels") || [], total = model.get("total_steps") || 0;
  const done = steps.length ? steps[steps.length - 1].step : 0;
  const fraction = total ? Math.min(1, done / total) : 0;
  const progress = h("div", { class: "tl-progress-bar", style: `width:${(100 * fraction).toFixed(1)}%` });
  el.replaceChildren(h("div", { class: "tl-monitor" },
    h("div", {}, h("b", {}, model.get("title")),
      h("span", { class: "tl-muted" }, headline(model, steps, losses))),
    h("div", { class: "tl-progress" }, progress),
    workUnderWay(model.get("work") || []),
    h("div", { class: "tl-monitor-row" },
      h("div", {}, h("div", {}, "loss"), lossCurve(losses)),
      h("div", {}, h("div", {}, "time split of the latest step"), timeSplit(steps[steps.length - 1]),
        steps.length ? totals(steps) : null,
        slowestKernels(kernels),
        h("div", {}, `kernels of the latest step (${kernels.length})`), kernelTable(kernels)))));
}

function render({ model, el }) {
  el.classList.add("tinylab-widget");
  const redraw = () => drawMonitor(model, el);
  redraw();
  const names = ["losses", "steps", "kernels", "total_steps", "finished", "title", "work"];
  for (const name of names) model.on(`change:${name}`, redraw);
  return () => { for (const name of names) model.off(`change:${name}`, redraw); };
}

export default { render };
