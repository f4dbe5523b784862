"""The README and the docs/ pages: the README fits on a screen and reaches every page; every
relative link and #anchor in README.md, CONTRIBUTING.md, CHANGELOG.md and docs/*.md resolves (a
file that exists, a heading GitHub makes that anchor for); the README's ten lines print what their
comments say, on this CPU and under another CPU target; docs/environment.md lists every setting of
config.py (a generated table: UPDATE_DOCS=1 rewrites it) and every variable anything here reads.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tinylab import config

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)\)")   # [text](target), ![alt](image)
ENVIRONMENT = DOCS / "environment.md"
BEGIN = ("<!-- settings: generated from tinylab/config.py; UPDATE_DOCS=1 python -m pytest "
         "tests/test_docs.py rewrites it -->")
END = "<!-- end of settings -->"


def test_the_readme_fits_on_a_screen_and_reaches_every_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 150, "the README is for a newcomer: move detail to docs/"
    linked = {target.split("#")[0] for target in LINK.findall(text)}
    unreached = [p.name for p in DOCS.glob("*.md") if f"docs/{p.name}" not in linked]
    assert not unreached, f"the README links no docs/ page {unreached}"
    assert "docs/inspector.png" in linked and (DOCS / "inspector.png").stat().st_size > 20_000


def slug(heading: str) -> str:
    """The anchor GitHub makes for a heading: lower case, punctuation dropped, spaces as '-'."""
    text = re.sub(r"`|\*\*|\*|_(?=\w)|(?<=\w)_", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found, seen = set(), {}
    in_code = False
    for line in page.read_text().splitlines():
        in_code ^= line.startswith("```")
        if in_code or not line.startswith("#"):
            continue
        base = slug(line.lstrip("#"))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def link_problems(page: Path, root: Path = ROOT) -> list[str]:
    problems = []
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):   # https://..., mailto:
            if not target.startswith(("https://", "mailto:")):
                problems.append(f"{target}: not https")
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            problems.append(f"{target}: no file {linked.relative_to(root)}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            problems.append(f"{target}: no heading #{anchor} in {linked.name}")
    return [f"{page.relative_to(root)}: {p}" for p in problems]


def test_every_relative_link_and_anchor_resolves():
    problems = [problem for page in PAGES for problem in link_problems(page)]
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_the_link_check_catches_what_it_should(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A `code` title, with words\n\n## Two\n\n## Two\n\n"
                    "[ok](#a-code-title-with-words) [ok](#two-1) [bad](#three) [gone](missing.md)"
                    " [http](http://x.org) ![picture](page.md)\n")
    assert anchors(page) == {"a-code-title-with-words", "two", "two-1"}
    problems = [p.split(": ")[1] for p in link_problems(page, tmp_path)]
    assert problems == ["#three", "missing.md", "http://x.org"]


def ten_lines() -> str:
    section = README.read_text().split("## Ten lines", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize("target", ["", "sse4"])
def test_the_readme_example_prints_what_its_comments_say(target, tmp_path):
    code = ten_lines()
    expected = [line.split("# ", 1)[1].split(": ", 1)[0].strip()   # "1: the whole ..." -> "1"
                for line in code.splitlines() if line.startswith("print(")]
    env = {**os.environ, "CPU_TARGET": target}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=600, check=True)
    assert done.stdout.splitlines() == expected, done.stdout + done.stderr


def _escaped(text: str) -> str:
    return text.replace("|", "/").replace("<", "&lt;").replace(">", "&gt;")


def settings_table() -> str:
    rows = ["| variable | default | what it does |", "|---|---|---|"]
    for setting in config.SETTINGS.values():
        default = f"`{setting.default}`" if setting.default != "" else "(empty)"
        rows.append(f"| `{setting.name}` | {default} | {_escaped(setting.doc)} |")
    return "\n".join(rows)


def test_the_environment_page_holds_every_setting():
    text = ENVIRONMENT.read_text()
    old = text.split(BEGIN + "\n", 1)[1].split(END, 1)[0].strip("\n")
    if os.environ.get("UPDATE_DOCS"):
        ENVIRONMENT.write_text(text.replace(f"{BEGIN}\n{old}\n" if old else f"{BEGIN}\n",
                                            f"{BEGIN}\n{settings_table()}\n"))
        old = settings_table()
    assert old == settings_table(), \
        "docs/environment.md's settings differ from config.py: UPDATE_DOCS=1 python -m pytest " \
        "tests/test_docs.py"


READS = re.compile(r"(?:getenv|environ\.get|environ\[|_ENV\.get|_ENV\[|setdefault)\(?\s*\"([A-Z][A-Z_0-9]+)\""
                   r"|\"([A-Z][A-Z_0-9]+)\" (?:not )?in (?:os\.environ|_ENV)"
                   r"|\"((?:G?OMP)_[A-Z_]+)\"")


def test_the_environment_page_names_every_variable_read_here():
    sources = [*ROOT.glob("tinylab/**/*.py"), *ROOT.glob("widgets/*.py"), *ROOT.glob("bench/*.py"),
               *ROOT.glob("tests/**/*.py"), *ROOT.glob("notebooks/*.py"), *ROOT.glob("binder/*.py")]
    read = {name for path in sources for match in READS.findall(path.read_text())
            for name in match if name}
    text = ENVIRONMENT.read_text()
    missing = sorted(name for name in read | set(config.SETTINGS) if f"`{name}`" not in text)
    assert not missing, f"docs/environment.md does not name {missing}"
