"""How kernels are made ready (engine/kernel_builder.py, engine/planned_cache.py,
engine/schedule_store.py): a schedule's new kernels compile in fewer compiler runs than kernels,
and compute what numpy computes; a new process on that cache schedules and plans nothing (its
schedules, programs and binaries come from disk), computes the same numbers, and its compile
records, made when shown, hold the source that ran; a changed setting or
a changed tinylab plans again; the inspector shows each kernel's build as its record says."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tinylab
from tinylab import Context, GlobalCounters, Tensor
from tinylab.engine import kernel_builder, planned_cache
from tinylab.engine.realize import STATE
from tinylab.inspection import build_model, to_text
from tinylab.runtimes.cpu import CPURuntime

WORK = textwrap.dedent("""
    import json, numpy as np
    from tinylab import Context, GlobalCounters, Tensor
    from tinylab.engine import schedule_store
    schedule_store.WORTH_S = 0   # keep every schedule, however quick to make
    x = np.linspace(-2, 3, 96, dtype=np.float32).reshape(8, 12)
    t = Tensor(x)
    with Context(PARALLEL_COMPILE=1, THREADS=2):
        outs = [t.softmax(1), (t * 3 - 1).exp().sum(0), t.cumsum(1), t.max(0) + t.min(0)]
        Tensor.realize(*outs)
    kernel = next(r for r in __import__("tinylab.engine.realize", fromlist=["STATE"])
                  .STATE.runners.values())
    print(json.dumps({"values": [o.numpy().tolist() for o in outs],
                      "compiled": GlobalCounters.compile_count,
                      "built": GlobalCounters.kernels_built,
                      "loaded": GlobalCounters.programs_loaded,
                      "plan_s": GlobalCounters.plan_s,
                      "schedules": GlobalCounters.schedules_loaded,
                      "how": kernel.build.how,
                      "same_source": kernel.record.source == kernel.source,
                      "record_how": kernel.record.build.how}))
""")


def run_new_process(cache, **env) -> dict:
    done = subprocess.run([sys.executable, "-c", WORK], capture_output=True, text=True,
                          env=dict(os.environ, TINYLAB_CACHE=str(cache), **env), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def expected() -> list:
    x = np.linspace(-2, 3, 96, dtype=np.float32).reshape(8, 12)
    soft = np.exp(x - x.max(1, keepdims=True))
    return [soft / soft.sum(1, keepdims=True), np.exp(x * 3 - 1).sum(0), np.cumsum(x, 1),
            x.max(0) + x.min(0)]


def check(values):
    for got, want in zip(values, expected()):
        np.testing.assert_allclose(np.array(got, np.float32), want, rtol=2e-5, atol=1e-5)


def test_a_new_process_on_a_warm_cache_plans_nothing(tmp_path):
    cold = run_new_process(tmp_path)
    check(cold["values"])
    assert cold["compiled"] == cold["built"] > 3 and cold["loaded"] == 0 and cold["plan_s"] > 0
    assert cold["how"] == "compiled"
    warm = run_new_process(tmp_path)
    check(warm["values"])
    assert warm["built"] == cold["built"] and warm["loaded"] == warm["built"]
    assert warm["compiled"] == 0 and warm["plan_s"] == 0
    assert cold["schedules"] == 0 and warm["schedules"] >= 1   # cut and lowered by the first
    assert warm["how"] == warm["record_how"] == kernel_builder.PROGRAM_CACHED
    assert warm["same_source"]          # the record made on demand holds the text that ran


def test_other_settings_or_other_code_plan_again(tmp_path):
    run_new_process(tmp_path)
    noopt = run_new_process(tmp_path, NOOPT="1")     # another plan: planned, compiled here
    check(noopt["values"])
    assert noopt["loaded"] == 0 and noopt["compiled"] == noopt["built"]
    folder = tmp_path / planned_cache.FOLDER
    for entry in folder.iterdir():   # as if an older tinylab had planned them: not found now
        entry.rename(folder / f"x{entry.name}")
    again = run_new_process(tmp_path)
    check(again["values"])
    assert again["loaded"] == 0 and again["plan_s"] > 0 and again["compiled"] == 0


def test_a_corrupt_entry_is_planned_again(tmp_path):
    run_new_process(tmp_path)
    for entry in (tmp_path / planned_cache.FOLDER).iterdir():
        entry.write_text("{not json")
    again = run_new_process(tmp_path)
    check(again["values"])
    assert again["loaded"] == 0 and again["compiled"] == 0


def test_the_key_keeps_what_the_kernel_is():
    x = Tensor(np.arange(4, dtype=np.float32)).realize()
    plus_zero, minus_zero = x * 0.0, x * -0.0   # different values where x > 0
    asts = []
    for out in (plus_zero, minus_zero):
        with tinylab.trace() as recorded:
            out.numpy()
        asts.append(recorded.kernels[-1].ast)
    texts = [planned_cache.ast_text(ast) for ast in asts]
    assert texts[0] != texts[1] and "-0.0" in texts[1]
    assert planned_cache.program_key("CPU", asts[0], (0,)) != \
        planned_cache.program_key("CPU", asts[0], (1,))


def test_a_schedule_compiles_in_fewer_compiler_runs_than_kernels(monkeypatch):
    runs = []
    original = CPURuntime._build

    def counting(runtime, text, flags, out):
        runs.append(text)
        return original(runtime, text, flags, out)
    monkeypatch.setattr(CPURuntime, "_build", counting)
    x = np.linspace(-1, 1, 60, dtype=np.float32).reshape(6, 10)
    t = Tensor(x)
    scales = [float(np.float32(k)) for k in np.random.default_rng().random(6) + 1]  # new kernels
    with Context(PARALLEL_COMPILE=1, THREADS=2):
        GlobalCounters.reset()
        outs = [(t * k).exp().sum(1) + k for k in scales]
        Tensor.realize(*outs)
        built = GlobalCounters.compile_count
    for out, k in zip(outs, scales):
        np.testing.assert_allclose(out.numpy(), np.exp(x * k).sum(1) + k, rtol=1e-5)
    kernels = [text for text in runs if "void " in text]
    assert built == 6 and 1 <= len(kernels) < built
    runners = [r for r in STATE.runners.values() if r.build.unit_kernels > 1]
    assert runners and all(r.build.compile_s > 0 for r in runners)


def test_the_inspector_shows_each_kernels_build_from_its_record():
    x = Tensor(np.linspace(0, 1, 24, dtype=np.float32).reshape(4, 6))
    scale = float(np.float32(np.random.default_rng().random() + 2))   # kernels no cache holds
    with tinylab.trace() as recorded:
        (x.exp() * scale).softmax(1).numpy()
    model = build_model(recorded, timings=True)
    for kernel, record in zip(model["kernels"], recorded.kernels):
        build = record.compiled.build
        assert kernel["build"]["how"] == build.how == "compiled"
        assert kernel["build"]["unit_kernels"] == build.unit_kernels
        assert kernel["build"]["text"] == build.describe()
        assert record.compile_s == pytest.approx(build.seconds)
    assert "build: compiled (full build): plan " in to_text(model)
