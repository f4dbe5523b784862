"""config.py is the only module of tinylab that touches the process environment: every other
module (runtimes/cpu.py's OMP_* variables, target/threads.py, the examples' STEPS and BS,
as_tinygrad's getenv) asks config (a Setting, `config.getenv`, `config.openmp_environment`)."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tinylab"
ENVIRONMENT_NAMES = {"environ", "environb", "getenv", "putenv", "unsetenv", "getenvb"}


def _environment_uses(tree) -> list[ast.AST]:
    """`os.environ`, `os.getenv(...)`, `from os import environ`, `posix.environ` and the like."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ENVIRONMENT_NAMES and \
                isinstance(node.value, ast.Name) and node.value.id in ("os", "posix", "nt"):
            found.append(node)
        elif isinstance(node, ast.ImportFrom) and node.module in ("os", "posix", "nt") and \
                any(alias.name in ENVIRONMENT_NAMES for alias in node.names):
            found.append(node)
    return found


def test_only_config_reads_the_environment():
    found = [f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(node)}"
             for path in sorted(PACKAGE.rglob("*.py")) if path.name != "config.py" or
             path.parent != PACKAGE
             for node in _environment_uses(ast.parse(path.read_text()))]
    assert not found, "read the environment through tinylab.config:\n" + "\n".join(found)


def test_the_walk_finds_each_spelling():
    """The checker itself: each way of reaching the environment is caught, config.getenv is not."""
    caught = ["import os\nos.environ['X']", "import os\nos.getenv('X')",
              "from os import environ", "from os import getenv as g", "import posix\nposix.environ",
              "import os\nos.environ.get('X', '1')", "import os\nos.putenv('X', '1')"]
    for source in caught:
        assert _environment_uses(ast.parse(source)), source
    assert not _environment_uses(ast.parse("from tinylab import config\nconfig.getenv('X')"))


def test_config_is_where_the_environment_is_read():
    uses = _environment_uses(ast.parse((PACKAGE / "config.py").read_text()))
    assert uses, "config.py reads os.environ (the snapshot every setting starts from)"
