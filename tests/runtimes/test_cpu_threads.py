"""Where the CPU runtime's OpenMP threads run (runtimes/cpu.py, _bind_pool): each worker of a
launching thread's pool on a CPU of its own, the launcher on the first CPU only while a parallel
kernel runs, and nothing bound with TINYLAB_OMP_BIND=0. The kernel below reports, from inside
the parallel region, the CPU each thread ran on (sched_getcpu), so the test reads what happened,
not what the runtime meant to do. Each case launches from a new Python thread: libgomp keeps one
pool per launching thread, and a new thread's first parallel kernel is the one that binds.
"""
import os
import threading

import numpy as np
import pytest

from tinylab import config
from tinylab.runtimes.cpu import CPURuntime, thread_placement

WHERE = """extern int omp_get_thread_num(void);
extern int sched_getcpu(void);
void where(int* restrict out) {
  #pragma omp parallel num_threads(2)
  { out[omp_get_thread_num()] = sched_getcpu(); }
}
"""

needs_two = pytest.mark.skipif(not hasattr(os, "sched_getaffinity")
                               or len(os.sched_getaffinity(0)) < 2,
                               reason="thread placement needs two CPUs and Linux's affinity")


def _threads_of_this_process() -> dict:
    """{thread id: the CPUs it may run on}, from /proc."""
    found = {}
    for task in os.listdir("/proc/self/task"):
        try:
            found[int(task)] = os.sched_getaffinity(int(task))
        except OSError:  # a thread that ended meanwhile
            pass
    return found


def _launch_in_new_thread(program, bind: int) -> dict:
    seen = {}

    def body():
        config.OMP_BIND.set(bind)  # a new thread starts from the settings' defaults
        before = os.sched_getaffinity(0)
        out = np.full(2, -1, dtype=np.int32)
        for _ in range(3):  # the first call binds; the later ones must keep the places
            program(out)
            seen.setdefault("cpus", []).append(out.copy())
        seen["before"], seen["after"] = before, os.sched_getaffinity(0)
        seen["threads"] = _threads_of_this_process()  # while the pool lives (it ends with us)
    worker = threading.Thread(target=body)
    worker.start()
    worker.join()
    return seen


@pytest.fixture(scope="module")
def where_program(tmp_path_factory):
    runtime = CPURuntime(cache_dir=tmp_path_factory.mktemp("kernels"))
    if runtime.target.cores < 2:
        pytest.skip("the runtime runs kernels on one core here")
    library, _ = runtime.compile(WHERE)
    program = runtime.load(library, "where")
    assert program.threads == runtime.target.cores
    return program


@needs_two
def test_workers_and_launcher_run_on_cpus_of_their_own(where_program):
    cpus = sorted(os.sched_getaffinity(0))
    seen = _launch_in_new_thread(where_program, bind=1)
    for out in seen["cpus"]:
        assert list(out) == [cpus[0], cpus[1]]  # launcher on the first CPU, worker 1 on the second
    assert seen["after"] == seen["before"] == set(cpus)  # the launcher is held only for the call
    bound = [t for t, allowed in seen["threads"].items() if allowed == {cpus[1]}]
    assert bound, "the worker of the new thread's pool is bound to the second CPU"


@needs_two
def test_binding_off_leaves_every_thread_free(where_program):
    cpus = set(os.sched_getaffinity(0))
    before = {t for t, allowed in _threads_of_this_process().items() if allowed != cpus}
    seen = _launch_in_new_thread(where_program, bind=0)
    assert seen["after"] == cpus
    for out in seen["cpus"]:
        assert set(out) <= cpus and -1 not in out  # both threads ran, wherever Linux put them
    during = {t for t, allowed in seen["threads"].items() if allowed != cpus}
    assert during <= before  # no new thread was bound


def test_a_kernel_without_threads_is_called_plainly(tmp_path):
    runtime = CPURuntime(cache_dir=tmp_path)
    library, _ = runtime.compile("void plus_one(float* restrict x) { x[0] += 1.0f; }\n")
    program = runtime.load(library, "plus_one")
    x = np.zeros(1, dtype=np.float32)
    program(x)
    assert program.threads == 0 and x[0] == 1.0


def test_the_placement_is_described_as_it_is_done(monkeypatch):
    """What `python -m tinylab.device` prints: the rule _bind_pool follows, in words."""
    monkeypatch.delitem(config._ENV, "OMP_PROC_BIND", raising=False)
    assert "one thread" in thread_placement(1)
    token = config.OMP_BIND.set(0)
    try:
        assert "TINYLAB_OMP_BIND=0" in thread_placement(2)
    finally:
        config.OMP_BIND._var.reset(token)
    monkeypatch.setitem(config._ENV, "OMP_PROC_BIND", "close")   # config reads the environment
    assert "OMP_PROC_BIND is set" in thread_placement(2)
    monkeypatch.delitem(config._ENV, "OMP_PROC_BIND")
    if hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) >= 2:
        cpus = sorted(os.sched_getaffinity(0))
        assert f"worker 1 on CPU {cpus[1]}" in thread_placement(2)
        assert f"launching thread on CPU {cpus[0]}" in thread_placement(2)


def test_a_replay_binds_its_launcher_once_and_gives_the_cpus_back():
    """A TinyJit replay of parallel kernels binds the launching thread once (launching_many),
    computes what numpy computes, and leaves the thread's CPUs as they were."""
    import os

    import numpy as np

    from tinylab import Tensor, TinyJit
    before = os.sched_getaffinity(0)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((256, 256), np.float32), rng.standard_normal((256, 256), np.float32)

    @TinyJit
    def step(x, y):
        return ((x @ y).relu() @ y).realize()

    for _ in range(4):
        out = step(Tensor(a), Tensor(b)).numpy()
        np.testing.assert_allclose(out, np.maximum(a @ b, 0) @ b, rtol=1e-3, atol=1e-3)
        assert os.sched_getaffinity(0) == before
