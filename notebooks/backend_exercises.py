"""Notebooks 04 and 06's builder exercises, checked on real backends: an OpenCL workgroup
reduction (built by pyopencl, run on PoCL, against numpy) and a C renderer with gaps for RANGE,
LOAD and the accumulator (registered as a device with the CPU runtime and run through the test
suite's op checks, tests/ir/test_primitives.py, plus reductions and masked loads, against numpy).
`op_checks(device)` is the op-suite runner notebook 06 uses; notebooks/solutions.py holds the
reference solutions.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from exercises import UNANSWERED, passed

from tinylab.renderers.cstyle import CStyleRenderer, cond_text, index_text

TESTS = Path(__file__).resolve().parents[1] / "tests"     # the repository's test suite


GROUP = 64                      # threads per workgroup the reduction checker launches
SIZES = (1, 63, 64, 1000, 4099)  # several groups, and n not a multiple of GROUP


def check_block_sum(source: str) -> bool:
    """`source` is OpenCL C for `block_sum(__global const float *x, __global float *partial,
    int n)`: launched with workgroups of GROUP threads over ceil(n / GROUP) groups, each group
    writes the sum of its GROUP inputs (zero past n) to partial[get_group_id(0)], the threads
    adding in local memory with a barrier. Built and run by pyopencl on the project's OpenCL
    device (PoCL on a CPU), compared with numpy for several n."""
    from tinylab import Device
    if source is UNANSWERED:
        print("[ ] block sum: write the kernel source in the cell above (replace the ...)")
        return False
    failures = [f"the source never uses {word}" for word in ("get_local_id", "__local",
                                                             "barrier") if word not in source]
    if failures:
        return passed("block sum", failures, "where do the threads of one workgroup keep the "
                      "values they share, and what stops a thread reading a value another "
                      "thread has not written yet?")
    cl, _, context, queue = Device["CL"].runtime.open()   # pyopencl, device, context, queue
    try:
        kernel = cl.Program(context, source).build().block_sum
    except cl.Error as error:
        return passed("block sum", [f"the build failed: {str(error)[-600:]}"],
                      "which line does the build log above name, and what does it expect there?")
    rng = np.random.default_rng(0)
    for n in SIZES:
        x = rng.standard_normal(n).astype(np.float32)
        groups = -(-n // GROUP)
        padded = np.zeros(groups * GROUP, np.float32)
        padded[:n] = x
        expected = padded.reshape(groups, GROUP).sum(axis=1)
        flags = cl.mem_flags
        x_buffer = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=x)
        partial = np.full(groups, np.nan, np.float32)
        out_buffer = cl.Buffer(context, flags.WRITE_ONLY, partial.nbytes)
        kernel(queue, (groups * GROUP,), (GROUP,), x_buffer, out_buffer, np.int32(n))
        cl.enqueue_copy(queue, partial, out_buffer)
        queue.finish()
        if not np.allclose(partial, expected, rtol=1e-5, atol=1e-5):
            wrong = int(np.argmax(~np.isclose(partial, expected, rtol=1e-5, atol=1e-5)))
            failures.append(f"n={n}: group {wrong} wrote {partial[wrong]:.5g}, numpy's sum of "
                            f"its {GROUP} values is {expected[wrong]:.5g}")
            break
    return passed("block sum", failures, "which group's sum is wrong: the first (is every one "
                  "of its 64 values added, and 0 loaded past n?) or a later one (which index "
                  "does each thread read its value from)?")


# ---- the op suite, run on any registered device ------------------------------------------------

def op_checks(device: str) -> list[tuple[str, str]]:
    """(case, "ok" or what went wrong) for every case of tests/ir/test_primitives.py (each unary,
    binary, cast, where and bitcast check), run with `device` as the default device."""
    from tinylab import Context
    sys.path[:0] = [str(TESTS), str(TESTS / "ir")]
    try:
        import test_primitives
    finally:
        del sys.path[:2]
    cases = [(f"{op.name} {x.dtype}", test_primitives.test_unary, (op, x, ref))
             for op, x, ref in test_primitives.UNARY]
    cases += [(f"{op.name} {a.dtype}", test_primitives.test_binary, (op, a, b, ref))
              for op, a, b, ref in test_primitives.BINARY]
    (cast_mark,) = [m for m in test_primitives.test_cast.pytestmark if m.name == "parametrize"]
    cases += [(f"CAST {src.name}->{dst.name}", test_primitives.test_cast, (src, dst))
              for src, dst in cast_mark.args[1]]
    cases += [("WHERE", test_primitives.test_where, ()),
              ("BITCAST", test_primitives.test_bitcast, ())]
    results = []
    with Context(DEV=device):
        for title, test, args in cases:
            try:
                test(device, *args)
                results.append((title, "ok"))
            except AssertionError as error:
                results.append((title, "WRONG " + str(error).strip().splitlines()[0][:60]))
            except Exception as error:
                results.append((title, f"{type(error).__name__}: {str(error)[:60]}"))
    return results


# ---- a C renderer with gaps --------------------------------------------------------------------

class ScalarCRenderer(CStyleRenderer):
    """C with one scalar statement per line: notebook 06's walk spelled in C. The walk is here;
    a subclass fills the four gaps (open_loop, load, accumulator, accumulate). CStyleRenderer
    gives the C spelling of a type (`type_name`), a literal (`literal`) and an ALU op (`alu`)."""
    device = "MYC"
    preamble = "#include <math.h>\n#include <stdbool.h>\n"
    line_maps = False   # render() below is the only walk (no provenance line map)

    def open_loop(self, variable: str, size: int) -> str:   # RANGE
        raise NotImplementedError

    def load(self, name: str, type_name: str, buffer: int, index: str, valid: str | None,
             zero: str) -> str:                                 # LOAD
        raise NotImplementedError

    def accumulator(self, name: str, type_name: str, init: str) -> str:   # ACC
        raise NotImplementedError

    def accumulate(self, acc: str, value: str, op: str, dtype) -> str:     # ACC_UPDATE
        raise NotImplementedError

    def render(self, program) -> str:
        names, lines, params, depth = {}, [], [], 1
        for i, instr in enumerate(program.instrs):
            op, dtype, pad = instr.op, instr.dtype.scalar, "  " * depth
            args = [names.get(s) for s in instr.src]
            if op == "PARAM":
                index, _size, is_out, is_in = instr.arg
                params.append(self.param(index, dtype, is_out, is_in))
            elif op == "RANGE":
                variable, size, _kind = instr.arg
                lines.append(pad + self.open_loop(variable, size))
                depth += 1
            elif op == "END":
                depth -= 1
                lines.append("  " * depth + "}")
            elif op == "CONST":
                names[i] = self.literal(instr.arg, dtype)
            elif op == "COND":
                names[i] = cond_text(instr.arg[0])
            elif op == "LOAD":
                buffer, (index,), (valid,) = instr.arg
                names[i] = f"val{i}"
                lines.append(pad + self.load(
                    names[i], self.type_name(dtype), buffer, index_text(index),
                    None if valid.is_true else cond_text(valid), self.literal(0, dtype)))
            elif op == "STORE":
                buffer, (index,), _ = instr.arg
                lines.append(f"{pad}data{buffer}[{index_text(index)}] = {args[0]};")
            elif op == "ACC":
                names[i] = f"acc{i}"
                lines.append(pad + self.accumulator(names[i], self.type_name(dtype),
                                                    self.literal(instr.arg, dtype)))
            elif op == "ACC_UPDATE":
                lines.append(pad + self.accumulate(args[0], args[1], instr.arg, dtype))
            else:   # an ALU op
                source = program.instrs[instr.src[0]].dtype.scalar if instr.src else dtype
                names[i] = f"alu{i}"
                lines.append(f"{pad}{self.type_name(dtype)} alu{i} = "
                             f"{self.alu(op, args, dtype, source)};")
        body = "\n".join(lines)
        return (f"{self.preamble}{self.helpers('int', body)}void {program.name}("
                f"{', '.join(params)}) {{\n{body}\n}}\n")


def register_c(renderer_class, name: str = "MYC") -> str:
    """Register `renderer_class` as device `name`, compiled by the CPU runtime (the system C
    compiler) for the CPU device's target."""
    from tinylab import Device, config, register_backend
    from tinylab.runtimes.cpu import CPURuntime
    target = Device["CPU"].target
    register_backend(name, renderer_class,
                     lambda: CPURuntime(cache_dir=config.cache_dir() / "cpu", target=target),
                     language="C", lexer="c", description="scalar C written in notebook 06")
    return name


def _reductions(device: str) -> list[tuple[str, str]]:
    """Reduces and masked loads, against numpy: a row sum (float and int), a row max over rows
    with a NaN and over negative rows (the accumulator's start), a column sum of a padded view."""
    from tinylab import Tensor
    rng = np.random.default_rng(1)
    f = rng.standard_normal((5, 7)).astype(np.float32)
    negative = -np.abs(f) - 1
    with_nan = f.copy()
    with_nan[2, 3] = np.nan
    ints = rng.integers(-9, 9, (5, 7)).astype(np.int32)
    cases = [("SUM float32", lambda: Tensor(f, device=device).sum(1), f.sum(1)),
             ("SUM int32", lambda: Tensor(ints, device=device).sum(1), ints.sum(1)),
             ("MAX of negative rows", lambda: Tensor(negative, device=device).max(1),
              negative.max(1)),
             ("MAX with a NaN", lambda: Tensor(with_nan, device=device).max(1), with_nan.max(1)),
             ("SUM of a padded view", lambda: Tensor(f, device=device).pad(((1, 2), (3, 0)))
              .sum(0), np.pad(f, ((1, 2), (3, 0))).sum(0))]
    results = []
    for title, run, expected in cases:
        try:
            got = run().numpy()
            same = np.allclose(got, expected, rtol=1e-5, atol=1e-5, equal_nan=True)
            results.append((title, "ok" if same else f"WRONG {np.round(got, 3).tolist()}"))
        except Exception as error:
            results.append((title, f"{type(error).__name__}: {str(error)[-200:]}"))
    return results


def check_renderer(renderer_class) -> bool:
    """`renderer_class` (a ScalarCRenderer with its gaps filled), registered as device MYC, must
    pass the op suite and _reductions; the first failures are listed with a hint for them."""
    if renderer_class is UNANSWERED:
        print("[ ] C renderer: fill in the four gaps of MyCRenderer (replace the ...)")
        return False
    device = register_c(renderer_class)
    results = op_checks(device) + _reductions(device)
    failed = [(title, what) for title, what in results if what != "ok"]
    print(f"    {len(results) - len(failed)} of {len(results)} checks pass on {device}")
    if any("CompileError" in what for _, what in failed):
        print("    the compiler said:\n" + _compiler_message(device))
    return passed("C renderer", [f"{title}: {what}" for title, what in failed[:4]],
                  _renderer_hint(failed))


def _renderer_hint(failed: list) -> str:
    titles = " ".join(title for title, _ in failed)
    whats = " ".join(what for _, what in failed)
    if "Error" in whats and "WRONG" not in whats:
        return "which line does the compiler's message point at, and what C does it expect there?"
    if "padded" in titles and len(failed) == 1:
        return ("which loads of a padded view fall outside the buffer, and what must they read "
                "instead?")
    if "MAX" in titles and "SUM" not in titles:
        return "what must a max accumulator start from, and which op folds a value into it?"
    return ("which checks fail: do all of them read their inputs through your load, and does "
            "each loop visit every element once?")


def _compiler_message(device: str) -> str:
    """The end of the compiler's complaint about the plainest kernel, a row sum, on `device`."""
    from tinylab import Tensor
    try:
        Tensor(np.ones((2, 3), np.float32), device=device).sum(1).numpy()
    except Exception as error:   # a CompileError carries the compiler's log and the source
        log = getattr(error, "log", "") or str(error)
        return "\n".join("      " + line for line in log.strip().splitlines()[:12])
    return "      (a row sum compiles: the failing kernels use other ops)"
