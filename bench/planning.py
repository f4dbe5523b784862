"""How long planning takes, alone: lowering, the heuristic, linearize and render for every kernel
of the kernel corpus (bench/kernel_corpus.py: a CNN train step and 12 compositions), each round in
a new process (empty memo tables, as a cold first call has them), the cycle collector off as a
realize pauses it. No compiler runs. Prints the median and spread of the rounds and a digest of
the sources, which stays the same when a change to planning is meant to keep kernels identical.

    TINYLAB_CALIBRATE=0 python -m bench.planning [--rounds N]

The kernels are captured once (their ASTs pickled); calibration off keeps the plans independent
of the machine's timings.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time


def _capture(path: str) -> int:
    """Realize the corpus once; pickle every kernel's (device, AST) to `path`."""
    import numpy as np

    from bench.kernel_corpus import _cnn_step, _compositions
    from tinylab import Tensor, trace
    rng = np.random.default_rng(0)
    kernels = []
    for _, build in [("cnn_step", lambda: _cnn_step(rng))] + list(_compositions(rng)):
        with trace() as record:
            result = build()
            (result if isinstance(result, Tensor) else result[0]).realize()
        kernels += [(kernel.device, kernel.ast) for kernel in record.kernels]
    with open(path, "wb") as out:
        pickle.dump(kernels, out)
    return len(kernels)


def _round(path: str) -> dict:
    """Plan and render every captured kernel in this (new) process."""
    import gc
    import hashlib

    from tinylab import Device
    from tinylab.engine.compile_record import compile_record
    with open(path, "rb") as source:
        kernels = pickle.load(source)
    _ = Device["CPU"].target
    digest, plan_s, render_s = hashlib.sha256(), 0.0, 0.0
    gc.disable()   # as a realize pauses it (engine/collector.py); by hand: older commits too
    start = time.perf_counter()
    for device, ast in kernels:
        record = compile_record(device, ast, False, 0)
        digest.update(record.source.encode())
        plan_s, render_s = plan_s + record.timings[0], render_s + record.timings[1]
    return {"seconds": time.perf_counter() - start, "plan": plan_s, "render": render_s,
            "kernels": len(kernels), "digest": digest.hexdigest()[:16]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_round(args.child)))
        return
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "kernels.pickle")
        env = dict(os.environ, TINYLAB_CALIBRATE=os.environ.get("TINYLAB_CALIBRATE", "0"))
        subprocess.run([sys.executable, "-c", f"from bench.planning import _capture; "
                        f"_capture({path!r})"], env=env, check=True)
        rounds = [json.loads(subprocess.run(
            [sys.executable, "-m", "bench.planning", "--child", path], env=env, check=True,
            capture_output=True, text=True).stdout) for _ in range(args.rounds)]
    seconds = sorted(r["seconds"] for r in rounds)
    first = rounds[0]
    print(f"{first['kernels']} kernels planned and rendered: median {statistics.median(seconds):.3f} s "
          f"(min {seconds[0]:.3f}, max {seconds[-1]:.3f}; plan "
          f"{statistics.median(r['plan'] for r in rounds):.3f} + render "
          f"{statistics.median(r['render'] for r in rounds):.3f}), {args.rounds} new processes; "
          f"sources digest {first['digest']}"
          + ("" if len({r["digest"] for r in rounds}) == 1 else " (rounds disagree!)"))


if __name__ == "__main__":
    main()
