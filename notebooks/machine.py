"""Which CPU a notebook's figures were measured on: `measured_on()` gives lscpu's model name with
its family and model numbers (AMD and Intel reuse one model name across generations), the cores
this process may use, the load average when it was called and the CPU target the kernels were
built for. The tutorial notebooks print it beside every timing they show.
"""
from __future__ import annotations

import os
import platform
import subprocess


def lscpu() -> dict[str, str]:
    """lscpu's fields (empty where there is no lscpu: not Linux)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return {key.strip(): value.strip() for key, _, value in
            (line.partition(":") for line in out.splitlines()) if value}


def measured_on() -> str:
    """'AMD EPYC (family 25 model 1), 2 cores, load 4.1; kernels built for avx2'."""
    from tinylab import Device
    info = lscpu()
    model = info.get("Model name") or platform.processor() or platform.machine()
    if "CPU family" in info:
        model += f" (family {info['CPU family']} model {info.get('Model', '?')})"
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    load = f", load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return f"{model}, {cores} cores{load}; kernels built for {Device['CPU'].target.name}"
