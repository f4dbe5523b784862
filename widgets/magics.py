"""The %tinygrad magics. `%%tinygrad [--backend CUDA] [--source] [--graph] [--debug N] [--static]`
runs a cell traced and shows the inspector under its output; `%tinygrad EXPR` shows the kernels of
one expression; `%tinygrad on|off` inspects every cell (IPython pre/post_run_cell events).
Registered by `load_ipython_extension` (`%load_ext tinylab` calls it).
"""
from __future__ import annotations

import linecache
import os

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from tinylab import Context, Device, trace
from tinylab.engine import trace as tracing
from tinylab.engine.backends import shown_backends
from tinylab.inspection.sources import language_of

from .inspector import Inspector, static_bundle

LINE_OPTIONS = {"--backend": True, "--debug": True, "--source": False, "--graph": False,
                "--static": False}   # option -> takes a value


def run_settings(backend: str, debug: int | None) -> tuple[dict, str]:
    """Context settings for a traced run, and a note when the backend can only be rendered."""
    settings: dict = {} if debug is None else {"DEBUG": debug}
    if not backend:
        return settings, ""
    try:
        device = Device.canonicalize(backend)
        usable = Device[device].available
    except Exception:  # an unknown name: render what we can, run on the default device
        device, usable = backend, False
    if usable:
        settings["DEV"] = device
        return settings, ""
    return settings, (f"tinylab: {backend} cannot run here; the cell ran on {Device.DEFAULT} and "
                      f"its {language_of(backend)} source is rendered (not run)")


def show_trace(recorded, backend: str = "", source: bool = False, graph: bool = False,
               static: bool = False, select_last: bool = False) -> Inspector | None:
    """Display the inspector (or its static HTML) for a trace; says so when nothing ran."""
    if not recorded.realizes:
        print("tinylab: no kernels ran (nothing was realized: call .numpy(), .item() or "
              ".realize() on a result)")
        return None
    if static:
        display(static_bundle(recorded), raw=True)
        return None
    panels = [name for name, wanted in (("graph", graph), ("kernels", source)) if wanted]
    if panels:
        panels.append("why")
    if source:   # the source's provenance and its passes belong with it
        panels += ["provenance", "passes"]
    backends = shown_backends() + ((backend,) if backend else ())
    inspector = Inspector(recorded, panels=panels or None, backends=backends,
                          source_language=language_of(backend) if backend else "")
    if select_last and inspector.data["kernels"]:
        inspector.select("kernel", inspector.data["kernels"][-1]["id"])
    display(inspector)
    return inspector


def split_line_options(line: str) -> tuple[list[str], str]:
    """Leading --options of `%tinygrad --debug 2 EXPR`, and the expression after them."""
    words, rest = [], line.strip()
    while rest.startswith("--"):
        option, _, rest = rest.partition(" ")
        words.append(option)
        if LINE_OPTIONS.get(option):
            value, _, rest = rest.strip().partition(" ")
            words.append(value)
        rest = rest.strip()
    return words, rest


@magics_class
class TinygradMagics(Magics):
    def __init__(self, shell):
        super().__init__(shell)
        self.last_trace = None
        self.running = False
        self.auto = AutoInspect(self)

    @magic_arguments()
    @argument("--backend", default="", help="run on this device if it works here, else render "
                                            "its source (CUDA, CL, CPU)")
    @argument("--source", action="store_true", help="show the kernels and their source")
    @argument("--graph", action="store_true", help="show the graph")
    @argument("--debug", type=int, default=None, help="DEBUG level while the cell runs")
    @argument("--static", action="store_true", help="script-free HTML only (no widget)")
    @argument("expression", nargs="*", help="%%tinygrad EXPR, or on / off")
    @line_cell_magic
    def tinygrad(self, line: str, cell: str | None = None):
        if cell is None:
            return self.line(line)
        args = parse_argstring(self.tinygrad, line)
        settings, note = run_settings(args.backend, args.debug)
        self.running = True
        try:
            with Context(**settings), trace() as recorded:
                self.shell.run_cell(cell, store_history=False)
        finally:
            self.running = False
        self.last_trace = recorded
        if note:
            print(note)
        show_trace(recorded, args.backend, args.source, args.graph, args.static)

    def line(self, line: str):
        words, expression = split_line_options(line)
        if expression in ("on", "off") and not words:
            self.auto.switch(expression == "on")
            print(f"tinylab: inspecting every cell {'on' if expression == 'on' else 'off'}")
            return None
        if not expression:
            print("usage: %tinygrad EXPR | %tinygrad on | %tinygrad off | %%tinygrad [options]")
            return None
        args = parse_argstring(self.tinygrad, " ".join(words))
        settings, note = run_settings(args.backend, args.debug)
        with Context(**settings), trace() as recorded:
            _realize(evaluate(self.shell, expression))
        for record in recorded.realizes:   # realized by this magic: credit the expression
            if record.forced_by.startswith(MAGIC_FILE):
                record.forced_by = f"%tinygrad  {expression}"
        self.last_trace = recorded
        if note:
            print(note)
        show_trace(recorded, args.backend, True, args.graph, args.static, select_last=True)
        return None


EXPRESSION_FILE = "<tinygrad-expression>"
MAGIC_FILE = os.path.basename(__file__) + ":"


def evaluate(shell, expression: str):
    """eval in the user namespace, with the expression in linecache so the trace records it as
    the line that built each node."""
    linecache.cache[EXPRESSION_FILE] = (len(expression), None, [expression + "\n"],
                                        EXPRESSION_FILE)
    code = compile(expression, EXPRESSION_FILE, "eval")
    return eval(code, shell.user_global_ns, shell.user_ns)


def _realize(value) -> None:
    from tinylab import Tensor
    tensors = [value] if isinstance(value, Tensor) else \
        [v for v in value if isinstance(v, Tensor)] if isinstance(value, (tuple, list)) else []
    if tensors:
        Tensor.realize(*tensors)


class AutoInspect:
    """`%tinygrad on`: trace each cell from pre_run_cell to post_run_cell, then show it."""

    def __init__(self, magics: TinygradMagics):
        self.magics = magics
        self.enabled = False
        self.context = None
        self.recorded = None

    def switch(self, on: bool) -> None:
        events = self.magics.shell.events
        if on and not self.enabled:
            events.register("pre_run_cell", self.pre_run_cell)
            events.register("post_run_cell", self.post_run_cell)
        elif not on and self.enabled:
            events.unregister("pre_run_cell", self.pre_run_cell)
            events.unregister("post_run_cell", self.post_run_cell)
        self.enabled = on

    def pre_run_cell(self, info) -> None:
        raw = (getattr(info, "raw_cell", "") or "").lstrip()
        if self.magics.running or self.context is not None or raw.startswith("%%tinygrad") \
                or raw.startswith("%tinygrad"):
            return
        self.context = trace()
        self.recorded = self.context.__enter__()

    def post_run_cell(self, result) -> None:
        if self.context is None or self.magics.running:
            return
        context, recorded = self.context, self.recorded
        self.context = self.recorded = None
        try:
            context.__exit__(None, None, None)
        except ValueError:  # the cell ran in another context: drop the trace by hand
            tracing.suspend(recorded)
        if recorded.realizes:
            self.magics.last_trace = recorded
            show_trace(recorded)


def load_ipython_extension(ipython) -> None:
    ipython.register_magics(TinygradMagics(ipython))


def unload_ipython_extension(ipython) -> None:
    magics = ipython.magics_manager.registry.get("TinygradMagics")
    if magics is not None:
        magics.auto.switch(False)


def last_trace():
    """The Trace of the last %%tinygrad / %tinygrad cell in this IPython session (or None)."""
    from IPython import get_ipython
    shell = get_ipython()
    magics = shell.magics_manager.registry.get("TinygradMagics") if shell else None
    return magics.last_trace if magics is not None else None
