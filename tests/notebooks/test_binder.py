"""Binder: binder/dry_run.py (`make binder-check`) builds binder/'s environment as repo2docker does,
minus the container, imports every module the tutorials import and runs notebooks in it as an
unprivileged user; postBuild's checks name what is missing and the binder/ file that should
provide it. BINDER_CHECK=0 skips the build. Here the build runs two notebooks (the tour and the
backends tutorial, which opens every device); all of them run under strict nbval in
tests/notebooks, and `make binder-check` runs all of them in the Binder environment.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tinylab.nn import datasets

ROOT = Path(__file__).resolve().parents[2]
DRY_RUN = ROOT / "binder" / "dry_run.py"
POST_BUILD = ROOT / "binder" / "postBuild"
LOG = ROOT / "test-artifacts" / "binder-check.log"
DRY_RUN_TIMEOUT_S = 1800
IN_MAKE_TEST = ["00_tour", "04_backends"]   # ~20 s of the ~125 s all ten take in the build
FASHION = datasets.SYSTEM_DIRS[0] / datasets.FASHION_MNIST.folder


def load_dry_run():
    """binder/dry_run.py as a module (a fresh copy each call: tests patch it)."""
    spec = importlib.util.spec_from_file_location("binder_dry_run", DRY_RUN)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module      # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.xdist_group("binder")
def test_binder_dry_run_builds_the_environment_and_runs_notebooks():
    """The whole build (minutes; the times land in test-artifacts/binder-check.log)."""
    if os.environ.get("BINDER_CHECK") == "0":
        pytest.skip("BINDER_CHECK=0: the Binder dry run was switched off")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DEBUG"))}
    # requirements.txt's --find-links page (PyTorch's CPU wheels): where this machine cannot reach
    # it, pip asks again for every package, with 5 retries and back-off (~9 s each: 1067 s for the
    # 113 packages here, against 239 s without the page); one retry keeps a blip survivable
    env.setdefault("PIP_RETRIES", "1")
    # --no-compile: the same packages, each module's bytecode written when a notebook imports it
    done = subprocess.run([sys.executable, str(DRY_RUN), "--no-compile", *IN_MAKE_TEST], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=DRY_RUN_TIMEOUT_S)
    output = done.stdout + done.stderr
    LOG.parent.mkdir(exist_ok=True)
    LOG.write_text(output)
    if done.returncode == load_dry_run().CANNOT_RUN:
        pytest.skip(output.strip().splitlines()[-1])
    assert done.returncode == 0, f"make binder-check failed:\n{output[-12000:]}"
    assert "binder-check passed: 2 notebooks" in output
    assert any("every module the tutorials import" in line and "devices: CPU, CL, WEBGPU, PYTHON"
               in line for line in output.splitlines()), output[-3000:]


def test_dry_run_says_why_it_cannot_run(monkeypatch, capsys):
    dry_run = load_dry_run()

    def offline():
        raise dry_run.CannotRun("no network to the package index https://pypi.org/simple")
    monkeypatch.setattr(dry_run, "apt_missing", lambda packages: [])
    monkeypatch.setattr(dry_run, "package_index_reachable", offline)
    assert dry_run.main(["00_tour"]) == dry_run.CANNOT_RUN
    assert capsys.readouterr().out.strip().splitlines()[-1] == \
        "binder-check cannot run here: no network to the package index https://pypi.org/simple"
    with pytest.raises(SystemExit):
        dry_run.main(["99_missing"])
    assert "no tutorial 99_missing; there are 00_tour" in capsys.readouterr().err


def test_a_failed_step_shows_the_end_of_its_output_and_is_timed(tmp_path):
    dry_run = load_dry_run()
    clock = dry_run.Clock()
    script = "for i in $(seq 100); do echo line $i; done; exit 3"
    with pytest.raises(dry_run.StepFailed) as failure, clock.step("a step"):
        dry_run.run_logged(["sh", "-c", script], tmp_path / "step.log", 60, "the step")
    message = str(failure.value)
    assert message.startswith(f"the step failed (3); the end of its output ({tmp_path}/step.log")
    assert message.endswith("\n".join(f"line {i}" for i in range(41, 101)))
    assert "line 40\n" not in message
    assert [row[0::3] for row in clock.rows] == [("a step", "FAILED")]


def test_apt_txt_provides_what_post_build_and_the_dataset_search_expect():
    """apt.txt read as repo2docker reads it; postBuild checks the folder tinylab searches."""
    packages = load_dry_run().apt_packages()
    assert {"gcc", "libc6-dev", "graphviz", "dataset-fashion-mnist"} <= set(packages)
    assert all(" " not in name and "#" not in name for name in packages)
    assert f"fashion={FASHION}\n" in POST_BUILD.read_text()


def post_build(path_dirs: list[Path], wrap: list[str] = ()) -> subprocess.CompletedProcess:
    """postBuild with only path_dirs on PATH: its shell checks run, python is never reached."""
    env = {"PATH": ":".join(map(str, path_dirs)), "HOME": str(path_dirs[0])}
    return subprocess.run([*wrap, "/bin/bash", str(POST_BUILD)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def tools(folder: Path, *names: str) -> Path:
    folder.mkdir()
    for name in names:
        found = shutil.which(name)
        if found is None:
            pytest.skip(f"{name} is not installed (make test installs it as root)")
        (folder / name).symlink_to(found)
    return folder


def test_post_build_names_a_missing_compiler_or_dot(tmp_path):
    done = post_build([tools(tmp_path / "none")])
    assert done.returncode == 1
    assert done.stderr == "postBuild: no C compiler (binder/apt.txt installs gcc)\n"
    done = post_build([tools(tmp_path / "cc", "cc")])
    assert done.returncode == 1
    assert done.stderr == \
        "postBuild: graphviz's dot is missing (binder/apt.txt installs graphviz)\n"


def test_post_build_names_missing_fashion_mnist(tmp_path):
    """Without the dataset package (hidden by an empty folder mounted over /usr/share/datasets
    in a private mount namespace when it is installed) postBuild stops at its data check."""
    path = [tools(tmp_path / "bin", "cc", "dot")]
    wrap = []
    if FASHION.exists():
        unshare, mount = shutil.which("unshare"), shutil.which("mount")
        if os.geteuid() != 0 or not unshare or not mount:
            pytest.skip("dataset-fashion-mnist is installed; hiding it needs root, unshare, mount")
        empty = tmp_path / "empty"
        empty.mkdir()
        wrap = [unshare, "--mount", "/bin/sh", "-c",
                f"{mount} --bind {empty} {FASHION.parent} && exec \"$@\"", "sh"]
    done = post_build(path, wrap)
    if "mount" in done.stderr or "unshare" in done.stderr:
        pytest.skip(f"cannot hide {FASHION.parent} here: {done.stderr.strip()}")
    assert done.returncode == 1
    assert done.stderr == (f"postBuild: Fashion-MNIST's {FASHION}/train-images-idx3-ubyte.gz is "
                           "missing (binder/apt.txt installs dataset-fashion-mnist)\n")
