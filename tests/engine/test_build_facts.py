"""A kernel's build facts (target/build_facts.py): launch dimensions, threads, OpenMP, float16 and
the intrinsics header are read off the linear program by the renderer, kept on the compile record,
and read by the runtime, which never searches the source text. The oracle here is the source
itself (what the C compiler will see) and numpy; a program from the planned-program disk cache
launches with the same facts as the one planned in the process before it."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tinylab
from tinylab import Context, Tensor
from tinylab.engine.devices import Device
from tinylab.runtimes.cpu import FLOAT16_FLAGS, CPURuntime
from tinylab.target.build_facts import BuildFacts


def _traced_kernels(device: str = "CPU"):
    rng = np.random.default_rng(3)
    a = Tensor(rng.random((192, 160), dtype=np.float32), device=device).realize()
    b = Tensor(rng.random((160, 96), dtype=np.float32), device=device).realize()
    x = Tensor(rng.random((7, 30), dtype=np.float32), device=device).realize()
    outs = [a @ b, x.softmax(-1), (x[:, :29] * 3).exp()]
    if device == "CPU":
        outs.append((x.cast("float16") * 2).cast("float32"))
    with Context(NOOPT=0), tinylab.trace() as recorded:
        values = [o.numpy() for o in outs]
    np.testing.assert_allclose(values[0], a.numpy() @ b.numpy(), rtol=1e-4)
    return [kernel.compiled for kernel in recorded.kernels]


def test_each_cpu_kernels_facts_say_what_its_source_does():
    records = _traced_kernels()
    seen = {"openmp": False, "float16": False, "intrinsics": False}
    for record in records:
        facts, source = record.facts, record.source
        assert facts.openmp == ("#pragma omp" in source), source
        assert facts.float16 == ("_Float16" in source), source
        assert facts.intrinsics == ("#include <immintrin.h>" in source), source
        assert facts.threads == record.program.threads and facts.launch is None
        for name in seen:
            seen[name] |= getattr(facts, name)
    assert seen["openmp"] and seen["float16"]   # the corpus above has both
    with pytest.raises(AttributeError):          # frozen: nothing downstream rewrites them
        records[0].facts.openmp = True


def test_a_gpu_kernels_launch_is_a_fact_folded_once():
    for record in _traced_kernels("CL") if Device["CL"].available else []:
        renderer = Device["CL"].renderer
        assert record.facts.launch is record.program.launch is not None
        assert record.facts.launch == renderer.fold_launch(record.program.loops)
        assert record.launch["grid"] == list(record.facts.launch.grid)


def test_the_cpu_runtime_reads_facts_not_the_text(tmp_path):
    """A source that opens an OpenMP loop runs threads only when its facts say so; float16
    flags follow the facts; and the runtime's modules search no kernel text."""
    source = ("void k(float* restrict out) {\n  #pragma omp parallel for num_threads(2)\n"
              "  for (int i = 0; i < 8; i++) out[i] = (float)i;\n}\n")
    runtime = CPURuntime(cache_dir=tmp_path)
    for openmp in (True, False):
        facts = BuildFacts(threads=2, openmp=openmp)
        program = runtime.load(runtime.compile(source, facts)[0], "k")
        out = np.zeros(8, np.float32)
        program(out)
        np.testing.assert_array_equal(out, np.arange(8, dtype=np.float32))
        assert bool(program.threads) == openmp
    assert set(FLOAT16_FLAGS) <= set(runtime.flags(BuildFacts(float16=True)))
    assert not set(FLOAT16_FLAGS) & set(runtime.flags(BuildFacts()))
    package = Path(tinylab.__file__).parent / "runtimes"
    for name in ("cpu.py", "c_units.py"):
        text = (package / name).read_text()
        for needle in ('"#pragma omp" in', '"_Float16" in', '"#include <immintrin.h>" in'):
            assert needle not in text, (name, needle)


WORK = textwrap.dedent("""
    import json, numpy as np
    from tinylab import Context, Tensor
    from tinylab.engine.realize import STATE
    rng = np.random.default_rng(5)
    a, b = rng.random((192, 160), dtype=np.float32), rng.random((160, 96), dtype=np.float32)
    x = rng.random((5, 40), dtype=np.float32)
    with Context(PARALLEL_COMPILE=1):
        outs = [Tensor(a) @ Tensor(b), (Tensor(x).cast("float16") * 3).cast("float32")]
        Tensor.realize(*outs)
    ok = np.allclose(outs[0].numpy(), a @ b, rtol=1e-4) and np.array_equal(
        outs[1].numpy(), (x.astype(np.float16) * np.float16(3)).astype(np.float32))
    runners = sorted(STATE.runners.values(), key=lambda r: r.name)
    print(json.dumps({"ok": bool(ok), "kernels": [
        {"name": r.name, "how": r.build.how, "facts": r.facts.as_entry(),
         "threads_run": r.fn.threads} for r in runners]}))
""")


def _run(cache) -> dict:
    done = subprocess.run([sys.executable, "-c", WORK], capture_output=True, text=True,
                          env=dict(os.environ, TINYLAB_CACHE=str(cache)), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_program_from_the_disk_cache_launches_with_the_same_facts(tmp_path):
    cold, warm = _run(tmp_path), _run(tmp_path)
    assert cold["ok"] and warm["ok"]
    assert {k["how"] for k in cold["kernels"]} == {"compiled"}
    assert {k["how"] for k in warm["kernels"]} == {"planned program from the disk cache"}
    assert [k["facts"] for k in warm["kernels"]] == [k["facts"] for k in cold["kernels"]]
    assert [k["threads_run"] for k in warm["kernels"]] == \
        [k["threads_run"] for k in cold["kernels"]]
    assert any(k["facts"]["openmp"] and k["threads_run"] for k in warm["kernels"])
    assert any(k["facts"]["float16"] for k in warm["kernels"])
