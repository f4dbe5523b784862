"""The package as pip installs it, not as the editable .venv serves it: an sdist and a wheel built
from the tracked files (python -m build: the wheel is built from the sdist), their contents (every
package, module and package-data file; tinylab/export's WebGPU runner and the widgets' front end
once shipped without their assets), the wheel installed into a fresh venv outside the checkout
(no source tree on the path) where it imports, realizes a kernel, takes a gradient, renders a
static inspector page and loads the widgets' assets; then `pip install <checkout>` (not editable)
in the same venv. Also: every module parses with the oldest Python requires-python allows, and
ruff's target-version says the same Python. One xdist group: the venv is built once per run.
"""
import ast
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

import tinylab

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
OLDEST = tuple(int(p) for p in PYPROJECT["project"]["requires-python"].lstrip(">=").split("."))
PAGE_NEEDS = ["pygments>=2.15", "anywidget"]   # the static page's highlighter, tinylab_widgets
pytestmark = pytest.mark.xdist_group("packaging")


def tracked_files() -> list[str]:
    """The checkout's tracked files as they are now in the working tree (edits included)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [name for name in listed.stdout.decode().split("\0") if name and (ROOT / name).exists()]


def run(command, **options) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True,
                          timeout=options.pop("timeout", 600), **options)
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed:\n" + \
        (done.stdout + done.stderr)[-4000:]
    return done


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A copy of the tracked files: what a clone holds (no build outputs, no .venv)."""
    copy = tmp_path_factory.mktemp("checkout") / "tinylab"
    for name in tracked_files():
        if name.startswith(("tinylab/", "widgets/")) or "/" not in name or name.startswith("docs/"):
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    return copy


@pytest.fixture(scope="module")
def dist(checkout, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, checkout])
    return {"wheel": next(out.glob("tinylab-*.whl")), "sdist": next(out.glob("tinylab-*.tar.gz"))}


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    """A fresh venv (no pip of its own: this interpreter's pip installs into it) holding the
    wheel, numpy and what the static page and tinylab_widgets need."""
    folder = tmp_path_factory.mktemp("venv") / "v"
    run([sys.executable, "-m", "venv", "--without-pip", folder])
    python = folder / "bin" / "python"
    run([sys.executable, "-m", "pip", "--python", python, "install", "-q", dist["wheel"],
         *PAGE_NEEDS])
    return python


SMOKE = r"""
import sys
import numpy as np
import tinylab
from tinylab import Tensor
assert "site-packages" in tinylab.__file__, tinylab.__file__
assert not [p for p in sys.path if p.startswith(CHECKOUT)], sys.path
jupyter = [m for m in sys.modules if m.split(".")[0] in ("IPython", "anywidget", "ipywidgets")]
assert not jupyter, f"import tinylab imported {jupyter}"
x = np.arange(12, dtype=np.float32).reshape(3, 4)
got = (Tensor(x) * 2 + 1).sum(1).numpy()
assert got.tolist() == ((x * 2 + 1).sum(1)).tolist(), got
gradient = tinylab.func.grad(lambda t: (t * t).sum())(Tensor(x)).numpy()
assert np.allclose(gradient, 2 * x), gradient
with tinylab.trace() as recorded:
    (Tensor(x).exp() + 1).sum(1).numpy()
page = tinylab.inspection.to_html(recorded)
assert "<svg" in page and "<span style=" in page and "r_" in page, page[:400]  # Pygments ran
import tinylab_widgets
from tinylab_widgets import Inspector, assets
assert "site-packages" in tinylab_widgets.__file__, tinylab_widgets.__file__
assert len(assets.inspector_module()) > 50_000 and "tl-" in assets.stylesheet()
assert "<svg" in Inspector(recorded).static_html
print("installed", tinylab.__version__)
"""


def smoke(python: Path, where: Path) -> str:
    """The smoke script in `where` (outside the checkout), isolated from PYTHONPATH and the
    user's site (-I), with the C compiler and the kernel cache of this session."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("PYTHON", "PYTEST", "VIRTUAL_ENV"))}
    done = run([python, "-I", "-c", f"CHECKOUT = {str(ROOT)!r}\n" + SMOKE], cwd=where, env=env)
    return done.stdout


def test_the_wheel_holds_every_package_module_and_data_file(dist):
    names = set(zipfile.ZipFile(dist["wheel"]).namelist())
    expected = {name.replace("widgets/", "tinylab_widgets/", 1) for name in tracked_files()
                if name.startswith(("tinylab/", "widgets/"))}
    assert expected, "no tracked package files"
    missing = sorted(expected - names)
    assert not missing, f"not in the wheel: {missing}"   # __init__.py files, modules, data
    info = f"tinylab-{tinylab.__version__}.dist-info"
    assert f"{info}/licenses/LICENSE" in names
    metadata = zipfile.ZipFile(dist["wheel"]).read(f"{info}/METADATA").decode()
    assert f"Version: {tinylab.__version__}\n" in metadata
    assert f"Requires-Python: >={'.'.join(map(str, OLDEST))}" in metadata
    assert "License-Expression: MIT" in metadata
    assert "Requires-Dist: pygments>=2.15; extra == \"lab\"" in metadata


def test_the_sdist_holds_the_sources_and_the_documents(dist):
    with tarfile.open(dist["sdist"]) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    wanted = {"LICENSE", "README.md", "CHANGELOG.md", "CONTRIBUTING.md", "pyproject.toml",
              "setup.py"} | {name for name in tracked_files()
                             if name.startswith(("tinylab/", "widgets/", "docs/"))}
    assert not sorted(wanted - names), f"not in the sdist: {sorted(wanted - names)}"


def test_the_installed_wheel_works_outside_the_checkout(venv, tmp_path):
    assert smoke(venv, tmp_path).strip() == f"installed {tinylab.__version__}"


def test_pip_install_of_a_checkout(venv, checkout, tmp_path):
    """`pip install .` (not editable, build isolation as a user gets it) over the wheel's copy."""
    run([sys.executable, "-m", "pip", "--python", venv, "install", "-q", "--no-deps",
         "--force-reinstall", checkout])
    assert smoke(venv, tmp_path).strip() == f"installed {tinylab.__version__}"


def python_sources() -> list[Path]:
    return [ROOT / name for name in tracked_files() if name.endswith(".py")]


def test_every_module_parses_as_the_oldest_supported_python():
    """requires-python is a promise: no newer grammar anywhere (the suite itself runs on the
    Python of .venv, which make test creates from python3)."""
    problems = []
    for path in python_sources():
        try:
            ast.parse(path.read_text(), str(path), feature_version=OLDEST)
        except SyntaxError as error:
            problems.append(f"{path.relative_to(ROOT)}:{error.lineno}: {error.msg}")
    assert not problems, f"not Python {OLDEST} grammar:\n" + "\n".join(problems)


def test_ruff_and_classifiers_name_the_same_python():
    assert PYPROJECT["tool"]["ruff"]["target-version"] == "py" + "".join(map(str, OLDEST))
    versions = [c.rsplit(" :: ", 1)[1] for c in PYPROJECT["project"]["classifiers"]
                if c.startswith("Programming Language :: Python :: 3.")]
    assert min(versions, key=lambda v: tuple(map(int, v.split(".")))) == ".".join(map(str, OLDEST))
    assert sys.version_info[:2] >= OLDEST


def test_load_ext_without_the_lab_extra_names_the_extra(monkeypatch):
    """`%load_ext tinylab` where the Jupyter layer cannot import (no anywidget: the lab extra
    was not installed) says what to install instead of a bare ModuleNotFoundError."""
    monkeypatch.setitem(sys.modules, "tinylab_widgets.magics", None)   # import fails
    with pytest.raises(ImportError, match=r'pip install "tinylab\[lab\]"'):
        tinylab.load_ipython_extension(object())
