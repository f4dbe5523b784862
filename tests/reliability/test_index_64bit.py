"""Index arithmetic past 2^31 elements: kernels over huge lazy buffers (never allocated) get 64-bit
loop counters and index expressions on every renderer, small kernels keep 32-bit ones, and a
compiled CPU kernel really reads element 2^31 + 5 (through a shifted pointer, in a subprocess)."""
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


def huge_views() -> dict:
    big = 2 ** 31 + 16
    padded = lazy_buffer(3, (3,)).pad(((0, 1),)).reshape(1, 1, 4).expand(2 ** 19, 4096, 4)
    return {
        "offset past 2^31": lazy_buffer(big, (big,))[2 ** 31 + 5: 2 ** 31 + 10] + 1,
        "sum over 3 x 2^30": lazy_buffer(3 * 2 ** 30, (3, 2 ** 30)).sum(0),
        "2^32 outputs": lazy_buffer(2 ** 32, (2 ** 32,)) * 2,
        "flipped 2^32": lazy_buffer(2 ** 32, (2 ** 32,)).flip(0)[:4] - 1,
        # a reduce of 2^33 steps over a small padded buffer: loop counter and mod operands
        "reduce of 2^33 steps": padded.reshape(2 ** 19, 4096 * 4).pad(((0, 0), (0, 3)))
                                      .reshape(-1, 7).sum(),
    }


@pytest.mark.parametrize("name", list(huge_views()))
@pytest.mark.parametrize("opts", [(), (Opt("UPCAST", 0, 4),), (Opt("UNROLL", 0, 4),)])
def test_huge_views_get_64_bit_indices(name, opts):
    for ast in kernel_asts(huge_views()[name]):
        plan = KernelPlan.from_ast(ast)
        try:
            plan = plan.apply_all(opts)
        except ValueError:
            continue  # this plan has no axis of that kind
        program = linearize(plan)
        assert program_needs_64_bits(program)
        assert program.index_dtype == dtypes.int64, f"{name}: {program.print()}"


@pytest.mark.parametrize("device", list(TYPE_64))
def test_renderers_declare_64_bit_counters(device):
    for name, tensor in huge_views().items():
        for ast in kernel_asts(tensor):
            source = render_for(ast, device)
            counters = [f"{kind}idx0" for kind in ("g", "l", "r") if f"{kind}idx0" in source]
            for counter in counters:
                assert f"{TYPE_64[device]} {counter}" in source, f"{name} on {device}:\n{source}"


def test_reduce_loop_longer_than_int32_counts_in_64_bits():
    """Regression: the loop counter of a 2^33-step reduce was `int` (it overflowed, never ended)."""
    (ast,) = kernel_asts(huge_views()["reduce of 2^33 steps"])
    with Context(NOOPT=1):
        source = render_for(ast, "NULL:C")
    assert "for (long long ridx0 = 0; ridx0 < 8591507456;" in source, source


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
