"""Syntax highlighting for the widgets, by Pygments alone: each kernel's source per language, its
loop IR / linear program / AST and each pass step become class-marked HTML that the front end
shows as is (`program_html`, sent when the widget asks; `with_highlighting` for a saved page),
styled by `stylesheet_rules()` (appended to inspector.css). Loop IR has a lexer of its own.
"""
from __future__ import annotations

import copy
from functools import cache
from html import escape

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.filter import simplefilter
from pygments.lexer import RegexLexer, words
from pygments.lexers import get_lexer_by_name
from pygments.style import Style
from pygments.token import Comment, Keyword, Name, Number, String, Text

from tinylab.engine.backends import lexer_of

SCOPE = ".tinylab-widget .tl-code"   # the <pre> elements that hold highlighted text
IR_WORDS = ("kernel", "for", "tile", "acc", "in", "global", "reduce", "upcast", "unroll",
            "vector", "thread", "local", "group")


class LoopIRLexer(RegexLexer):
    """Loop IR, linear programs and kernel ASTs as their printers write them (plan_printer.py)."""
    name = "tinylab loop IR"
    tokens = {"root": [
        (r"#[^\n]*", Comment.Single),
        (r"\"(\\\\|\\\"|[^\"])*\"|'(\\\\|\\'|[^'])*'", String),
        (r"\b\d+\.?\d*(e[-+]?\d+)?\b", Number),
        (words(IR_WORDS, suffix=r"\b"), Keyword),
        (r"[A-Za-z_]\w*(?=\s*\()", Name.Function),
        (r"[A-Za-z_]\w*", Text),
        (r"\s+", Text),
        (r".", Text),
    ]}


KEEP = {"stripnl": False, "ensurenl": False}   # the HTML's text is the text, newline for newline


# the inspector's palette (the colours of the hand-written highlighter it replaced)
PALETTE = {Keyword: "bold #7c3aed", Number: "#0f766e", Comment: "italic #64748b",
           Comment.Preproc: "noitalic #b45309", Comment.PreprocFile: "noitalic #b45309",
           String: "#15803d", Name.Function: "#1d4ed8", Name.Builtin: "#1d4ed8",
           Name.Decorator: "#b45309"}


class WidgetStyle(Style):
    styles = dict(PALETTE)


FORMATTER = HtmlFormatter(nowrap=True, style=WidgetStyle)


@simplefilter
def plain_rest(self, lexer, stream, options):
    """Tokens the palette leaves uncoloured (names, operators, punctuation) become plain text,
    merged with their neighbours: a span only where a colour is (the model is 2-3x smaller)."""
    pending = ""
    for kind, value in stream:
        if any(kind in coloured for coloured in PALETTE):
            if pending:
                yield Text, pending
                pending = ""
            yield kind, value
        else:
            pending += value
    if pending:
        yield Text, pending


IR_LEXER = LoopIRLexer(**KEEP)
IR_LEXER.add_filter(plain_rest())


def highlighted(text: str, language: str) -> str:
    """HTML of `text` (a backend's language, or "ir") with Pygments' token classes."""
    lexer = IR_LEXER if language == "ir" else _lexer(lexer_of(language))
    if lexer is None:
        return escape(text)
    markup = highlight(text, lexer, FORMATTER)
    return markup[:-1] if markup.endswith("\n") and not text.endswith("\n") else markup


@cache
def _lexer(name: str):
    try:
        lexer = get_lexer_by_name(name, **KEEP)
    except Exception:  # noqa: BLE001 - a lexer this Pygments lacks: plain text
        return None
    lexer.add_filter(plain_rest())
    return lexer


@cache
def stylesheet_rules() -> str:
    """The colour of each token class, under SCOPE only (Pygments' page-wide `pre` and line
    number rules and its background are left out: the widget's own CSS sets those)."""
    rules = FORMATTER.get_style_defs(SCOPE).splitlines()
    return "\n".join(rule for rule in rules if rule.startswith(f"{SCOPE} .") and ".hll" not in rule)


def program_html(program: dict) -> dict:
    """The HTML of one program of an inspection model: {"sources": {language: html}, "passes":
    {plan, linear, ast: html}, "steps": [html per pass step]}. The widget asks for it when it
    shows a kernel (highlighting a 100-kernel training step at once took ~18 s at load 8)."""
    language = program.get("language", "C")
    return {"sources": {lang: highlighted(text, lang)
                        for lang, text in program.get("sources", {}).items()},
            "passes": {key: highlighted(text or "", "ir")
                       for key, text in (program.get("passes") or {}).items()},
            "steps": [highlighted(step.get("text", ""), language
                                  if step.get("title", "").startswith("source") else "ir")
                      for step in program.get("steps", [])]}


def with_highlighting(model: dict) -> dict:
    """A copy of a model whose every program carries its `html` (a saved page has no Python to
    ask); the front end shows the HTML and the plain text until it has it."""
    model = copy.copy(model)
    model["programs"] = {name: {**program, "html": program_html(program)}
                         for name, program in (model.get("programs") or {}).items()}
    return model
