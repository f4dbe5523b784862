"""GPU launch dimensions from a kernel's loop list [(var, size, kind)], outermost first.

A program's LaunchDims are folded once by linearize with its renderer's fold_launch (kept on the
frozen program and in its build facts); runtimes launch what they are given and compute nothing.
Output loops ("global") become the grid (work-groups), "local" and "group" loops the work-group
(block). The innermost loop takes dimension 0; beyond three loops, or past a dimension's limit,
loops share a dimension and each reads its part as (id / below) % size. Renderers use
`launch_dims` to write the index code; the limits are fixed here (CUDA's, which OpenCL devices
accept too).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class IdSpace(StrEnum):
    """Which id a loop reads its part of (a str: OpenCL spells it into get_<space>_id)."""
    GROUP = "group"   # the work-group (block) index
    LOCAL = "local"   # the work-item (thread) index inside the work-group


GRID_KINDS = ("global", "thread")
BLOCK_KINDS = ("local", "group")
GRID_LIMITS = (2 ** 31 - 1, 65535, 65535)
BLOCK_LIMITS = (1024, 1024, 64)


@dataclass(frozen=True)
class IdPart:
    """Loop `var` is (id[dim] / below) % size, where id is the group id or the local id."""
    var: str
    space: IdSpace
    dim: int
    below: int       # product of the sizes sharing this dimension inside this loop
    size: int
    alone: bool      # the only loop on this dimension: the id itself


@dataclass(frozen=True)
class LaunchDims:
    """How one GPU kernel is launched. The renderer computes it once per program (the ids its
    source reads); the compile record keeps it and the runtime launches exactly this."""
    grid: tuple      # work-groups per dimension (CUDA gridDim)
    block: tuple     # work-items per work-group per dimension (CUDA blockDim)
    parts: tuple     # IdPart per global / local loop
    dispatch: tuple | None = None  # work-groups as dispatched when it differs from grid (WebGPU)

    @property
    def global_size(self) -> tuple:
        """OpenCL's global work size: work-items per dimension."""
        return tuple(g * b for g, b in zip(self.grid, self.block))

    @property
    def groups(self) -> tuple:
        """Work-groups per dimension as the launch call is given them."""
        return self.dispatch or self.grid

    def describe(self) -> dict:
        """{grid, block, global_size, dispatch, text}: what the record and the inspector show."""
        return {"grid": list(self.grid), "block": list(self.block),
                "global_size": list(self.global_size), "dispatch": list(self.groups),
                "text": str(self)}

    def __str__(self) -> str:
        """'grid 4x1x1 work-groups of 64x1x1 work-items (global 256x1x1)' (DEBUG=3, to_text)."""
        def dims(values):
            return "x".join(str(v) for v in values)
        text = (f"grid {dims(self.grid)} work-groups of {dims(self.block)} work-items "
                f"(global {dims(self.global_size)})")
        return text + (f", dispatched as {dims(self.dispatch)}" if self.dispatch else "")


def require_dims(kernel: str, dims):
    """A GPU launch's LaunchDims, or a clear error where a caller gave none."""
    if not isinstance(dims, LaunchDims):
        raise TypeError(f"GPU kernel {kernel} is launched with the LaunchDims its renderer "
                        f"recorded (program.launch), not {dims!r}")
    return dims


def _assign(loops: list, limits: tuple) -> list[list]:
    """Group loops (innermost first) into at most three dimensions within `limits`."""
    dims: list[list] = [[], [], []]
    for i, loop in enumerate(reversed(loops)):
        dims[min(i, 2)].append(loop)
    sizes = [_product(d) for d in dims]
    if any(size > limit for size, limit in zip(sizes, limits)):
        dims = [list(reversed(loops)), [], []]   # fold everything into dimension 0
    return dims


def _product(loops) -> int:
    total = 1
    for _, size, _ in loops:
        total *= size
    return total


def _parts(dims: list[list], space: IdSpace) -> list[IdPart]:
    parts = []
    for dim, loops in enumerate(dims):
        below = 1
        for var, size, _ in loops:
            parts.append(IdPart(var, space, dim, below, size, len(loops) == 1))
            below *= size
    return parts


def launch_dims(loops, grid_limits: tuple = GRID_LIMITS,
                block_limits: tuple = BLOCK_LIMITS) -> LaunchDims:
    grid_loops = [loop for loop in loops if loop[2] in GRID_KINDS]
    block_loops = [loop for loop in loops if loop[2] in BLOCK_KINDS]
    grid_dims = _assign(grid_loops, grid_limits)
    block_dims = _assign(block_loops, block_limits)
    if _product(block_loops) > block_limits[0]:
        raise ValueError(f"work-group of {_product(block_loops)} work-items exceeds "
                         f"{block_limits[0]}")
    grid = tuple(_product(d) for d in grid_dims)
    block = tuple(_product(d) for d in block_dims)
    parts = tuple(_parts(grid_dims, IdSpace.GROUP) + _parts(block_dims, IdSpace.LOCAL))
    return LaunchDims(grid, block, parts)


# WebGPU: at most 65535 work-groups per dimension, 256 invocations per work-group by default.
# Its kernels index one flat work-group id and one flat local id (see renderers/wgsl.py).
WEBGPU_GROUP_LIMIT = 65535
WEBGPU_BLOCK_LIMIT = 256


def flat_launch_dims(loops) -> LaunchDims:
    """Every grid loop folded into one group index, every block loop into one local index."""
    grid_loops = [loop for loop in loops if loop[2] in GRID_KINDS]
    block_loops = [loop for loop in loops if loop[2] in BLOCK_KINDS]
    if _product(block_loops) > WEBGPU_BLOCK_LIMIT:
        raise ValueError(f"work-group of {_product(block_loops)} invocations exceeds WebGPU's "
                         f"{WEBGPU_BLOCK_LIMIT}")
    parts = _parts([list(reversed(grid_loops))], IdSpace.GROUP) + \
        _parts([list(reversed(block_loops))], IdSpace.LOCAL)
    groups = _product(grid_loops)
    dispatch = webgpu_dispatch(groups)   # past 65535 groups: x * y, the rest return early
    return LaunchDims((groups, 1, 1), (_product(block_loops), 1, 1), tuple(parts),
                      dispatch if dispatch != (groups, 1, 1) else None)


def webgpu_dispatch(groups: int) -> tuple[int, int, int]:
    """Work-groups per dimension covering `groups` flat ids (x * y may exceed it: the kernel
    returns early past the end)."""
    x = min(groups, WEBGPU_GROUP_LIMIT)
    y = -(-groups // x)
    if y > WEBGPU_GROUP_LIMIT:
        raise ValueError(f"{groups} work-groups exceed WebGPU's {WEBGPU_GROUP_LIMIT}² per launch")
    return (x, y, 1)
