"""How many threads CPU kernels run (target/threads.py): OMP_NUM_THREADS, then the cgroup's CPU
quota (fake v1 and v2 cgroup trees in tmp_path), then the CPUs this process may run on; THREADS
before all of them. The count reaches the target the kernels are rendered for, and
`python -m tinylab.device` names the rule that gave it."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from tinylab import Context, Device, Tensor, trace
from tinylab.target import threads
from tinylab.target.threads import cgroup_quota, first_rule, thread_count

ALLOWED = len(os.sched_getaffinity(0))


@pytest.mark.parametrize("omp, allowed, quota, count, source", [
    ("1", 8, None, 1, "OMP_NUM_THREADS=1"),
    ("4,2", 8, (1.0, "q"), 4, "OMP_NUM_THREADS=4,2"),        # nested list: the outer level
    ("16", 2, None, 16, "OMP_NUM_THREADS=16"),               # the user's word, even above CPUs
    ("0", 8, None, 8, "the CPUs this process may run on"),   # not a count: the next rule
    ("two", 8, (1.5, "cpu.max: 150000 100000"), 2, "the container's CPU quota"),
    ("", 8, (0.2, "q"), 1, "the container's CPU quota"),     # a fraction of a CPU: one thread
    ("", 2, (4.0, "q"), 2, "the CPUs this process may run on"),  # a quota above the CPUs
    ("", 3, None, 3, "the CPUs this process may run on"),
])
def test_the_rules_in_order(omp, allowed, quota, count, source):
    found = first_rule(omp, allowed, quota)
    assert found.count == count and source in found.source
    assert found.describe().startswith(f"{count} thread{'s' if count != 1 else ''} (from ")


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_cgroup_v2_at_the_root_of_a_container(tmp_path):
    root = tmp_path / "cgroup"
    write(root / "cpu.max", "150000 100000\n")
    membership = write(tmp_path / "self", "0::/\n")
    quota, where = cgroup_quota(root, membership)
    assert quota == 1.5 and "cpu.max: 150000 100000" in where
    write(root / "cpu.max", "max 100000\n")
    assert cgroup_quota(root, membership) is None


def test_cgroup_v2_takes_the_tightest_quota_up_the_tree(tmp_path):
    root = tmp_path / "cgroup"
    write(root / "cpu.max", "max 100000\n")
    write(root / "user.slice" / "cpu.max", "50000 100000\n")
    write(root / "user.slice" / "app" / "cpu.max", "300000 100000\n")
    membership = write(tmp_path / "self", "0::/user.slice/app\n")
    assert cgroup_quota(root, membership)[0] == 0.5


def test_cgroup_v1_cfs_quota(tmp_path):
    root = tmp_path / "cgroup"
    folder = root / "cpu,cpuacct" / "docker" / "abc"
    write(folder / "cpu.cfs_quota_us", "200000\n")
    write(folder / "cpu.cfs_period_us", "100000\n")
    membership = write(tmp_path / "self", "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n")
    quota, where = cgroup_quota(root, membership)
    assert quota == 2.0 and "cpu.cfs_quota_us: 200000 / 100000" in where
    write(folder / "cpu.cfs_quota_us", "-1\n")   # no quota
    assert cgroup_quota(root, membership) is None


def test_no_cgroup_files_means_no_quota(tmp_path):
    assert cgroup_quota(tmp_path / "absent", tmp_path / "absent-self") is None
    write(tmp_path / "cgroup" / "cpu.max", "garbage")
    assert cgroup_quota(tmp_path / "cgroup", write(tmp_path / "self", "0::/\n")) is None


def test_a_fake_quota_reaches_the_process_count(tmp_path, monkeypatch):
    root = tmp_path / "cgroup"
    write(root / "cpu.max", "100000 100000\n")
    monkeypatch.setattr(threads, "CGROUP_ROOT", root)
    monkeypatch.setattr(threads, "MEMBERSHIP", write(tmp_path / "self", "0::/\n"))
    monkeypatch.delitem(threads.config._ENV, "OMP_NUM_THREADS", raising=False)
    threads.machine_threads.cache_clear()
    try:
        found = thread_count()
        if ALLOWED > 1:
            assert found.count == 1 and "the container's CPU quota" in found.source
        with Context(THREADS=3):   # the setting before every rule
            assert thread_count().count == 3 and thread_count().source == "THREADS=3"
    finally:
        threads.machine_threads.cache_clear()


def device_listing(**environment) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "THREADS")}
    done = subprocess.run([sys.executable, "-m", "tinylab.device"], capture_output=True,
                          text=True, check=True, env={**env, **environment}, timeout=300)
    return next(line for line in done.stdout.splitlines() if line.startswith("CPU threads:"))


def test_python_m_tinylab_device_names_the_rule():
    assert device_listing(OMP_NUM_THREADS="1").startswith(
        "CPU threads: 1 OpenMP thread (from OMP_NUM_THREADS=1)")
    line = device_listing()
    quota = cgroup_quota(threads.CGROUP_ROOT, threads.MEMBERSHIP)
    if quota is None or math.ceil(quota[0]) >= ALLOWED:
        assert f"{ALLOWED} OpenMP thread" in line and "the CPUs this process may run on" in line
    else:
        assert "the container's CPU quota" in line


def test_kernels_are_rendered_for_the_count():
    """One thread: no OpenMP region; the same kernel at THREADS=2 opens one of 2 threads, and
    both compute what numpy computes."""
    x = np.random.default_rng(0).standard_normal((256, 4096)).astype(np.float32)
    sources = {}
    for count in (1, 2):
        with Context(THREADS=count, DEV="CPU"), trace() as recorded:
            assert Device["CPU"].target.cores == count
            got = (Tensor(x) * 2 + 1).sum(1).numpy()
        np.testing.assert_allclose(got, (x * 2 + 1).sum(1), rtol=1e-4, atol=1e-3)
        sources[count] = "\n".join(k.source for r in recorded.realizes for k in r.kernels)
    assert "#pragma omp" not in sources[1]
    assert "num_threads(2)" in sources[2]
