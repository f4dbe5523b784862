"""The quick tier (engine/build_tiers.py): a big batch runs from its -O1 build, computes what numpy
computes, and after the -O2 build is swapped in (a background thread) the same kernels compute the
same bits, and a TinyJit replay captured before the swap numpy's numbers; the inspector's build line
names the tier; a batch below the threshold builds once, fully; the quick build uses the full
build's precompiled header; a process that exits first finishes the full build, so the next one
compiles nothing."""
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from tinylab import Context, Tensor, TinyJit
from tinylab.engine import build_tiers
from tinylab.engine.realize import STATE
from tinylab.runtimes.cpu import CPURuntime
from tinylab.target.build_facts import BuildFacts


def _outputs(t: Tensor, x: np.ndarray, scales: list):
    """Kernels' outputs (new constants: kernels no cache holds), with numpy's answers: sums,
    a softmax, a scan and a matmul (multiply-adds the compiler may fuse)."""
    outs = [(t * scales[0]).exp().sum(1), (t - scales[1]).relu().max(0),
            t.softmax(1) * scales[2], (t * scales[3]).cumsum(1), (t * scales[0]) @ t.T]
    soft = np.exp(x - x.max(1, keepdims=True))
    want = [np.exp(x * scales[0]).sum(1), np.maximum(x - scales[1], 0).max(0),
            soft / soft.sum(1, keepdims=True) * scales[2], np.cumsum(x * scales[3], 1),
            (x * scales[0]) @ x.T]
    return outs, want


def _runners(names_before: set):
    return [r for key, r in STATE.runners.items() if key not in names_before]


@pytest.fixture
def held(monkeypatch):
    """The full builds wait until the test sets this event (so the quick tier is seen)."""
    release, original = threading.Event(), build_tiers._swap_in

    def swap_later(*args):
        release.wait(60)
        return original(*args)
    monkeypatch.setattr(build_tiers, "_swap_in", swap_later)
    yield release
    release.set()
    build_tiers.wait(timeout=300)


def test_a_big_batch_runs_quick_then_full_with_the_same_numbers(held):
    x = np.linspace(-2, 3, 60, dtype=np.float32).reshape(6, 10)
    t = Tensor(x)
    scales = [float(np.float32(k)) for k in np.random.default_rng().random(4) + 1]
    before = set(STATE.runners)
    with Context(TINYLAB_QUICK_BUILD=1, PARALLEL_COMPILE=1, DEV="CPU"):
        outs, want = _outputs(t, x, scales)
        Tensor.realize(*outs)
    quick = [r for r in _runners(before) if r.build.how == "compiled"]  # not a cached one
    assert quick and {r.build.tier for r in quick} == {"quick"}
    assert all("(quick build" in r.build.describe() for r in quick)
    first = [out.numpy() for out in outs]
    for got, expected in zip(first, want):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    held.set()
    build_tiers.wait(timeout=300)
    assert {r.build.tier for r in quick} == {"full"}
    assert all(r.build.upgraded_s > 0 and "swapped in" in r.build.describe() for r in quick)
    held_now = set(STATE.runners)
    with Context(TINYLAB_QUICK_BUILD=1, DEV="CPU"):  # the same kernels again: their full build
        again, _ = _outputs(t, x, scales)
        Tensor.realize(*again)
    assert set(STATE.runners) == held_now     # nothing built again: the swapped runners ran
    for out, quick_value in zip(again, first):   # bit for bit: both builds fuse a*b+c alike
        np.testing.assert_array_equal(out.numpy(), quick_value)


def test_a_jit_replay_captured_on_the_quick_build_runs_the_full_one(held):
    w = np.random.default_rng(1).standard_normal((8, 8)).astype(np.float32)
    scale = float(np.float32(np.random.default_rng().random() + 1))   # new kernels
    weight = Tensor(w)

    @TinyJit
    def step(x):
        return ((x @ weight) * scale).relu().sum(1).realize()

    inputs = [np.random.default_rng(seed).standard_normal((4, 8)).astype(np.float32)
              for seed in range(5)]
    before = set(STATE.runners)
    with Context(TINYLAB_QUICK_BUILD=1, DEV="CPU"):
        got = [step(Tensor(inputs[i])).numpy() for i in range(3)]   # run, capture, replay
        built = [r for r in _runners(before) if r.build.how == "compiled"]
        assert built and {r.build.tier for r in built} == {"quick"}
        functions = [r.fn.fn for r in built]
        held.set()
        build_tiers.wait(timeout=300)
        assert {r.build.tier for r in built} == {"full"}
        assert all(r.fn.fn is not old for r, old in zip(built, functions))  # swapped
        got += [step(Tensor(inputs[i])).numpy() for i in range(3, 5)]  # replays after the swap
    for x, out in zip(inputs, got):
        np.testing.assert_allclose(out, np.maximum(x @ w * scale, 0).sum(1), rtol=1e-4,
                                   atol=1e-5)


def test_a_small_batch_builds_once_fully():
    x = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
    before = set(STATE.runners)
    scale = float(np.float32(np.random.default_rng().random() + 1))
    with Context(TINYLAB_QUICK_BUILD=50, DEV="CPU"):
        out = (Tensor(x) * scale).exp().numpy()
    np.testing.assert_allclose(out, np.exp(x * scale), rtol=1e-6)
    assert {r.build.tier for r in _runners(before)} == {"full"}


def test_the_quick_build_shares_the_full_builds_precompiled_header(tmp_path):
    runtime = CPURuntime(cache_dir=tmp_path)
    if not runtime.is_gcc():
        pytest.skip("precompiled headers are gcc's")
    source = "#include <immintrin.h>\nvoid k(float* a) { a[0] = 1.0f; }\n"
    facts = BuildFacts(intrinsics=True)  # as the C renderer says of such a source
    full = runtime._header_flags(True, runtime.flags(facts), None)
    assert full and runtime._header_flags(True, runtime.flags(facts, quick=True), None) == full
    assert "-O1" in runtime.flags(facts, quick=True) and "-O2" in runtime.flags(facts)
    assert "-fexpensive-optimizations" in runtime.flags(facts, quick=True)  # FMA contraction
    # tiles' accumulators in registers across the reduce loop, when the stores after it call a
    # helper (without it the CNN step's quick build ran 2x slower; docs/speed.md)
    assert "-fcaller-saves" in runtime.flags(facts, quick=True)
    kernel = [("k", source, facts)]
    quick = runtime.compile_unit(kernel, quick=True)
    assert runtime.tier_of(*quick[0][:2]) == "quick"
    runtime.compile_unit(kernel)                  # the full build, now cached
    assert runtime.tier_of(*runtime.compile_unit(kernel, quick=True)[0][:2]) == "full"



EXITING = """
import json, numpy as np
from tinylab import Context, GlobalCounters, Tensor
from tinylab.engine.realize import STATE
x = Tensor(np.linspace(-1, 1, 40, dtype=np.float32).reshape(4, 10))
with Context(TINYLAB_QUICK_BUILD=1):
    outs = [(x * 3).exp().sum(1), x.softmax(1), (x - 1).relu().cumsum(1)]
    Tensor.realize(*outs)
print(json.dumps({"tiers": sorted({r.build.tier for r in STATE.runners.values()}),
                  "compiled": GlobalCounters.compile_count,
                  "values": [o.numpy().tolist() for o in outs]}))
"""


def test_a_process_that_exits_leaves_the_full_build_for_the_next(tmp_path):
    def run() -> dict:
        done = subprocess.run([sys.executable, "-c", EXITING], capture_output=True, text=True,
                              env=dict(os.environ, TINYLAB_CACHE=str(tmp_path)), timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])
    first, second = run(), run()
    assert "quick" in first["tiers"] and first["compiled"] > 0
    assert second["tiers"] == ["full"] and second["compiled"] == 0   # the exit waited for it
    x = np.linspace(-1, 1, 40, dtype=np.float32).reshape(4, 10)
    soft = np.exp(x - x.max(1, keepdims=True))
    want = [np.exp(x * 3).sum(1), soft / soft.sum(1, keepdims=True),
            np.cumsum(np.maximum(x - 1, 0), 1)]
    for got, again, expected in zip(first["values"], second["values"], want):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got, again)


def test_a_forked_child_builds_quick_and_swaps_in_its_own_full_build():
    if not hasattr(os, "fork"):
        pytest.skip("no fork here")
    x = np.linspace(0, 2, 18, dtype=np.float32).reshape(3, 6)
    parent = float(np.float32(np.random.default_rng().random() + 1))   # a new kernel
    with Context(TINYLAB_QUICK_BUILD=1, DEV="CPU"):
        (Tensor(x) * parent).exp().numpy()   # the parent's pool exists before the fork
    assert build_tiers._POOL is not None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: a new quick batch, its full build waited for
        try:
            scale = float(np.float32(np.random.default_rng().random() + 3))
            with Context(TINYLAB_QUICK_BUILD=1, DEV="CPU"):
                out = (Tensor(x) * scale).sqrt().numpy()
                build_tiers.wait(timeout=30)
                again = (Tensor(x) * scale).sqrt().numpy()
            good = np.allclose(out, np.sqrt(x * scale), rtol=1e-6) and (out == again).all()
            os.write(write, b"ok" if good else b"wrong")
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 16) == b"ok"


class _RecordingRuntime:
    """A runtime that records each full-build compile (its kernel names) and loads names."""

    def __init__(self):
        self.compiled: list[list[str]] = []

    def compile_unit(self, kernels):
        self.compiled.append([name for name, _, _ in kernels])
        return [(f"lib{len(self.compiled)}", name, False) for name, _, _ in kernels]

    def load(self, library, symbol):
        return (library, symbol)


class _Program:
    def __init__(self):
        self.code = None

    def swap(self, other):
        self.code = other


def test_full_builds_wait_for_the_foreground_and_go_in_parts():
    """A full build queued while a realize builds kernels starts after it (the foreground keeps
    the cores), in parts of about PART_BYTES of source, each kernel swapped into its program."""
    from tinylab.engine.compile_record import KernelBuild
    runtime = _RecordingRuntime()
    source = "x" * (build_tiers.PART_BYTES // 2)
    kernels = [(f"k{i}", source, None, _Program(), KernelBuild("compiled", "quick"))
               for i in range(5)]
    with build_tiers.foreground():
        build_tiers.upgrade(runtime, kernels)
        threading.Event().wait(0.3)
        assert runtime.compiled == []            # nothing compiled while the foreground builds
        assert {k[4].tier for k in kernels} == {"quick"}
    build_tiers.wait(timeout=60)
    assert runtime.compiled == [["k0", "k1"], ["k2", "k3"], ["k4"]]
    assert [k[3].code for k in kernels] == [("lib1", "k0"), ("lib1", "k1"), ("lib2", "k2"),
                                            ("lib2", "k3"), ("lib3", "k4")]
    assert {k[4].tier for k in kernels} == {"full"}
