"""Index arithmetic past 2^31 elements: kernels over huge lazy buffers (never allocated) get 64-bit
loop counters and index expressions on every renderer, small kernels keep 32-bit ones, and a
compiled CPU kernel really reads element 2^31 + 5 (through a shifted pointer, in a subprocess)."""
import re
import subprocess
import sys
import textwrap

import pytest

from tinylab import Context, Tensor, dtypes
from tinylab.codegen.linearize import linearize
from tinylab.codegen.plan import KernelPlan, Opt
from tinylab.engine.realize import render_for
from tinylab.ir import node as ir
from tinylab.ir import symbolic as sym
from tinylab.runtimes.buffer import Buffer, HostAllocator
from tinylab.schedule.fusion import SchedulerOptions
from tinylab.schedule.schedule import schedule

INT32_MAX = 2 ** 31 - 1
TYPE_64 = {"NULL:C": "long long", "NULL:CL": "long", "NULL:CUDA": "long long"}


def lazy_buffer(elements: int, shape: tuple, dtype=dtypes.float32) -> Tensor:
    """A tensor over a buffer of `elements` that is never allocated (memory comes on first use)."""
    buffer = Buffer("CPU", elements, dtype, HostAllocator())
    return Tensor(ir.buffer(buffer, shape, dtype, "CPU", 0))


def kernel_asts(tensor: Tensor) -> list:
    return [item.ast for item in schedule([tensor.node], SchedulerOptions()).kernels]


def largest_partial_sum(expr: sym.Lin) -> int:
    total, inner = abs(expr.const), 0
    for atom, coeff in expr.terms:
        total += abs(coeff) * max(abs(atom.lo), abs(atom.hi))
        if isinstance(atom, (sym.Div, sym.Mod)):
            inner = max(inner, largest_partial_sum(atom.x))
    return max(total, inner)


def program_needs_64_bits(program) -> bool:
    """Independent of linearize's choice: any loop bound or index term beyond int32?"""
    if any(size > INT32_MAX for _, size, _ in program.loops):
        return True
    for instr in program.instrs:
        if instr.op not in ("LOAD", "STORE"):
            continue
        exprs = list(instr.arg[1]) + [leaf.x for c in instr.arg[2] for leaf in c.leaves()
                                      if leaf.x is not None]
        if any(largest_partial_sum(e) > INT32_MAX for e in exprs):
            return True
    return False


def padded_four() -> Tensor:
    """A 3-element buffer padded to 4: small, but reads under a mask."""
    return lazy_buffer(3, (3,)).pad(((0, 1),))


def huge_views() -> dict:
    """Kernels that cannot count in int32 however their loops are merged or split."""
    big = 2 ** 31 + 16
    return {
        "offset past 2^31": lazy_buffer(big, (big,))[2 ** 31 + 5: 2 ** 31 + 10] + 1,
        "sum over 3 x 2^30": lazy_buffer(3 * 2 ** 30, (3, 2 ** 30)).sum(0),
        "2^32 outputs": lazy_buffer(2 ** 32, (2 ** 32,)) * 2,
        "flipped 2^32": lazy_buffer(2 ** 32, (2 ** 32,)).flip(0)[:4] - 1,
    }


def tricky_views() -> dict:
    """Kernels whose loop and index sizes depend on how the plan merges axes."""
    return {
        "reduce of 2^33 steps": padded_four().reshape(1, 4).expand(2 ** 31, 4).sum(),
        "2^33 steps through mod": padded_four().reshape(1, 1, 4).expand(2 ** 19, 4096, 4)
        .reshape(2 ** 19, 4096 * 4).pad(((0, 0), (0, 3))).reshape(-1, 7).sum(),
        "strided 2^31 view": lazy_buffer(2 ** 32, (2 ** 16, 2 ** 16))[::2, 1::2].sum(1),
    }


OPTS = [(), (Opt("UPCAST", 0, 4),), (Opt("UNROLL", 0, 4),)]


def programs(tensor: Tensor, opts) -> list:
    out = []
    for ast in kernel_asts(tensor):
        try:
            out.append(linearize(KernelPlan.from_ast(ast).apply_all(opts)))
        except ValueError:
            continue  # this plan has no axis of that kind
    return out


@pytest.mark.parametrize("name", list(huge_views()))
@pytest.mark.parametrize("opts", OPTS)
def test_huge_views_get_64_bit_indices(name, opts):
    for program in programs(huge_views()[name], opts):
        assert program_needs_64_bits(program)
        assert program.index_dtype == dtypes.int64, f"{name}: {program.print()}"


@pytest.mark.parametrize("name", list(tricky_views()))
@pytest.mark.parametrize("opts", OPTS)
def test_64_bit_indices_whenever_a_term_needs_them(name, opts):
    for program in programs(tricky_views()[name], opts):
        if program_needs_64_bits(program):
            assert program.index_dtype == dtypes.int64, f"{name}: {program.print()}"


@pytest.mark.parametrize("device", list(TYPE_64))
def test_renderers_declare_64_bit_counters(device):
    for name, tensor in huge_views().items():
        for ast in kernel_asts(tensor):
            source = render_for(ast, device)
            counters = [f"{kind}idx0" for kind in ("g", "l", "r") if f"{kind}idx0" in source]
            for counter in counters:
                assert f"{TYPE_64[device]} {counter}" in source, f"{name} on {device}:\n{source}"


@pytest.mark.parametrize("steps", [2 ** 31, 2 ** 31 + 11])
def test_reduce_loop_longer_than_int32_counts_in_64_bits(steps):
    """Regression: a reduce loop of 2^31 or more steps counted with `int` (it overflowed).
    2^31 + 11 is prime, so partial sums (codegen/partial_sums.py) cannot split its loop; 2^31
    splits, and every loop that still passes int32 counts in 64 bits."""
    (ast,) = kernel_asts(padded_four().reshape(1, 4).expand(steps, 4).sum())
    with Context(NOOPT=1):
        source = render_for(ast, "NULL:C")
    loops = re.findall(r"for \((.+?) (ridx\d+) = 0; ridx\d+ < (\d+);", source)
    long_loops = [kind for kind, _, bound in loops if int(bound) > INT32_MAX]
    assert all(kind == "long long" for kind in long_loops), source
    assert len(long_loops) == (steps % 2), source  # only the prime loop stays one long loop


def test_small_kernels_keep_32_bit_indices():
    for ast in kernel_asts(lazy_buffer(1 << 20, (1024, 1024)).flip(1).sum(0) + 1):
        program = linearize(KernelPlan.from_ast(ast))
        assert program.index_dtype == dtypes.int32
        assert not program_needs_64_bits(program)


READ_PAST_2_31 = textwrap.dedent("""
    import ctypes, numpy as np
    from tinylab import Context, Tensor, dtypes
    from tinylab.engine.realize import compile_kernel
    from tinylab.ir import node as ir
    from tinylab.runtimes.buffer import Buffer, HostAllocator
    from tinylab.schedule.fusion import SchedulerOptions
    from tinylab.schedule.schedule import schedule
    big = 2 ** 31 + 16
    buffer = Buffer("CPU", big, dtypes.float32, HostAllocator())
    x = Tensor(ir.buffer(buffer, (big,), dtypes.float32, "CPU", 0))
    y = x[2 ** 31 + 5: 2 ** 31 + 10] * 2 + 1
    (item,) = schedule([y.node], SchedulerOptions()).kernels
    window = np.arange(16, dtype=np.float32)  # elements 2^31 .. 2^31 + 15 of the huge buffer
    shifted = ctypes.c_void_p(window.ctypes.data - 2 ** 31 * 4)
    for noopt in (True, False):
        out = np.zeros(5, np.float32)
        runner = compile_kernel("CPU", item.ast, noopt=noopt, beam=0)
        runner.fn.fn(ctypes.c_void_p(out.ctypes.data), shifted)
        print(out.tolist())
""")


def test_compiled_kernel_reads_past_2_31_elements():
    """The CPU kernel indexes 2^31 + 5 with 64-bit arithmetic: through a pointer shifted back by
    2^31 elements it lands in a 16-element window (32-bit math would wrap far outside it)."""
    done = subprocess.run([sys.executable, "-c", READ_PAST_2_31], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    expected = [11.0, 13.0, 15.0, 17.0, 19.0]
    assert done.stdout.split("\n")[:2] == [str(expected)] * 2
