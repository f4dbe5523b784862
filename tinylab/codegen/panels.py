"""Packed matmul panels, as a CPU target declares them to the scheduler (schedule/packing.py,
through the C renderer's matmul_panel and matmul_pack_rows): how wide the panels are, which rows
the measured register tile reads from them, and whether the rows operand is copied at all."""
from __future__ import annotations

from ..target.cpu_target import CPUTarget
from .heuristic_costs import _largest_divisor, accumulator_budget


def matmul_panel(target: CPUTarget, itemsize: int = 4) -> int:
    """Width of the panels big float matmuls are packed into (schedule/packing.py): one
    cache line of elements and at least one vector, so each step of the reduce reads whole
    lines of both panels (16 float32 on 64-byte lines: one AVX-512 vector, two AVX2 ones)."""
    return max(target.cache_line_bytes // itemsize, target.lanes_of(itemsize))


IN_PLACE_ROWS = 4  # rows a tile reads a whole row apart without a copy: half of 8 L1d ways


def packed_tile_rows(target: CPUTarget, itemsize: int = 4) -> int:
    """Rows of the register tile measured_tile gives a packed matmul on this target: the
    panel's vectors per row, then the measured micro-kernel's accumulators (within the
    budget) in rows, the largest count dividing the panel. 0 where the model plans the tile:
    nothing was measured, or the panel is one vector (no vectors per row to choose)."""
    panel = matmul_panel(target, itemsize)
    per_row = panel // target.lanes_of(itemsize)
    if not target.micro_kernel or per_row < 2:
        return 0
    rows, vectors = target.micro_kernel[:2]
    amount = _largest_divisor(per_row, vectors)
    rows = min(rows * vectors // amount, accumulator_budget(target) // amount)
    return _largest_divisor(panel, max(1, rows))


def packs_rows(target: CPUTarget, itemsize: int = 4) -> bool:
    """Whether a packed matmul copies its rows operand into panels too, or reads it in place
    (the columns are always copied). Rows of a row-major operand lie a whole row apart, at a
    power-of-two stride for the usual sizes, so all of a tile's rows map onto one L1d set: a
    tile of at most IN_PLACE_ROWS rows fits in half of the 8 ways every L1d we target has, and
    the copy (a kernel, a buffer of the operand's size) buys nothing. 1024 x 1024 under
    CPU_TARGET=avx2 (4 rows x 2 vectors), AMD EPYC Zen 4, TinyJit, 21 interleaved runs x 3:
    15.7-16.4 -> 14.6-15.7 ms. A tile of more rows (AVX-512's 16 x 1), or one the model
    plans (its ranking finds a packed panel's rows by their density), keeps the copy; so do
    rows longer than a page (schedule/packing.py)."""
    rows = packed_tile_rows(target, itemsize)
    return not rows or rows > IN_PLACE_ROWS
