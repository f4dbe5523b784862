"""Static HTML of a trace: script-free and inline-styled, so it reads the same in untrusted
notebooks, nbconvert, nbviewer and GitHub's preview: a headline, then each view's section
(view_registry.py lists them: the inline SVG of the graph collapsed by kernel, a <details> per
kernel with ops, reads, decisions, loop IR and highlighted source, the what-if answers; memory
and roofline in html_views.py). No ids; measured numbers only between html_views.MEASURED markers.
"""
from __future__ import annotations

from dataclasses import dataclass
from html import escape

from ..engine.backends import lexer_of
from ..schedule.items import ItemKind
from .kernel_graph import TRANSFORM_COLORS, ops_summary
from .html_views import measured, what_if_measured_html
from .model import shape_text, variables_text
from .passes import passes_html
from .provenance import gutter_labels, kernel_user_lines
from .svg import graph_svg
from .text import elsewhere_lines, plural, size_text, summary_text, what_if_lines

BOX = ("font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;"
       "border:1px solid #cbd5e1;border-radius:6px;padding:8px 12px;margin:4px 0;")
PRE = "font-size:12px;background:#f8fafc;padding:6px 8px;overflow-x:auto;margin:4px 0;"
MUTED = "color:#475569;"
GUTTER = "color:#7c3aed;background:#f5f3ff;flex:none;text-align:right;"
MAX_SOURCE_LINES = 200   # longer sources are cut short in static HTML (the widget shows all)
MAX_STATIC_PASSES = 1    # distinct kernels whose passes static HTML lists (the widget: every
                         # one); each step the kernel's view already shows is not repeated


STATIC_TAGS = (("Comment", "i"), ("Keyword", "b"))  # the widget's palette: keywords bold, comments
                                                    # italic; every other token stays plain text


def highlight(source: str, language: str) -> str:
    """Keywords (types included) in <b>, comments in <i>, the rest escaped, in one <pre>: a
    saved notebook carries no <span style> per token. A plain <pre> without Pygments."""
    try:
        from pygments import lex
        from pygments.lexers import get_lexer_by_name
    except ImportError:
        return f'<pre style="{PRE}">{escape(source)}</pre>'
    lexer = get_lexer_by_name(lexer_of(language))  # the backend registry's row names it
    runs: list[list] = []   # [tag or None, text]: a token's tag, spaces joining the run before
    for token, text in lex(source, lexer):
        tag = next((tag for kind, tag in STATIC_TAGS if str(token).startswith(f"Token.{kind}")),
                   None)
        if runs and (runs[-1][0] == tag or (text.isspace() and "\n" not in text)):
            runs[-1][1] += text
        else:
            runs.append([tag, text])
    parts = []
    for tag, text in runs:
        body = text.rstrip("\n")
        end = text[len(body):]
        parts.append(f"<{tag}>{escape(body)}</{tag}>{end}" if tag and body else escape(text))
    return f'<pre style="{PRE}">{"".join(parts).rstrip()}</pre>'


def _source_block(source: str, language: str) -> str:
    lines = source.splitlines()
    if len(lines) <= MAX_SOURCE_LINES:
        return highlight(source, language)
    shown = "\n".join(lines[:MAX_SOURCE_LINES])
    return (highlight(shown, language) + f'<div style="{MUTED}">… '
            f'{len(lines) - MAX_SOURCE_LINES} more lines</div>')


def _gutter_block(source: str, language: str, gutter: list[str] | None) -> str:
    """The source beside a gutter of provenance labels, line for line (two <pre> side by side
    with the same font and padding). HTML drops a newline right after <pre>: the gutter's first
    line may be empty, so one more newline keeps it."""
    if not gutter:
        return _source_block(source, language)
    shown = gutter[:MAX_SOURCE_LINES]
    labels = "\n".join(escape(label) for label in shown)
    return ('<div class="tinylab-provenance" style="display:flex;align-items:flex-start">'
            f'<pre class="tinylab-gutter" style="{PRE}{GUTTER}">\n{labels}</pre>'
            f'<div style="min-width:0;flex:1">{_source_block(source, language)}</div></div>')


def _decision_items(model: dict, kernel: dict) -> str:
    decisions = {d["id"]: d for d in model["decisions"]}
    items = []
    for decision_id in dict.fromkeys(kernel["decisions"]):
        decision = decisions[decision_id]
        color = "#b91c1c" if not decision["merged"] else "#334155"
        items.append(f'<li style="color:{color}">{escape(decision["text"])}</li>')
    return f'<ul style="margin:4px 0 4px 18px;padding:0">{"".join(dict.fromkeys(items))}</ul>'


def _kernel_details(model: dict, kernel: dict, passes: bool = True, language: str = "") -> str:
    nodes = {n["id"]: n for n in model["nodes"]}
    reads = ", ".join(f"{nodes[r]['op']} {nodes[r]['dtype']}{nodes[r]['shape']}"
                      for r in kernel["reads"]) or "-"
    bound = f' · {escape(variables_text(kernel))}' if kernel.get("variables") else ""
    summary = (f'<b>{escape(kernel["name"])}</b> <span style="{MUTED}">'
               f'{escape(shape_text(kernel["shape"]))}{bound} · '
               f'{escape(ops_summary(kernel["ops"]))} · {kernel["flops"]} FLOPs · '
               f'{size_text(kernel["bytes"])}</span>')
    body = [f'<div style="{MUTED}">reads {escape(reads)}</div>']
    if kernel["opts"]:
        body.append(f'<div style="{MUTED}">actions: {escape(", ".join(kernel["opts"]))}</div>')
    if kernel.get("calibration"):
        body.append(f'<div style="{MUTED}">calibration: {escape(kernel["calibration"])}</div>')
    if kernel.get("build"):   # how this run got the binary (compiled, from the disk cache), when
        body.append(measured(f'<div style="{MUTED}">build: {escape(kernel["build"]["text"])}</div>'))
    body.append(_decision_items(model, kernel))
    mine = kernel_user_lines(model, kernel)
    if mine:
        body.append(f'<div style="{MUTED}">built by your code:</div><pre style="{PRE}">'
                    + escape("\n".join(mine)) + "</pre>")
    program = model["programs"].get(kernel["name"])
    if program is not None:
        if language not in program["sources"]:   # the selected backend's, else the one that ran
            language = program["language"]
        ran = program["language"]
        body.append(f'<div>loop IR{"" if language == ran else f" (of the {escape(ran)} kernel that ran)"}'
                    f'</div><pre style="{PRE}">{escape(program["passes"].get("plan", ""))}</pre>')
        gutter = gutter_labels(model, kernel, language)
        body.append(f"<div>{escape(language)} source"
                    + (f' <span style="{MUTED}">(left: the ops each line computes ← the lines '
                       "of your code that built them)</span>" if gutter else "") + "</div>")
        body.append(_gutter_block(program["sources"][language], language, gutter))
        if passes and language == ran:   # the passes are those of the program that ran
            body.append(passes_html(program, PRE, MUTED))
    return (f'<details style="margin:2px 0"><summary style="cursor:pointer">{summary}</summary>'
            f'<div style="margin:4px 0 8px 16px">{"".join(body)}</div></details>')


def _what_if(model: dict) -> str:
    rows = []
    for realize in model["realizes"]:
        lines = what_if_lines(realize)
        if lines:
            rows.append(f"<div>{escape(realize['forced_code'])}</div>")
            rows.append(f'<pre style="{PRE}">' + escape("\n".join(l.strip() for l in lines))
                        + "</pre>")
    if not rows:
        return ""
    return ('<details style="margin:2px 0"><summary style="cursor:pointer"><b>what if</b> '
            f'<span style="{MUTED}">a fusion rule were off?</span></summary>{"".join(rows)}'
            "</details>")


def _transform_legend(model: dict) -> str:
    """A legend of the colours of nodes made by tinylab.func transforms (when the graph has any)."""
    present = {n.get("transform", "") for n in model["nodes"]} - {""}
    if not present:
        return ""
    swatches = [f'<span style="background:{color};padding:0 6px;margin-right:8px">'
                f'{escape(name)}</span>' for name, color in TRANSFORM_COLORS.items()]
    return f'<div style="{MUTED}">made by a transform: {"".join(swatches)}</div>'


@dataclass(frozen=True)
class StaticOptions:
    """How to_html draws: the graph layout engine, the kernels listed, the source each shows
    (`source_language`: `%tinygrad --backend CUDA`'s when the model rendered it, else the one
    that ran)."""
    graph_engine: str = "auto"
    max_kernels: int = 200
    source_language: str = ""


def graph_section(model: dict, options: StaticOptions) -> str:
    """The inline SVG of the graph collapsed by kernel, and the transforms' colour legend."""
    if not model["realizes"]:
        return ""
    svg = (f'<div style="overflow:auto;max-height:520px">{graph_svg(model, options.graph_engine)}'
           "</div>")
    return "\n".join(part for part in (svg, _transform_legend(model)) if part)


def kernels_section(model: dict, options: StaticOptions) -> str:
    """A <details> per kernel (ops, reads, decisions, loop IR, source with its provenance gutter,
    the passes of the first distinct kernels)."""
    kernels = {k["id"]: k for k in model["kernels"]}
    parts, listed, with_passes = [], 0, set()
    for realize in model["realizes"]:
        for kernel_id in realize["kernels"]:
            listed += 1
            if listed <= options.max_kernels:
                name = kernels[kernel_id]["name"]
                stepped = name in with_passes or len(with_passes) < MAX_STATIC_PASSES
                if stepped:
                    with_passes.add(name)
                parts.append(_kernel_details(model, kernels[kernel_id], stepped,
                                             options.source_language))
    if listed > options.max_kernels:
        parts.append(f'<div style="{MUTED}">… and '
                     f'{plural(listed - options.max_kernels, "more kernel")}</div>')
    return "\n".join(parts)


def what_if_section(model: dict, options: StaticOptions) -> str:
    """The what-if answers, then the scenarios that were run with their measured times."""
    return "\n".join(part for part in (_what_if(model), what_if_measured_html(model)) if part)


def to_html(model: dict, sections, options: StaticOptions) -> str:
    """The page: a headline, what forced each realize, then each of `sections` (the views'
    static renderers, view_registry.py, in order: (model, options) -> HTML or "")."""
    count = sum(1 for k in model["kernels"] if k["kind"] == ItemKind.KERNEL)
    headline = summary_text(model).splitlines()[0]
    forced = "; ".join(r["forced_code"] for r in model["realizes"][:4])
    parts = [f'<div class="tinylab-static" style="{BOX}">',
             f'<div style="font-weight:600">{escape(headline)}</div>',
             f'<div style="{MUTED}">{escape(forced)}</div>']
    parts += [f'<div style="color:#b45309">{escape(line)}</div>' for line in elsewhere_lines(model)]
    parts += [section(model, options) for section in sections]
    if not count:
        parts.append(f'<div style="{MUTED}">no kernels ran</div>')
    parts.append("</div>")
    return "\n".join(part for part in parts if part) + "\n"
