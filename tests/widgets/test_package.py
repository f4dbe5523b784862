"""The widget assets travel with the package: a wheel built from the tree contains every front-end
file and the vendored library's licence, and the installed copy (not the source tree) loads its
ES module through importlib.resources. tinygrad's VIZ once shipped without its assets.
"""
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tinylab_widgets.assets import all_asset_names

ROOT = Path(__file__).resolve().parents[2]


def build_wheel(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("tinylab", "widgets"):
        shutil.copytree(ROOT / folder, source / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(dist), str(source)], check=True, timeout=300,
                   capture_output=True)
    return next(dist.glob("tinylab-*.whl"))


def test_wheel_contains_and_installs_the_widget_assets(tmp_path):
    wheel = build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [a for a in all_asset_names() if f"tinylab_widgets/static/{a}" not in names]
    assert not missing, f"not in the wheel: {missing}"
    for name in ("runner.js", "page.html"):   # the WebGPU runner the inspector and pages share
        assert f"tinylab/export/{name}" in names, f"tinylab/export/{name} not in the wheel"
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(site), str(wheel)], check=True, timeout=300, capture_output=True)
    check = ("import tinylab_widgets, tinylab_widgets.assets as assets; "
             "print(tinylab_widgets.__file__); print(len(assets.inspector_module()))")
    done = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=True,
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    location, size = done.stdout.split()
    assert location.startswith(str(site)) and int(size) > 50_000
