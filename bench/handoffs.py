"""Count the function hand-offs a reader follows through `(a @ b).relu().sum().numpy()`, from an empty
kernel cache: the tinylab call stacks at each stage's entry (schedule, plan, linearize, render,
compile, load, launch), joined into one tree; each edge is a hand-off. `python -m bench.handoffs`

Stages are found by their module's folder and function name (STAGES); prints the tree and the count.
"""
from __future__ import annotations

import os
import sys
import tempfile
import threading

STAGES = (  # (folder under tinylab/, function name): the entry of one stage of the trace
    ("schedule", "schedule"), ("codegen", "choose_opts"), ("codegen", "linearize"),
    ("renderers", "render"), ("renderers", "render_with_lines"), ("renderers", "render_kernel"),
    ("runtimes", "compile_unit"),
    ("runtimes", "load"),
    ("runtimes", "__call__"), ("runtimes", "copyout"),
)


def _where(code) -> tuple[str, str] | None:
    """(folder, 'module.function') of a tinylab function's code, None outside tinylab."""
    path = code.co_filename.replace(os.sep, "/")
    if "/tinylab/" not in path or "/tinylab/torch/" in path:
        return None
    inner = path.rsplit("/tinylab/", 1)[1]
    folder = inner.split("/")[0] if "/" in inner else ""
    return folder, f"{inner[:-3].replace('/', '.')}.{code.co_qualname}"


def stacks_at_stages(run) -> list[list[str]]:
    """The tinylab frames (outermost first) at the first entry into each stage while `run()` runs."""
    seen: dict = {}

    def profile(frame, event, arg):
        if event != "call":
            return
        where = _where(frame.f_code)
        if where is None:
            return
        stage = (where[0], frame.f_code.co_name)
        if stage not in STAGES:
            return
        if stage in seen:
            return
        chain, walk = [], frame
        while walk is not None:
            found = _where(walk.f_code)
            if found is not None:
                chain.append(found[1])
            walk = walk.f_back
        seen[stage] = chain[::-1]

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return list(seen.values())


def main() -> None:
    os.environ["TINYLAB_CACHE"] = tempfile.mkdtemp(prefix="tinylab-handoffs-")
    os.environ.setdefault("TINYLAB_CALIBRATE", "0")
    import numpy as np
    from tinylab import Tensor
    a = Tensor(np.ones((64, 64), np.float32))
    b = Tensor(np.ones((64, 64), np.float32))
    out = (a @ b).relu().sum()
    chains = stacks_at_stages(out.numpy)
    for depth_chain in chains:
        print(" -> ".join(name.rsplit(".", 1)[-1] for name in depth_chain))
    print(f"stages found: {len(chains)} of {len(STAGES)}; hand-offs (distinct caller->callee "
          f"edges on the stages' stacks): {_edges(chains)}")


def _edges(chains) -> int:
    return len({(parent, child) for chain in chains for parent, child in zip(chain, chain[1:])})


if __name__ == "__main__":
    main()
