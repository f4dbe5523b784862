"""Random-graph fuzzing: random tensor programs (random_graphs.py) on every backend, fused and
unfused, optimized and not, against numpy and the IR oracle; chains of movement ops ending in an
integer index (movement_chains.py), lazy and realized step by step, against numpy; and random
optimization actions on scheduled kernels against `evaluate_kernel`. `make test` runs a bounded,
derandomized number of examples; `make fuzz` (FUZZ_EXAMPLES=2000) runs long with fresh
randomness each time."""
import os
import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from movement_chains import draw_chain
from random_graphs import recipes

from tinylab import Context, Device, Tensor
from tinylab.codegen.decompose import decompose
from tinylab.codegen.linearize import linearize
from tinylab.codegen.plan import AxisKind, KernelPlan, Opt, OptError
from tinylab.ir import node as ir
from tinylab.ir.evaluate import evaluate, evaluate_kernel
from tinylab.runtimes.buffer import Buffer
from tinylab.schedule.fusion import SchedulerOptions
from tinylab.schedule.schedule import schedule

BOUNDED_EXAMPLES = 160  # make test: ~70 s of the cold suite (250 took ~120 s); make fuzz runs 2000
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", BOUNDED_EXAMPLES))
LONG_RUN = EXAMPLES > BOUNDED_EXAMPLES
# compiling is slow (a C compile ~0.2 s, an OpenCL build ~0.8 s): those backends see a share
SHARE = {"PYTHON": 1.0, "CPU": 0.2, "CL": 0.06, "CUDA": 0.2}
CONFIGS = [(fuse, noopt) for fuse in (1, 0) for noopt in (0, 1)]


def examples_for(device: str, scale: float = 1.0) -> int:
    return max(3, int(EXAMPLES * SHARE.get(device, 0.1) * scale))


def fuzz_settings(examples: int):
    return settings(max_examples=examples, deadline=None, derandomize=not LONG_RUN,
                    database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def assert_close(got: np.ndarray, recipe, what: str, expected: np.ndarray | None = None):
    expected = recipe.expected if expected is None else expected
    context = f"{what}\nprogram:\n{recipe}"
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}; {context}"
    assert got.dtype == expected.dtype, f"dtype {got.dtype} != {expected.dtype}; {context}"
    if expected.dtype.kind == "f":
        tol = recipe.tolerance()
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * recipe.scale,
                                   equal_nan=True, err_msg=context)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=context)


def check_recipe(recipe, device: str) -> None:
    """Every configuration of one program: fused/unfused x optimized/plain, on `device`."""
    for fuse, noopt in CONFIGS:
        with Context(DEV=device, FUSE=fuse, NOOPT=noopt):
            tensors = recipe.build_all()
            tensor = tensors[-1]
            oracle = evaluate(tensor.node)  # before realizing: the lazy graph itself
            if recipe.also is not None:  # two outputs of one schedule
                Tensor.realize(tensor, tensors[recipe.also])
                assert_close(tensors[recipe.also].numpy(), recipe, f"{device} second output",
                             recipe.values[recipe.also])
            got = tensor.numpy()
        assert_close(oracle, recipe, "the IR oracle disagrees with numpy")
        assert_close(got, recipe, f"{device} FUSE={fuse} NOOPT={noopt} disagrees with numpy")


def test_random_graphs(device):
    @fuzz_settings(examples_for(device))
    @given(recipes())
    def fuzz(recipe):
        check_recipe(recipe, device)
    fuzz()


# ---- movement chains: lazily built, realized step by step, numpy -------------------------------
def check_chain(chain, device: str) -> None:
    """A chain of movement ops ending in an integer index (movement_chains.py), built lazily
    (fused and unfused) and with a realize after every step, reads what numpy reads."""
    expected = chain.numpy()
    for fuse in (1, 0):
        with Context(DEV=device, FUSE=fuse):
            results = {"lazy": chain.tensor().numpy()}
            if fuse:
                results["realized step by step"] = chain.tensor(realize_each=True).numpy()
        for how, got in results.items():
            assert got.shape == expected.shape, f"{how} FUSE={fuse}: shape; {chain}"
            np.testing.assert_array_equal(got, expected, err_msg=f"{how} FUSE={fuse}: {chain}")


def test_movement_chains(device):
    @fuzz_settings(examples_for(device))
    @given(st.randoms(use_true_random=False))
    def fuzz(chooser):
        check_chain(draw_chain(chooser), device)
    fuzz()


# ---- kernel level: random optimization actions on scheduled kernels ---------------------------
AMOUNTS = (0, 2, 3, 4, 8)
MAX_EXPANDED = 64  # product of register-tile sizes; beyond this the program gets huge


def random_opts(plan: KernelPlan, actions: tuple, chooser: random.Random, tries: int,
                max_work_group: int = 1024):
    """Apply up to `tries` random actions the plan accepts (work-groups within the renderer's
    limit); returns the final plan."""
    for _ in range(tries):
        if not plan.axes:
            break
        opt = Opt(chooser.choice(actions), chooser.randrange(len(plan.axes)),
                  chooser.choice(AMOUNTS) if chooser.random() < 0.8 else
                  chooser.randrange(len(plan.axes)))
        try:
            candidate = plan.apply(opt)
        except OptError:
            continue
        expanded = work_group = 1
        for axis in candidate.axes:
            expanded *= axis.size if axis.kind.is_expanded else 1
            work_group *= axis.size if axis.kind in (AxisKind.LOCAL, AxisKind.GROUP) else 1
        if expanded <= MAX_EXPANDED and work_group <= max_work_group:
            plan = candidate
    return plan


def _input_arrays(sched) -> dict:
    """Flat numpy contents of every slot after running the schedule through the oracle."""
    arrays = {}
    for item in sched.items:
        for slot in item.slots:
            if id(slot) not in arrays:
                size = ir.prod(slot.shape)
                arrays[id(slot)] = slot.existing.numpy() if slot.existing is not None else \
                    np.zeros(size, slot.dtype.np)
    return arrays


def run_kernel(device: str, plan: KernelPlan, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Compile `plan` for `device`, run it on copies of `arrays`, return their contents after."""
    spec = Device[device]
    program = linearize(plan, plan.name, fold_launch=spec.renderer.fold_launch)
    runtime = spec.runtime
    kernel = spec.renderer.render_kernel(program)
    library, _ = runtime.compile_kernel(kernel.source, kernel.facts)
    fn = runtime.load(library, plan.name)
    if device == "CPU":
        return run_guarded(fn, arrays, f"{plan.name} {[str(o) for o in plan.opts]}")
    buffers = [Buffer(spec.name, a.size, _dtype_of(a), spec.allocator).copyin(a) for a in arrays]
    fn(*[b.handle for b in buffers], dims=kernel.facts.launch)
    return [b.numpy() for b in buffers]


GUARD = 64  # sentinel elements around every buffer a CPU kernel gets


def _sentinel(array: np.ndarray) -> np.ndarray:
    if array.dtype.kind == "f":
        value = np.nan  # a read outside the buffer turns the result into NaN
    elif array.dtype.kind == "b":
        value = True
    else:
        value = np.iinfo(array.dtype).max // 3
    return np.full(GUARD, value, array.dtype)


def run_guarded(fn, arrays: list[np.ndarray], name: str) -> list[np.ndarray]:
    """Run a CPU kernel on buffers fenced by sentinels: a write outside any buffer fails here,
    a read outside one shows up as a wrong (NaN / odd) value against the oracle."""
    fenced = [np.concatenate([_sentinel(a), a, _sentinel(a)]) for a in arrays]
    fn(*[f[GUARD:GUARD + a.size].view(np.uint8) for f, a in zip(fenced, arrays)])
    for index, (f, a) in enumerate(zip(fenced, arrays)):
        before, after = f[:GUARD], f[GUARD + a.size:]
        for fence in (before, after):
            assert fence.tobytes() == _sentinel(a).tobytes(), \
                f"kernel {name} wrote outside buffer {index} ({a.dtype}[{a.size}])"
    return [f[GUARD:GUARD + a.size].copy() for f, a in zip(fenced, arrays)]


def _dtype_of(array: np.ndarray):
    from tinylab.dtype import dtypes
    return dtypes.from_numpy(array.dtype)


def check_kernels(recipe, device: str, fuse: bool, seed: int) -> int:
    chooser = random.Random(seed)
    with Context(DEV=device):
        tensor = recipe.build()
    sched = schedule([tensor.node], SchedulerOptions(fuse=fuse))
    arrays = _input_arrays(sched)
    renderer = Device[device].renderer
    checked = 0
    for item in sched.items:
        bufs = [arrays[id(s)] for s in item.slots]
        if item.kind == "copy":
            bufs[0][:] = bufs[1]
            continue
        before = [b.copy() for b in bufs]
        evaluate_kernel(item.ast, bufs)  # the oracle fills the outputs in place
        if ir.prod(item.slots[0].shape) == 0:
            continue
        base = KernelPlan.from_ast(decompose(item.ast, renderer))
        limit = renderer.max_work_group if "LOCAL" in renderer.supported_actions else 1
        plan = random_opts(base, renderer.supported_actions, chooser, chooser.randrange(1, 6),
                           limit)
        got = run_kernel(device, plan, before)
        for index, (mine, oracle) in enumerate(zip(got, bufs)):
            message = (f"kernel {plan.name} opts {[str(o) for o in plan.opts]} buffer {index}\n"
                       f"program:\n{recipe}")
            if oracle.dtype.kind == "f":
                tol = recipe.tolerance()
                np.testing.assert_allclose(mine, oracle, rtol=tol, atol=tol * recipe.scale,
                                           equal_nan=True, err_msg=message)
            else:
                np.testing.assert_array_equal(mine, oracle, err_msg=message)
        checked += 1
    return checked


def test_random_kernel_optimizations(device):
    @fuzz_settings(examples_for(device, 0.5))
    @given(recipes(), st.booleans(), st.integers(0, 2 ** 31))
    def fuzz(recipe, fuse, seed):
        check_kernels(recipe, device, fuse, seed)
    fuzz()
