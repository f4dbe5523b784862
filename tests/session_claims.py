"""One check per kernel per test run, whichever xdist worker produced it: before the end-of-session
CUDA and WGSL checks (conftest), a worker claims each kernel AST by creating a file named by the
AST's full text (engine/planned_cache.ast_text) and the check in a folder shared by the run's
workers (pytest-xdist's testrunuid); a kernel another worker claimed is that worker's to check.
Every kernel the run produced is still checked once in that run; nothing is kept between runs."""
import hashlib
import os
import tempfile
from pathlib import Path

from tinylab.engine.planned_cache import ast_text


def run_folder(config) -> Path | None:
    """The folder this run's workers share (None outside xdist: nothing to share)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return None
    folder = Path(tempfile.gettempdir()) / f"tinylab-session-checks-{workerinput['testrunuid']}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def claim(asts: list, check: str, folder: Path | None) -> list:
    """The ASTs this worker checks: those no other worker of the run claimed first."""
    if folder is None:
        return list(asts)
    mine = []
    for ast in asts:
        text = ast_text(ast)
        if text is None:    # no exact text (a symbolic size): checked here whatever others do
            mine.append(ast)
            continue
        name = hashlib.sha256(f"{check}\n{text}".encode()).hexdigest()[:32]
        try:
            os.close(os.open(folder / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            continue
        mine.append(ast)
    return mine
