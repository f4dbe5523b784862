"""GlobalCounters: what the engine has run since the last reset (kernel launches, FLOPs, bytes
moved, kernel time). Read by DEBUG lines, benchmarks and tests; reset by `GlobalCounters.reset()`.
"""
from __future__ import annotations


class GlobalCounters:
    kernel_count: int = 0
    global_ops: int = 0
    global_mem: int = 0
    time_sum_s: float = 0.0
    mem_used: int = 0          # bytes held by live buffers the engine allocated
    compile_count: int = 0     # kernels compiled (a disk-cache hit is not a compile)
    kernels_built: int = 0     # kernels made ready in this process: compiled or loaded from disk
    compile_time_s: float = 0.0
    bytes_saved: int = 0       # bytes the memory planner did not allocate (buffers shared)
    schedule_cache_hits: int = 0  # realizes whose schedule this process had made before
    # where a cold start's time goes (engine/kernel_builder.py; bench/cold.py reads them)
    schedule_s: float = 0.0    # cutting the graph into kernels (a structure-cache hit: reuse)
    plan_s: float = 0.0        # decompose, heuristic, actions, linearize
    render_s: float = 0.0      # kernel source text
    compile_wall_s: float = 0.0  # compiler units' wall time (on threads, beside planning)
    compile_wait_s: float = 0.0  # the part of it a realize waited for, once all was planned
    load_s: float = 0.0        # binaries loaded and kernels found in them
    programs_loaded: int = 0   # kernels whose planned program came from the disk cache
    schedules_loaded: int = 0  # realizes whose schedule came from the disk cache

    @staticmethod
    def reset() -> None:
        GlobalCounters.kernel_count = 0
        GlobalCounters.global_ops = 0
        GlobalCounters.global_mem = 0
        GlobalCounters.time_sum_s = 0.0
        GlobalCounters.compile_count = 0
        GlobalCounters.kernels_built = 0
        GlobalCounters.compile_time_s = 0.0
        GlobalCounters.bytes_saved = 0
        GlobalCounters.schedule_cache_hits = 0
        GlobalCounters.schedule_s = GlobalCounters.plan_s = GlobalCounters.render_s = 0.0
        GlobalCounters.compile_wall_s = GlobalCounters.load_s = 0.0
        GlobalCounters.compile_wait_s = 0.0
        GlobalCounters.programs_loaded = GlobalCounters.schedules_loaded = 0
