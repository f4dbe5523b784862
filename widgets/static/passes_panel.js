// The passes panel: one kernel's compilation step by step (model programs[].steps): kernel AST,
// plan before actions, the plan after each optimization action, the linear program, the source.
// Each step shows its text and what changed from the step before (a diff); step with the buttons
// or the left / right arrow keys while the panel has focus. Follows the selected kernel.

class PassesPanel {
  constructor(app) {
    this.app = app;
    this.index = 0;
    this.showDiff = true;
    this.title = h("span", { class: "tl-pass-title" });
    this.previous = h("button", { class: "tl-button tl-pass-prev", title: "previous step (←)",
                                  onclick: () => this.step(-1) }, "◀");
    this.next = h("button", { class: "tl-button tl-pass-next", title: "next step (→)",
                              onclick: () => this.step(1) }, "▶");
    this.mode = h("button", { class: "tl-button tl-pass-mode", onclick: () => this.toggle() });
    this.diff = h("pre", { class: "tl-pass-diff" });
    this.text = h("pre", { class: "tl-pass-step-text tl-code" });
    this.list = h("ol", { class: "tl-pass-list" });
    this.element = h("div", { class: "tl-panel tl-passes", tabindex: "0",
                              onkeydown: (event) => this.key(event) },
      h("div", { class: "tl-toolbar" }, h("b", {}, "Passes"), this.previous, this.next,
        this.title, this.mode),
      h("div", { class: "tl-pass-columns" }, this.list,
        h("div", { class: "tl-pass-view" }, this.diff, this.text)));
  }

  render() { this.kernelName = undefined; this.update(this.app.focus); }

  update(focus) {
    const kernel = this.app.kernels.get(focus.primaryKernel);
    const name = kernel ? kernel.name : null;
    if (name !== this.kernelName) {
      this.kernelName = name;
      const program = name ? this.app.data.programs[name] : null;
      this.steps = (program && program.steps) || [];
      this.index = 0;
      this.list.replaceChildren(...this.steps.map((step, index) => h("li", {
        class: "tl-pass-item", dataset: { index: String(index) }, onclick: () => this.go(index),
      }, step.title)));
    }
    this.show();
  }

  key(event) {
    if (event.key === "ArrowRight" || event.key === "ArrowDown") this.step(1);
    else if (event.key === "ArrowLeft" || event.key === "ArrowUp") this.step(-1);
    else return;
    event.preventDefault();
  }

  step(delta) { this.go(this.index + delta); }

  go(index) {
    this.index = Math.max(0, Math.min(this.steps.length - 1, index));
    this.show();
  }

  toggle() { this.showDiff = !this.showDiff; this.show(); }

  show() {
    const step = this.steps[this.index];
    this.element.dataset.step = String(this.index);
    if (!step) {
      this.title.textContent = "select a kernel to step through how it was compiled";
      this.diff.replaceChildren(); this.text.replaceChildren();
      this.previous.disabled = this.next.disabled = true;
      return;
    }
    this.title.textContent = `step ${this.index + 1} of ${this.steps.length}: ${step.title}`;
    this.previous.disabled = this.index === 0;
    this.next.disabled = this.index === this.steps.length - 1;
    for (const item of this.list.children) {
      item.classList.toggle("tl-selected", Number(item.dataset.index) === this.index);
    }
    const hasDiff = this.index > 0;
    this.mode.textContent = this.showDiff ? "hide diff" : "show diff";
    this.mode.disabled = !hasDiff;
    this.diff.hidden = !(hasDiff && this.showDiff);
    this.diff.replaceChildren(...(step.diff || "(no change)").split("\n").map((line) =>
      h("div", { class: line.startsWith("+") ? "tl-diff-add" : line.startsWith("-") ? "tl-diff-del"
                        : line.startsWith("@") ? "tl-diff-hunk" : "tl-diff-same" }, line || " ")));
    showCode(this.text, undefined, step.text);
    const [name, index] = [this.kernelName, this.index];
    this.app.highlighted(name).then((html) => {
      if (html && this.kernelName === name && this.index === index) {
        showCode(this.text, html.steps[index], step.text);
      }
    });
  }
}
