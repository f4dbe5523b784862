#!/usr/bin/env python3
"""The Binder dry run (`make binder-check`): build binder/'s environment the way repo2docker does,
minus the container, import every module the tutorials import, then run every tutorial notebook
(or those named) in it under strict nbval as that user.
Standard library only. Exit 0: all passed; 1: a step failed; 77: this machine cannot run it.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import pwd
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"
NOTEBOOKS = "notebooks"
SANITIZE = "notebooks/nbval_sanitize.cfg"   # the file tests/notebooks uses
CHECK_USER = "tinylab-binder"               # made with useradd as root (Binder's user is jovyan)
CHECK_TOOLS = ["nbval"]                     # the check's own tool, not one of Binder's requirements
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PASSED_ON = tuple("PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_FIND_LINKS PIP_TRUSTED_HOST PIP_RETRIES "
                  "HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy".split())
CANNOT_RUN = 77
NOTEBOOK_BUDGET_S = 180
NOTEBOOK_TIMEOUT_S = 900
SHOWN_LINES = 60
IMPORT_LINE = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.M)


class CannotRun(Exception):
    """This machine lacks what the dry run needs; nothing in binder/ was found wrong."""


class StepFailed(Exception):
    """A step of the build or a notebook failed; the message holds the end of its output."""


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int

    def run_kwargs(self) -> dict:
        """subprocess arguments that drop to this user (nothing when it is the caller)."""
        if self.uid == os.geteuid():
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


@dataclass
class Plan:
    """What preflight found: who runs the build, with which Python, and what apt must add."""
    user: User
    python: str
    python_note: str
    apt_packages: list[str]
    apt_missing: list[str]
    pip_cache: Path | None
    byte_compile: bool = True   # pip compiles every module it installs (pip's default, Binder's)


def children_cpu_seconds() -> float:
    """User + system time of every finished child process (and theirs, e.g. Jupyter kernels)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Clock:
    """Each step's wall time and its processes' CPU time (the honest figure on a busy machine),
    printed as the step ends and again in the summary."""
    rows: list[tuple[str, float, float, str]] = field(default_factory=list)
    start: float = field(default_factory=time.monotonic)
    start_cpu: float = field(default_factory=children_cpu_seconds)

    @contextlib.contextmanager
    def step(self, label: str):
        print(f"==> {label}", flush=True)
        began, began_cpu = time.monotonic(), children_cpu_seconds()
        note = {"text": ""}

        def record(text: str) -> tuple[float, float]:
            seconds, cpu = time.monotonic() - began, children_cpu_seconds() - began_cpu
            self.rows.append((label, seconds, cpu, text))
            return seconds, cpu
        try:
            yield note
        except BaseException:
            record("FAILED")
            raise
        seconds, cpu = record(note["text"])
        print(f"    ok, {seconds:.1f} s, CPU {cpu:.1f} s {note['text']}".rstrip(), flush=True)

    def summary(self) -> str:
        width = max([len(row[0]) for row in self.rows] + [5])
        lines = [f"  {'':<{width}}    wall      CPU"]
        lines += [f"  {label:<{width}} {seconds:6.1f} s {cpu:6.1f} s  {note}".rstrip()
                  for label, seconds, cpu, note in self.rows]
        lines.append(f"  {'total':<{width}} {time.monotonic() - self.start:6.1f} s "
                     f"{children_cpu_seconds() - self.start_cpu:6.1f} s")
        return "\n".join(lines)


# ---- preflight: what this machine offers ----
def apt_packages() -> list[str]:
    """binder/apt.txt as repo2docker reads it: one package a line, '#' starts a comment."""
    lines = (BINDER / "apt.txt").read_text().splitlines()
    names = [line.partition("#")[0].strip() for line in lines]
    return [name for name in names if name]


def apt_missing(packages: list[str]) -> list[str]:
    if not shutil.which("dpkg-query"):
        raise CannotRun("no dpkg-query: binder/apt.txt's packages can only be checked on "
                        "Debian or Ubuntu")
    missing = []
    for package in packages:
        status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package],
                                capture_output=True, text=True)
        if status.stdout.strip() != "install ok installed":
            missing.append(package)
    return missing


def runtime_python() -> tuple[str, str]:
    """(interpreter, note): runtime.txt's Python where this machine has it, else the system
    python3. Searched on the system PATH only, so a virtual environment is never picked."""
    wanted = (BINDER / "runtime.txt").read_text().strip()
    match = re.fullmatch(r"python-(\d+\.\d+)(\.\d+)?", wanted)
    candidates = ([(f"python{match[1]}", f"runtime.txt's {wanted}")] if match else []) + \
        [("python3", f"the system python3 (runtime.txt asks {wanted}: not on this machine)")]
    for name, why in candidates:
        path = shutil.which(name, path=SYSTEM_PATH)
        if path is None:
            continue
        probe = subprocess.run([path, "-c", "import ensurepip, platform, venv; "
                                "print(platform.python_version())"], capture_output=True, text=True)
        if probe.returncode != 0:
            raise CannotRun(f"{path} cannot make a virtual environment (no venv/ensurepip; on "
                            f"Debian: apt install python3-venv):\n{probe.stderr.strip()}")
        return path, f"{why}: {path}, Python {probe.stdout.strip()}"
    raise CannotRun(f"no python3 on {SYSTEM_PATH}")


def package_index_reachable() -> None:
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    try:
        with urllib.request.urlopen(f"{index}/pip/", timeout=15):
            pass
    except OSError as error:
        raise CannotRun(f"no network to the package index {index} ({error}); "
                        f"binder/requirements.txt installs from it") from None


def check_user() -> User:
    """The caller when unprivileged; as root, the CHECK_USER account (created if missing)."""
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.geteuid())
        return User(me.pw_name, me.pw_uid, me.pw_gid)
    try:
        entry = pwd.getpwnam(CHECK_USER)
    except KeyError:
        if not shutil.which("useradd"):
            raise CannotRun(f"running as root, but no useradd to create the unprivileged "
                            f"user {CHECK_USER}") from None
        made = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                               "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
                               CHECK_USER], capture_output=True, text=True)
        if made.returncode not in (0, 9):      # 9: made meanwhile by a parallel run
            raise CannotRun(f"useradd {CHECK_USER} failed: {made.stderr.strip()}") from None
        entry = pwd.getpwnam(CHECK_USER)
    if entry.pw_uid == 0:
        raise CannotRun(f"user {CHECK_USER} has uid 0: not an unprivileged user")
    return User(entry.pw_name, entry.pw_uid, entry.pw_gid)


def default_pip_cache() -> Path:
    if os.geteuid() == 0:
        return Path("/var/cache/tinylab-binder-check/pip")
    return Path.home() / ".cache" / "tinylab-binder-check" / "pip"


def preflight(args) -> Plan:
    packages = apt_packages()
    missing = apt_missing(packages)
    if missing and os.geteuid() != 0:
        raise CannotRun(f"binder/apt.txt's {' '.join(missing)} not installed, and installing "
                        f"them needs root")
    python, note = runtime_python()
    package_index_reachable()
    user = check_user()
    pip_cache = None if args.no_pip_cache else (args.pip_cache or default_pip_cache())
    return Plan(user, python, note, packages, missing, pip_cache, not args.no_compile)


# ---- the build, as repo2docker runs it ----
def repository_files() -> list[Path]:
    """What Binder gets: the tracked files and untracked ones git does not ignore."""
    listed = subprocess.run(["git", "-c", "safe.directory=*", "-C", str(ROOT), "ls-files", "-z",
                             "--cached", "--others", "--exclude-standard"], capture_output=True)
    if listed.returncode == 0:
        paths = [ROOT / name for name in listed.stdout.decode().split("\0") if name]
        return [path for path in paths if path.is_file() or path.is_symlink()]
    skipped = {".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis",
               "build", "dist", "test-artifacts"}      # not a git checkout: .gitignore's list
    return [path for path in ROOT.rglob("*")
            if (path.is_file() or path.is_symlink())
            and not any(part in skipped or part.endswith(".egg-info")
                        for part in path.relative_to(ROOT).parts)]


def give_to(user: User, top: Path) -> None:
    if user.uid == os.geteuid():
        return
    for folder, dirs, files in os.walk(top):
        os.chown(folder, user.uid, user.gid)
        for name in dirs + files:
            os.chown(os.path.join(folder, name), user.uid, user.gid, follow_symlinks=False)


def copy_repository(home: Path, user: User) -> int:
    """The repository copied into home, owned by the user (repo2docker: COPY src/ ${HOME}, then
    chown). Returns the number of files."""
    files = repository_files()
    for path in files:
        target = home / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target, follow_symlinks=False)
    give_to(user, home)
    return len(files)


def user_environment(plan: Plan, home: Path, venv: Path) -> dict:
    """A clean environment like the image's: HOME is the repository, the venv first on PATH,
    nothing of the caller's (no PYTHONPATH, no TINYLAB_*)."""
    env = {"HOME": str(home), "USER": plan.user.name, "LOGNAME": plan.user.name,
           "SHELL": "/bin/bash", "PATH": f"{venv}/bin:{SYSTEM_PATH}", "LANG": "C.UTF-8",
           "LC_ALL": "C.UTF-8", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_PROGRESS_BAR": "off"}
    if plan.pip_cache is None:
        env["PIP_NO_CACHE_DIR"] = "1"
    else:
        env["PIP_CACHE_DIR"] = str(plan.pip_cache)
    env.update({name: os.environ[name] for name in PASSED_ON if name in os.environ})
    env["TINYLAB_CALIBRATE"] = "0"  # as notebooks/build.py built the committed outputs
    return env


def run_logged(argv: list[str], log: Path, timeout: float, what: str, **kwargs) -> None:
    """Run argv with its output in log; on failure raise StepFailed with the output's end."""
    with open(log, "w") as out:
        try:
            done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                                  **kwargs)
            code = done.returncode
        except subprocess.TimeoutExpired:
            code = f"timeout after {timeout:.0f} s"
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-SHOWN_LINES:])
        raise StepFailed(f"{what} failed ({code}); the end of its output ({log}, which --keep "
                         f"keeps):\n{tail}")


def install_apt(missing: list[str], log: Path) -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run_logged(["apt-get", "update", "-qq"], log.with_suffix(".update.log"), 900,
               "apt-get update", env=env)
    run_logged(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], log, 1800,
               f"apt-get install {' '.join(missing)} (from binder/apt.txt)", env=env)


def notebook_command(python: str, notebook: str) -> list[str]:
    return [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "--nbval",
            "--nbval-current-env", "--nbval-sanitize-with", SANITIZE, "--nbval-cell-timeout",
            "600", notebook]


def build_and_run(plan: Plan, base: Path, clock: Clock, names: list[str]) -> list[str]:
    """Every step in repo2docker's order; returns the notebooks that failed (the rest passed)."""
    home, venv, logs = base / "home", base / "env", base / "logs"
    logs.mkdir()
    with clock.step("apt.txt packages (as root)") as note:
        if plan.apt_missing:
            install_apt(plan.apt_missing, logs / "apt.log")
            note["text"] = f"installed {' '.join(plan.apt_missing)}"
        else:
            note["text"] = f"all {len(plan.apt_packages)} installed already"
    with clock.step(f"repository copied into HOME, owned by {plan.user.name}") as note:
        home.mkdir()
        venv.mkdir()
        count = copy_repository(home, plan.user)
        give_to(plan.user, venv)
        if plan.pip_cache is not None:
            plan.pip_cache.mkdir(parents=True, exist_ok=True)
            give_to(plan.user, plan.pip_cache)
        note["text"] = f"{count} files in {home}"
    as_user = dict(cwd=home, env=user_environment(plan, home, venv), **plan.user.run_kwargs())
    python = str(venv / "bin" / "python")
    with clock.step("virtual environment") as note:
        note["text"] = plan.python_note
        run_logged([plan.python, "-m", "venv", str(venv)], logs / "venv.log", 300, "venv",
                   **as_user)
        run_logged([python, "-m", "pip", "install", "-q", "--upgrade", "pip"],
                   logs / "pip-upgrade.log", 600, "pip install --upgrade pip", **as_user)
    with clock.step("pip install -r binder/requirements.txt") as note:
        note["text"] = "no pip cache, as on Binder" if plan.pip_cache is None else \
            f"pip cache in {plan.pip_cache}"
        compile_flag = [] if plan.byte_compile else ["--no-compile"]
        if not plan.byte_compile:
            note["text"] += ", --no-compile"
        run_logged([python, "-m", "pip", "install", *compile_flag, "-r", "binder/requirements.txt"],
                   logs / "requirements.log", 1800, "pip install -r binder/requirements.txt",
                   **as_user)
        output = (logs / "requirements.log").read_text()
        note["text"] += f": {output.count('Downloading ')} downloaded, " \
            f"{output.count('Using cached ')} from the cache"
    with clock.step("binder/postBuild") as note:
        run_logged(["bash", "-c", "chmod +x binder/postBuild && ./binder/postBuild"],
                   logs / "postBuild.log", 900, "binder/postBuild", **as_user)
        said = [line.removeprefix("postBuild: ") for line in
                (logs / "postBuild.log").read_text().splitlines() if line.startswith("postBuild: ")]
        note["text"] = "; ".join(said)
    # before the check's own tools are installed: they must not mask a missing requirement
    with clock.step("every module the tutorials import") as note:
        modules = tutorial_imports()
        run_logged([python, "-c", IMPORT_ALL, *modules], logs / "imports.log", 300,
                   "importing the tutorials' modules", **as_user)
        said = (logs / "imports.log").read_text().strip().splitlines()
        note["text"] = f"{len(modules)} modules; " + (said[-1] if said else "")
    with clock.step(f"pip install {' '.join(CHECK_TOOLS)} (the check's tool, not Binder's)"):
        run_logged([python, "-m", "pip", "install", "-q", *CHECK_TOOLS], logs / "tools.log", 900,
                   "pip install " + " ".join(CHECK_TOOLS), **as_user)
    failed = []
    # nbval compares every output, and the committed ones were planned for NOTEBOOK_TARGET (a
    # Binder user runs with the detected target: their printed plans may differ, and that is fine)
    target = re.search(r'NOTEBOOK_TARGET = "(\w+)"', (ROOT / "notebooks/build.py").read_text())
    as_nbval = dict(as_user, env=dict(as_user["env"], CPU_TARGET=target.group(1)))
    for name in names:
        try:
            with clock.step(f"notebook {name}") as note:
                run_logged(notebook_command(python, f"{NOTEBOOKS}/{name}.ipynb"),
                           logs / f"{name}.log", NOTEBOOK_TIMEOUT_S, f"nbval {name}.ipynb",
                           **as_nbval)
                note["text"] = "nbval passed"
        except StepFailed as failure:
            print(failure, flush=True)
            failed.append(name)
            continue
        if clock.rows[-1][1] > NOTEBOOK_BUDGET_S:
            print(f"    {name} took over the {NOTEBOOK_BUDGET_S} s budget (see its CPU time: "
                  f"is the machine busy?)", flush=True)
    return failed


# run in Binder's Python, in HOME (the repository copy): each module a tutorial imports, local ones
# (notebooks/*.py, tests/**.py) from their folders, then every device 04_backends opens
IMPORT_ALL = """import importlib, pathlib, sys
for folder in ["notebooks", *sorted({str(p.parent) for p in pathlib.Path("tests").rglob("*.py")})]:
    sys.path.append(folder)
for name in sys.argv[1:]:
    importlib.import_module(name)
from tinylab import Device
print("devices:", ", ".join(d for d in ("CPU", "CL", "WEBGPU", "PYTHON") if Device[d].available))
"""


def tutorial_imports() -> list[str]:
    """The top-level modules named by `import` / `from ... import` in any tutorial's code cells."""
    names = set()
    for path in (ROOT / NOTEBOOKS).glob("[0-9][0-9]_*.ipynb"):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                text = "".join(cell["source"])
                for found in IMPORT_LINE.finditer(text):
                    names.add((found.group(1) or found.group(2)).split(".")[0])
    return sorted(names)


def tutorials() -> list[str]:
    return sorted(path.stem for path in (ROOT / NOTEBOOKS).glob("[0-9][0-9]_*.ipynb"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="*", help="tutorial names (default: all)")
    parser.add_argument("--pip-cache", type=Path, help="pip's cache folder (default: "
                        f"{default_pip_cache()})")
    parser.add_argument("--no-pip-cache", action="store_true",
                        help="download everything, as Binder does (pip --no-cache-dir)")
    parser.add_argument("--no-compile", action="store_true",
                        help="pip install --no-compile: a module's bytecode is written when it is "
                             "first imported, not every module's at install (make test's run: "
                             "the install takes about 20 s less CPU; the same packages)")
    parser.add_argument("--keep", action="store_true", help="keep the build folder")
    args = parser.parse_args(argv)
    names = args.notebooks or tutorials()
    unknown = sorted(set(names) - set(tutorials()))
    if unknown:
        parser.error(f"no tutorial {' '.join(unknown)}; there are {' '.join(tutorials())}")
    clock = Clock()
    try:
        with clock.step("preflight") as note:
            plan = preflight(args)
            note["text"] = f"user {plan.user.name} (uid {plan.user.uid}); {os.cpu_count()} cores"
    except CannotRun as reason:
        print(f"binder-check cannot run here: {reason}", flush=True)
        return CANNOT_RUN
    base = Path(tempfile.mkdtemp(prefix="tinylab-binder-"))
    os.chmod(base, 0o755)
    failed, error = [], None
    try:
        failed = build_and_run(plan, base, clock, names)
    except StepFailed as failure:
        error = failure
    finally:
        if args.keep:
            print(f"build folder kept: {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    print(f"\nbinder-check times ({os.cpu_count()} cores):\n{clock.summary()}", flush=True)
    if error is not None:
        print(f"\nbinder-check FAILED: {error}", flush=True)
        return 1
    if failed:
        print(f"\nbinder-check FAILED: nbval failed for {' '.join(failed)} (output above)")
        return 1
    print(f"\nbinder-check passed: {len(names)} notebooks in the Binder environment")
    return 0


if __name__ == "__main__":
    sys.exit(main())
