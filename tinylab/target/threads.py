"""How many threads CPU kernels run, by one rule read top to bottom (RULES): the THREADS setting,
then OMP_NUM_THREADS, then the CPU quota of the process's cgroup (v2 cpu.max, v1 cfs_quota_us /
cfs_period_us; Docker's --cpus, Kubernetes' limits, Binder), then the CPUs it may run on.
`thread_count()` gives the count and the rule that set it, in words (python -m tinylab.device);
cpu_target.current_target() puts the count in the target, the compile pool reads it too.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from .. import config
from ..memo import cached

CGROUP_ROOT = Path("/sys/fs/cgroup")
MEMBERSHIP = Path("/proc/self/cgroup")


@dataclass(frozen=True)
class ThreadCount:
    count: int
    source: str   # the rule that gave it, in words: "OMP_NUM_THREADS=1"

    def describe(self) -> str:
        return f"{self.count} thread{'s' if self.count != 1 else ''} (from {self.source})"


def thread_count() -> ThreadCount:
    """THREADS (a setting Context can scope) first; the machine's rules, read once per process."""
    if config.THREADS.value:
        return ThreadCount(int(config.THREADS.value), f"THREADS={config.THREADS.value}")
    return machine_threads()


@cached("machine threads", 1)
def machine_threads() -> ThreadCount:
    return first_rule(config.getenv("OMP_NUM_THREADS", ""), allowed_cpus(),
                      cgroup_quota(CGROUP_ROOT, MEMBERSHIP))


def first_rule(omp_num_threads: str, allowed: int, quota: tuple[float, str] | None) -> ThreadCount:
    """The rules in order, each with its inputs passed in (tests give fake ones):
        OMP_NUM_THREADS=n      n (the first entry of a nested list "4,2"), as OpenMP itself reads it
        a cgroup CPU quota q   min(ceil(q), allowed CPUs): q = 1.5 runs 2 threads of 0.75 CPU each
        otherwise              the CPUs this process may run on (sched_getaffinity)"""
    first = omp_num_threads.split(",")[0].strip()
    if first.isdigit() and int(first) > 0:
        return ThreadCount(int(first), f"OMP_NUM_THREADS={omp_num_threads.strip()}")
    if quota is not None and math.ceil(quota[0]) < allowed:
        return ThreadCount(max(1, math.ceil(quota[0])), f"the container's CPU quota, {quota[1]}")
    return ThreadCount(allowed, "the CPUs this process may run on")


def allowed_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def cgroup_quota(root: Path, membership: Path) -> tuple[float, str] | None:
    """(CPUs the quota allows, where it was read) for the tightest quota on the way from this
    process's cgroup up to the root of the hierarchy; None where no quota is set or readable."""
    found = []
    for folder in _cgroup_folders(root, membership):
        for here in (folder, *folder.parents):
            quota = _quota_in(here)
            if quota is not None:
                found.append(quota)
            if here == root or root not in here.parents:
                break
    return min(found, default=None)


def _cgroup_folders(root: Path, membership: Path) -> list[Path]:
    """The folders of this process's cgroup for the cpu controller, in v2 (one unified tree, at
    the root or under unified/) and in v1 (cpu/ or cpu,cpuacct/). A container that shows its own
    cgroup as '/' (cgroup namespaces) reads the root's files."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        lines = []
    folders = []
    for line in lines:
        hierarchy, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        relative = path.strip().lstrip("/")
        if hierarchy == "0" and controllers == "":
            bases = [root, root / "unified"]
        elif "cpu" in controllers.split(","):
            bases = [root / controllers, root / "cpu", root / "cpu,cpuacct"]
        else:
            continue
        for base in bases:
            if base.is_dir():
                mine = base / relative
                folders.append(mine if mine.is_dir() else base)
    if not folders and root.is_dir():
        folders.append(root)
    return folders


def _quota_in(folder: Path) -> tuple[float, str] | None:
    v2 = _read(folder / "cpu.max")   # "max 100000" or "150000 100000" (quota, period in us)
    if v2:
        quota, _, period = v2.partition(" ")
        if quota != "max" and quota.isdigit() and period.strip().isdigit() and int(period):
            return int(quota) / int(period), f"{folder / 'cpu.max'}: {v2}"
    quota, period = _read(folder / "cpu.cfs_quota_us"), _read(folder / "cpu.cfs_period_us")
    if quota.isdigit() and period.isdigit() and int(quota) > 0 and int(period) > 0:   # -1: none
        return int(quota) / int(period), f"{folder / 'cpu.cfs_quota_us'}: {quota} / {period}"
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""
