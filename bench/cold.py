"""The cold-start suite (issue 53): how long the first call of real work takes, each in a new
process. Per workload of bench/cold_zoo.py: tinylab from an empty kernel cache ("cold"), again in
a new process on the cache that run left ("warm disk"), the cold run's calls right after its first
("next calls": a big first batch runs its quick build until the full one is swapped in), later
calls once the full build is in ("warm"); PyTorch eager's first and later calls; torch.compile's
(Inductor, empty cache) first call where it applies. tinylab's first calls are split into
schedule, plan (lowering, heuristic, linearize), render, the compile waited for and load
(GlobalCounters). Before timing, each child opens the CPU device (calibration and a first compile:
once per cache, their own row).

`python -m bench.cold [--quick] [--rounds N] [--only NAME,...]`; a `make bench` suite ("cold").
Its rows carry the metric "s cold"; `python -m bench.readme_table --write` puts them in their own
table. Children run this file with --child and print JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

METRIC = "s cold"
PHASES = ("schedule_s", "plan_s", "render_s", "compile_wait_s", "load_s")
WARM_CALLS = 5
TIMEOUT_S = 1800


# ---- the child: one workload, one framework, one new process ---------------------------------
def _open_device() -> float:
    """Open the CPU device as its first kernel would (calibration, a first vector compile)."""
    from tinylab import Device
    start = time.perf_counter()
    _ = Device["CPU"].target  # calibrated on first use
    from tinylab.target.build_facts import BuildFacts
    runtime, facts = Device["CPU"].runtime, BuildFacts(intrinsics=True)  # as a vector kernel's
    runtime.compile("#include <immintrin.h>\nvoid tl_first_use(void) {}\n", facts)
    return time.perf_counter() - start


def _tinylab_child(name: str) -> dict:
    from bench.cold_zoo import WORKLOADS
    from bench.common import full_builds
    from tinylab import GlobalCounters
    device_s = _open_device()
    call = WORKLOADS[name][0]()
    GlobalCounters.reset()
    start = time.perf_counter()
    call()
    first = time.perf_counter() - start
    phases = {phase: getattr(GlobalCounters, phase) for phase in PHASES}
    counts = {"compiled": GlobalCounters.compile_count, "kernels": GlobalCounters.kernels_built,
              "programs_loaded": GlobalCounters.programs_loaded,
              "compiler_wall_s": GlobalCounters.compile_wall_s}
    # the calls right after the first: a big first batch runs its quick build until the full
    # one, compiling beside at the lowest priority, is swapped in (a learner's next steps)
    following = _warm(call)
    full_builds()   # warm calls run the full build
    return {"first": first, "next": following, "warm": _warm(call), "phases": phases,
            "device_s": device_s, **counts}


def _torch_child(name: str, compiled: bool) -> dict:
    from bench.cold_zoo import WORKLOADS
    torch = __import__("torch")
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    call = WORKLOADS[name][1](compiled)
    start = time.perf_counter()
    call()
    first = time.perf_counter() - start
    return {"first": first, "warm": _warm(call)}


def _warm(call) -> float:
    times = []
    for _ in range(WARM_CALLS):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def child(argv) -> None:
    framework, name = argv
    if framework == "device":
        result = {"first": _open_device()}
    elif framework == "tinylab":
        result = _tinylab_child(name)
    else:
        result = _torch_child(name, framework == "inductor")
    print(json.dumps(result))


# ---- the parent --------------------------------------------------------------------------------
def _spawn(framework: str, name: str, cache: Path, inductor: Path | None = None) -> dict:
    env = dict(os.environ, TINYLAB_CACHE=str(cache), TUNE="0", PROGRESS="0")
    if inductor is not None:
        env["TORCHINDUCTOR_CACHE_DIR"] = str(inductor)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
    done = subprocess.run([sys.executable, "-m", "bench.cold", "--child", framework, name],
                          env=env, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=root)
    if done.returncode != 0:
        raise RuntimeError(f"{framework} child for {name!r} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(names: list[str], rounds: int, torch: bool, inductor: bool) -> dict:
    """{name: {"cold": [...], "disk": [...], "eager": [...], "inductor": [...]}, "device": [...]}:
    per round, a new cache for tinylab's cold run, then its warm-disk run, then PyTorch."""
    from bench.cold_zoo import WORKLOADS
    runs: dict = {name: {"cold": [], "disk": [], "eager": [], "inductor": []} for name in names}
    runs["device"] = []
    with tempfile.TemporaryDirectory(prefix="tinylab-bench-cold-") as folder:
        for index in range(rounds):
            runs["device"].append(_spawn("device", "", Path(folder) / f"device{index}"))
            for name in names:
                cache = Path(folder) / f"cache-{index}-{len(runs[name]['cold'])}-{hash(name)}"
                runs[name]["cold"].append(_spawn("tinylab", name, cache))
                runs[name]["disk"].append(_spawn("tinylab", name, cache))
                if torch:
                    runs[name]["eager"].append(_spawn("torch", name, cache))
                if torch and inductor and WORKLOADS[name][2]:
                    runs[name]["inductor"].append(
                        _spawn("inductor", name, cache, Path(folder) / f"inductor-{index}-"
                               f"{hash(name)}"))
    return runs


def _median(results: list, pick) -> float:
    return statistics.median(pick(r) for r in results)


def rows(runs: dict) -> list:
    from bench.cold_zoo import WORKLOADS
    from bench.common import Row
    out = []
    for name, kinds in runs.items():
        if name == "device":
            continue
        cold, disk = kinds["cold"], kinds["disk"]
        values = {"tinylab cold": _median(cold, lambda r: r["first"]),
                  "tinylab warm disk": _median(disk, lambda r: r["first"]),
                  "tinylab warm": _median(cold + disk, lambda r: r["warm"]),
                  "tinylab next calls": _median(cold, lambda r: r["next"])}
        for phase in PHASES:
            values[f"cold {phase[:-2]}"] = _median(cold, lambda r: r["phases"][phase])
            values[f"disk {phase[:-2]}"] = _median(disk, lambda r: r["phases"][phase])
        values["cold kernels"] = _median(cold, lambda r: r["kernels"])
        values["cold compiler wall"] = _median(cold, lambda r: r["compiler_wall_s"])
        if kinds["eager"]:
            values["torch first"] = _median(kinds["eager"], lambda r: r["first"])
            values["torch warm"] = _median(kinds["eager"], lambda r: r["warm"])
        if kinds["inductor"]:
            values["torch.compile first"] = _median(kinds["inductor"], lambda r: r["first"])
        out.append(Row(name, METRIC, values, WORKLOADS[name][3], notes=[verdict(name, values)]))
    device = runs["device"]
    out.append(Row("first use of the CPU: calibration and a first compile, empty cache",
                   METRIC, {"tinylab cold": _median(device, lambda r: r["first"])}, "reported"))
    return out


def verdict(name: str, values: dict) -> str:
    """Whether the row meets issue 53's goal, in words (the goal column says which)."""
    from bench.cold_zoo import MODEL_GOAL, WORKLOADS
    cold, disk, warm = (values[k] for k in ("tinylab cold", "tinylab warm disk", "tinylab warm"))
    goal = WORKLOADS[name][3]
    met = cold <= 3 * warm + 1 if goal == MODEL_GOAL else cold <= float(goal.split()[1])
    disk_met = disk <= warm + 0.3
    return (f"cold {'meets' if met else 'misses'} {goal}; warm disk "
            f"{'within' if disk_met else 'beyond'} 0.3 s of warm")


def run(quick: bool = False, rounds: int = 1, only: str = "") -> list:
    from bench.cold_zoo import WORKLOADS
    names = [n for n in WORKLOADS if not only or any(part in n for part in only.split(","))]
    if quick:
        names = [n for n in names if "ResNet" not in n and "b512" not in n]
    try:
        import torch  # noqa: F401 - only whether it is there
        torch_there = True
    except ImportError:
        torch_there = False
    return rows(measure(names, rounds, torch_there, inductor=not quick))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="no ResNet, demo or Inductor")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated parts of workload names")
    args = parser.parse_args(argv)
    from bench.common import cpu_description
    from bench.run import format_row, save
    cpu = cpu_description()
    started = time.time()
    found = run(args.quick, args.rounds, args.only)
    for row in found:
        row.cpu = cpu
        print(format_row(row))
        for note in row.notes:
            print(f"    {note}")
    print(f"wrote {save(cpu, found, round(time.time() - started, 1))}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        main()
