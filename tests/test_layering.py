"""The dependency direction of DESIGN.md, checked on every import in the package (module level
and inside functions): lower layers never import higher ones, runtimes never import the IR, and
nothing in tinylab imports Jupyter packages or tinylab_widgets (except the %load_ext hook)."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tinylab"

# layer of each top-level part of the package; a module may import its own layer and lower ones
LAYER = {"dtype": 0, "config": 0, "errors": 0, "numpy_alu": 0, "memo": 0,
         "ir": 1, "runtimes": 1, "schedule": 2, "codegen": 3, "renderers": 4, "engine": 5,
         "device": 5, "frontend": 6, "func": 7, "nn": 7, "inspection": 8, "examples": 9,
         "export": 9, "helpers": 9, "as_tinygrad": 9, "__init__": 9}
FORBIDDEN_PEERS = {("runtimes", "ir"), ("ir", "runtimes")}  # runtimes take text, not the IR
JUPYTER = ("IPython", "ipywidgets", "anywidget", "jupyter", "nbformat", "nbclient",
           "tinylab_widgets", "traitlets")


def _part(module_path: Path) -> str:
    relative = module_path.relative_to(PACKAGE)
    return relative.parts[0].removesuffix(".py")


def _imports(path: Path):
    tree = ast.parse(path.read_text())
    package_parts = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[:len(package_parts) - node.level + 1]
                target = list(base) + (node.module.split(".") if node.module else [])
                if not node.module:  # `from . import x`
                    for alias in node.names:
                        yield node, ".".join(target + [alias.name])
                    continue
                yield node, ".".join(target)
            else:
                yield node, node.module or ""
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name


def test_layers_point_downward():
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        mine = _part(path)
        for node, target in _imports(path):
            parts = target.split(".")
            if parts[0] == "tinylab" and len(parts) > 1:
                theirs = parts[1]
                if theirs not in LAYER or mine not in LAYER:
                    continue
                if LAYER[theirs] > LAYER[mine] or (mine, theirs) in FORBIDDEN_PEERS:
                    problems.append(f"{path.relative_to(PACKAGE)}:{node.lineno} ({mine}) imports "
                                    f"{target} ({theirs})")
            if parts[0] in JUPYTER and path.name != "__init__.py":
                problems.append(f"{path.relative_to(PACKAGE)}:{node.lineno} imports {target}")
    assert not problems, "layering violations:\n" + "\n".join(problems)


def test_every_module_states_its_contract():
    missing = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
               if p.stat().st_size and not ast.get_docstring(ast.parse(p.read_text()))]
    assert not missing, f"modules without an opening contract docstring: {missing}"
