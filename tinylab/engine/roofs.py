"""Memory roofs of a CPU, one per level: the bytes/s (read + written) a kernel whose working set
fits L1, L2, L3 (the last level) or only DRAM can reach at best. `memory_roofs(spec)` -> [Roof],
L1 first, DRAM last. Each level is measured on every core with a working set of half that level
(DRAM: at least LLC_TIMES x the last-level cache), by a loop kernel that streams its part of the
working set again and again in one launch (REPEAT_BYTES per launch, so the launch's own cost is
under 1% of the time): the best of a copy, an add (two reads, one write) and a read-only sum,
with np.copyto beside them where one call moves megabytes (L3, DRAM). Cache sizes are the
machine's (target.detect), not a preset's. peak.py keeps the best ever seen per CPU.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from types import MappingProxyType

from ..target.build_facts import BuildFacts

LEVELS = ("L1", "L2", "L3", "DRAM")
DRAM_BYTES = 1 << 27          # the DRAM working set moves at least 128 MiB ...
LLC_TIMES = 4                 # ... and at least 4x the last-level cache
REPEAT_BYTES = 1 << 28        # bytes one launch moves: its fixed cost is then negligible
RUNS = 5                      # launches per round (peak.steady_best repeats rounds)
UNROLL = 4                    # vectors per loop trip
# pattern -> (arrays read, arrays written, the loop body over vectors x0..x3 at offset i)
PATTERNS = MappingProxyType({
    "copy": (1, 1, "*(tl_vec_u*)(d + i + {k}) = *(const tl_vec_u*)(a + i + {k});"),
    "add": (2, 1, "*(tl_vec_u*)(d + i + {k}) = *(const tl_vec_u*)(a + i + {k}) + "
                  "*(const tl_vec_u*)(b + i + {k});"),
    "read": (1, 0, "s{u} += *(const tl_vec_u*)(a + i + {k});"),
})
STREAM_KERNEL = """#include <omp.h>
typedef float tl_vec_u __attribute__((vector_size({bytes}), aligned(4)));
void tl_stream_{pattern}(float* restrict d, const float* restrict a, const float* restrict b,
                         float* restrict sink, int n, int repeats) {{
  #pragma omp parallel num_threads({threads})
  {{
    long t = omp_get_thread_num(), count = omp_get_num_threads(), step = {step};
    long lo = n * t / count / step * step, hi = n * (t + 1) / count / step * step;
    tl_vec_u {sums};
    for (int r = 0; r < repeats; r++) {{
      for (long i = lo; i < hi; i += step) {{
{body}
      }}
      __asm__ __volatile__("" ::: "memory");   /* every repeat reads and writes memory again */
    }}
    tl_vec_u total = {total};
    float lane_sum = 0;
    for (int l = 0; l < {lanes}; l++) lane_sum += total[l];
    sink[t] = lane_sum;
  }}
}}
"""


@dataclass(frozen=True)
class Roof:
    level: str               # L1, L2, L3 or DRAM
    fits_bytes: int | None   # kernels whose buffers total at most this use this roof (DRAM: None)
    bytes_per_s: float
    how: str                 # how it was measured, in words


def level_budgets(l1d: int, l2: int, l3: int, cores: int) -> list[tuple[str, int | None, int]]:
    """(level, the bytes a kernel's buffers may total to count as fitting it, the working set the
    roof is measured with): L1 and L2 are per core (all cores together), L3 is shared; a level
    no larger than the one below it (no L3) is left out. DRAM: LLC_TIMES x the last level."""
    out, below = [], 0
    for level, capacity in (("L1", l1d * cores), ("L2", l2 * cores), ("L3", l3)):
        if capacity > below:
            out.append((level, capacity, capacity // 2))
            below = capacity
    out.append(("DRAM", None, max(DRAM_BYTES, LLC_TIMES * below)))
    return out


def stream_source(pattern: str, lanes: int, threads: int) -> str:
    reads, writes, line = PATTERNS[pattern]
    body = "\n".join("        " + line.format(k=u * lanes, u=u) for u in range(UNROLL))
    return STREAM_KERNEL.format(
        bytes=4 * lanes, pattern=pattern, threads=threads, step=UNROLL * lanes, lanes=lanes, body=body,
        sums=", ".join(f"s{u} = {{0}}" for u in range(UNROLL)),
        total=" + ".join(f"s{u}" for u in range(UNROLL)))


def memory_roofs(spec, steady_best) -> list[Roof]:
    """Every level's roof on `spec` (a CPU DeviceSpec), measured now; each level's roof is at
    least the next larger level's (what streams from DRAM streams from a cache as fast)."""
    from ..target.cpu_target import detect
    machine, target = detect(), spec.target
    programs = {pattern: _load(spec, pattern, target.lanes_of(4), target.cores)
                for pattern in PATTERNS}
    roofs = []
    for level, fits, working_set in level_budgets(machine.l1d_bytes, machine.l2_bytes,
                                                  machine.l3_bytes, target.cores):
        rates = {pattern: _stream_rate(program, pattern, working_set, target, steady_best)
                 for pattern, program in programs.items()}
        if level in ("L3", "DRAM"):
            rates["np.copyto"] = _numpy_copy_rate(working_set // 8, steady_best)
        best = max(rates, key=rates.get)
        words = ", ".join(f"{name} {rate / 1e9:.1f}" for name, rate in rates.items())
        how = (f"best of {words} GB/s over a {_size(working_set)} working set on "
               f"{target.cores} core{'s' if target.cores != 1 else ''}, best of {RUNS} launches "
               f"of >= {REPEAT_BYTES >> 20} MiB each, {time.strftime('%Y-%m-%d')}")
        roofs.append(Roof(level, fits, rates[best], how))
    for index in range(len(roofs) - 2, -1, -1):   # monotone: L1 >= L2 >= L3 >= DRAM
        larger = roofs[index + 1]
        if roofs[index].bytes_per_s < larger.bytes_per_s:
            roofs[index] = Roof(roofs[index].level, roofs[index].fits_bytes, larger.bytes_per_s,
                                roofs[index].how + f"; raised to the {larger.level} roof")
    return roofs


def _load(spec, pattern: str, lanes: int, threads: int):
    facts = BuildFacts(threads=threads, openmp=True)  # its loop is an OpenMP parallel one
    library, _ = spec.runtime.compile(stream_source(pattern, lanes, threads), facts)
    return spec.runtime.load(library, f"tl_stream_{pattern}")


def _stream_rate(program, pattern: str, working_set: int, target, steady_best) -> float:
    """Bytes/s of `pattern` over `working_set` bytes (all its arrays together)."""
    import numpy as np
    reads, writes, _ = PATTERNS[pattern]
    arrays = reads + writes
    step = UNROLL * target.lanes_of(4) * target.cores
    n = max(step, working_set // 4 // arrays // step * step)
    a, b, d = (np.ones(n, dtype=np.float32) for _ in range(3))
    sink = np.zeros(max(1, target.cores), dtype=np.float32)
    per_repeat = 4 * n * arrays
    repeats = max(1, -(-REPEAT_BYTES // per_repeat))
    seconds = steady_best(lambda: program(d, a, b, sink, scalars=(n, repeats)), RUNS)
    return per_repeat * repeats / seconds


def _numpy_copy_rate(size: int, steady_best) -> float:
    import numpy as np
    source, target = np.ones(size, dtype=np.float32), np.empty(size, dtype=np.float32)

    def once() -> float:
        start = time.perf_counter()
        np.copyto(target, source)
        return time.perf_counter() - start
    return 2 * source.nbytes / steady_best(once, RUNS)


def _size(nbytes: int) -> str:
    return f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"
