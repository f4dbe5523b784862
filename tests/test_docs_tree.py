"""The map of the tree (docs/tree.md) against the package on disk: every module under tinylab/ is
named by its file name in its package's entry, and every file the map (or anywhere in the README
and the docs/ pages) names as a path of the package or of bench/ exists. A module added, renamed
or deleted fails here with the line to change."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tinylab"
TREE = (ROOT / "docs" / "tree.md").read_text()
PAGES = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])


def _map_block() -> str:
    return TREE.split("```", 2)[1]


def _package_entries() -> dict[str, str]:
    """{"" (the package's own files) or "ir" ...: the text of that entry in the map}."""
    entries: dict[str, str] = {}
    current = None
    for line in _map_block().splitlines():
        if line.startswith("tinylab/") or (line and not line.startswith(" ")):
            current = None   # tinylab/ itself, or widgets/, notebooks/, ...: not the package
            continue
        entry = re.match(r"  (\S+)", line)
        if entry:
            name = entry.group(1)
            current = name.rstrip("/") if name.endswith("/") else ""
        if current is not None:
            entries[current] = entries.get(current, "") + " " + line
    return entries


def _named_files(text: str) -> set[str]:
    return set(re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*\.py)\b", text))


def test_the_map_names_every_part_of_the_package():
    entries = _package_entries()
    parts = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    missing = sorted(parts - set(entries))
    gone = sorted(set(entries) - parts - {""})
    assert not missing, f"docs/tree.md's map lacks an entry for tinylab/{missing}"
    assert not gone, f"docs/tree.md's map has entries for packages that do not exist: {gone}"


def test_the_map_names_every_module_and_no_other():
    problems = []
    for part, text in _package_entries().items():
        folder = PACKAGE / part
        on_disk = {p.name for p in folder.glob("*.py")}
        if part:   # a subpackage's modules (ir/primitives/) are named in its parent's entry
            on_disk |= {p.name for p in folder.glob("*/*.py")}
        required = on_disk - {"__init__.py"} if part else on_disk   # a package's may go unnamed
        named = _named_files(text)
        for name in sorted(required - named):
            problems.append(f"tinylab/{part + '/' if part else ''}{name} is not in the map")
        for name in sorted(named - on_disk):
            problems.append(f"the map's {part or 'tinylab'}/ entry names {name}, which does not "
                            "exist")
    assert not problems, "docs/tree.md's map of the tree:\n" + "\n".join(problems)


def test_every_path_the_pages_name_exists():
    parts = "|".join(p.name for p in PACKAGE.iterdir() if p.is_dir()) + "|bench"
    paths = set(re.findall(rf"(?<![\w/.-])(?:tinylab/)?((?:{parts})/[\w/]+\.py)\b", PAGES))
    missing = [path for path in sorted(paths)
               if not (PACKAGE / path).exists() and not (ROOT / path).exists()]
    assert paths and not missing, f"README.md or docs/ names files that do not exist: {missing}"
