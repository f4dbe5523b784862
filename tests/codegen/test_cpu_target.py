"""The CPU target as data (target/cpu_target.py), on any machine: detection and presets, the
CPU_TARGET setting and its errors; for every preset, the heuristic's plans for the kernels of the
CNN train step and of matmul 1024 / 4096 keep their accumulators within the target's registers
and their vectors at its width (read from the plans, not from timings); kernels compiled for
every preset this CPU can execute equal numpy / PyTorch, and the others still compile."""
import dataclasses
import json
import warnings

import numpy as np
import pytest
import torch

from tinylab import Context, Device, Tensor, nn
from tinylab.codegen import heuristic, heuristic_costs
from tinylab.codegen.decompose import decompose
from tinylab.codegen.linearize import linearize
from tinylab.codegen.plan import KernelPlan, Opt
from tinylab.engine.realize import REALIZED, render_for
from tinylab.examples.beautiful_mnist import Model
from tinylab.ir.evaluate import evaluate_kernel
from tinylab.renderers.c import CRenderer
from tinylab.target import cpu_target
from tinylab.runtimes.cpu import CPURuntime
from tinylab.target.cpu_target import PRESETS, CPUTarget, TargetError, TargetWarning, detect
from tinylab.schedule.schedule import schedule

HOST = detect()
RUNNABLE = [name for name, t in PRESETS.items() if t.executable_on(HOST)]
FOREIGN = [name for name, t in PRESETS.items() if t.arch != HOST.arch]
ACTIONS = CRenderer.supported_actions
RNG = np.random.default_rng(3)


def _target(name: str, cores: int = 2) -> CPUTarget:
    return dataclasses.replace(PRESETS[name], cores=cores)


# ---- the description --------------------------------------------------------------------------
def test_detected_target_describes_this_machine():
    target = HOST
    assert target.name == "native" and target.flags  # -march=native (or -mcpu=native)
    assert target.vector_bits in (128, 256, 512) and target.vector_registers in (16, 32)
    assert target.lanes["float32"] == target.vector_bits // 32 == target.lanes_of(4)
    assert 0 < target.l1d_bytes < target.l2_bytes and target.cores >= 1
    assert "native" in target.describe() and "\n" not in target.describe()
    assert json.loads(json.dumps(target.as_dict()))["isa"] == target.isa
    assert target.key == detect().key  # stable within the process


def test_cpu_device_runs_the_preset_in_force():
    """The CPU device runs the target CPU_TARGET names when this CPU can execute it (a preset
    in force, e.g. `make presets`), else the detected one; the name says which."""
    chosen, device = cpu_target.current_target(), Device["CPU"].target
    expected = chosen if chosen.executable_on(HOST) else HOST
    assert (device.name, device.isa, device.flags) == (expected.name, expected.isa, expected.flags)
    assert device.name in (*PRESETS, "native") and device.name in device.describe()


def test_preset_flags_define_the_features_the_preset_claims():
    """What the compiler predefines for a preset's flags covers its features (presets of this
    machine's architecture; the compiler cannot answer for another one)."""
    for name, target in PRESETS.items():
        if target.arch == HOST.arch:
            macros = cpu_target.compiler_macros(CPURuntime().compiler, target.flags)
            assert macros is not None and target.features <= macros, name
    assert {"sse4", "avx2", "avx512", "neon"} <= set(PRESETS)
    keys = {_target(name).key for name in PRESETS}
    assert len(keys) == len(PRESETS)  # every field that changes a plan is in the key


def test_setting_names_every_preset():
    from tinylab import config
    assert all(name in config.CPU_TARGET.doc for name in PRESETS)


def test_unknown_preset_is_an_error_listing_the_presets():
    with Context(CPU_TARGET="avx3"):
        with pytest.raises(TargetError, match="avx3.*sse4, avx2, avx512, neon"):
            _ = Device["CPU"].target
        with pytest.raises(TargetError, match="presets"):
            _ = Device.DEFAULT  # not a quiet fall back to the PYTHON device
        with pytest.raises(TargetError):
            Tensor([1.0, 2.0]).exp().numpy()


@pytest.mark.parametrize("name", RUNNABLE)
def test_runnable_preset_is_what_the_cpu_device_compiles_for(name):
    with Context(CPU_TARGET=name), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Device["CPU"].target.name == name == Device["NULL:C"].target.name
        assert set(PRESETS[name].flags) <= set(Device["CPU"].runtime.flags())
        assert "-march=native" not in Device["CPU"].runtime.flags()


@pytest.mark.parametrize("name", FOREIGN)
def test_preset_this_cpu_cannot_run_warns_once_and_only_renders(name, monkeypatch):
    monkeypatch.setattr(cpu_target, "_WARNED", set())
    x = RNG.standard_normal((40, 70), dtype=np.float32)
    with Context(CPU_TARGET=name):
        with pytest.warns(TargetWarning, match=f"CPU_TARGET={name}.*cannot execute"):
            kept = Device["CPU"].target
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # once
            assert Device["CPU"].target == kept
            out = (Tensor(x).exp() * 2).sum(1).numpy()  # runs for the kept target
        assert kept.name == "native" and kept.isa == HOST.isa
        assert Device["NULL:C"].target.name == name
        (kernel,) = schedule([(Tensor(x).exp() * 2).sum(1).node], realized=REALIZED).kernels
        source = render_for(kernel.ast, "NULL:C")  # planned and rendered for the preset
    np.testing.assert_allclose(out, (np.exp(x) * 2).sum(1), rtol=1e-5)
    lanes = PRESETS[name].lanes_of(4)
    assert f"float{lanes} " in source and f"float{2 * lanes} " not in source


# ---- plans, read from the plan ------------------------------------------------------------------
def _step_asts(batch: int = 512) -> list:
    """The kernels of one beautiful_mnist train step (forward, backward, Adam), scheduled only."""
    Tensor.manual_seed(0)
    model = Model()
    optimizer = nn.optim.Adam(nn.state.get_parameters(model))
    images = Tensor(np.zeros((batch, 1, 28, 28), np.float32)).realize()
    labels = Tensor(np.zeros(batch, np.int32)).realize()
    with Tensor.train():
        optimizer.zero_grad()
        loss = model(images).sparse_categorical_crossentropy(labels).backward()
        outputs = optimizer.schedule_step() + [loss]
    return [k.ast for k in schedule([t.node for t in outputs], realized=REALIZED).kernels]


def _matmul_asts(n: int) -> list:
    a, b = (Tensor(np.zeros((n, n), np.float32)).realize() for _ in range(2))
    return [k.ast for k in schedule([(a @ b).node], realized=REALIZED).kernels]


@pytest.fixture(scope="module")
def kernels():
    return {"cnn step b512": _step_asts(), "matmul 1024": _matmul_asts(1024),
            "matmul 4096": _matmul_asts(4096)}


def _accumulator_registers(plan: KernelPlan, target: CPUTarget) -> int:
    """Vector registers the linearized program's innermost accumulators take on this target: the
    ones its inner loop updates. A long reduce's totals (codegen/partial_sums.py) take a partial
    sum once per partial chain, outside that loop, and may live in memory."""
    program = linearize(plan)
    instrs = program.instrs
    hot = {i.src[0] for i in instrs if i.op == "ACC_UPDATE" and instrs[i.src[1]].op != "ACC"}
    bits = [instrs[a].dtype.count * instrs[a].dtype.itemsize * 8 for a in hot]
    return sum(-(-b // target.vector_bits) for b in bits)


@pytest.mark.parametrize("name", list(PRESETS))
def test_plans_fit_the_target_registers_and_vectors(name, kernels):
    target = _target(name)
    renderer = CRenderer(target)
    budget, lanes = heuristic_costs.accumulator_budget(target), target.lanes_of(4)
    assert budget < target.vector_registers
    for label, asts in kernels.items():
        for ast in asts:
            plan = KernelPlan.from_ast(decompose(ast, renderer))
            chosen = plan.apply_all(heuristic.choose_opts(plan, ACTIONS, target))
            where = f"{name} {label} {chosen.name} {chosen.opts}"
            assert _accumulator_registers(chosen, target) <= budget, where
            vector = chosen.vector_axis
            assert vector is None or vector.size in heuristic_costs.vector_widths(target), where
            assert chosen.threads in (1, target.cores), where
    products = [KernelPlan.from_ast(ast) for ast in kernels["matmul 1024"]]
    product = max(products, key=lambda p: p.n_reduce)
    chosen = product.apply_all(heuristic.choose_opts(product, ACTIONS, target))
    assert chosen.vector_axis.size == lanes  # the big product uses whole vectors
    assert renderer.matmul_panel % lanes == 0


def test_presets_plan_differently_where_their_cpus_differ(kernels):
    """The packed 1024 product: AVX-512 takes 16 lanes, AVX2 8, SSE4 and NEON 4 (the same rules,
    different data)."""
    (product,) = [KernelPlan.from_ast(a) for a in kernels["matmul 1024"]
                  if KernelPlan.from_ast(a).n_reduce]
    widths = {name: product.apply_all(heuristic.choose_opts(product, ACTIONS, _target(name)))
              .vector_axis.size for name in PRESETS}
    assert widths == {"sse4": 4, "avx2": 8, "avx512": 16, "neon": 4}
    one_core = heuristic.choose_opts(product, ACTIONS, _target("avx2", cores=1))
    assert not any(o.action == "THREAD" for o in one_core)


# ---- compiled kernels -------------------------------------------------------------------------
def _workloads():
    """(name, build(tensors), numpy/torch reference, input arrays): odd sizes give padded
    vectors and masked loads; conv padding gives masked window loads."""
    a = RNG.standard_normal((37, 53), dtype=np.float32)
    b = RNG.standard_normal((53, 29), dtype=np.float32)
    x = RNG.standard_normal((3, 4, 11, 11), dtype=np.float32)
    w = RNG.standard_normal((6, 4, 3, 3), dtype=np.float32)
    g = RNG.standard_normal((3, 6, 11, 11), dtype=np.float32)
    big = RNG.standard_normal((256, 384), dtype=np.float32)
    big_b = RNG.standard_normal((384, 512), dtype=np.float32)

    def conv_grads(tx, tw, tg):
        tx, tw = tx.requires_grad_(), tw.requires_grad_()
        (tx.conv2d(tw, padding=1) * tg).sum().backward()
        return [tx.grad, tw.grad]

    def conv_grads_torch():
        rx, rw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
        (torch.nn.functional.conv2d(rx, rw, padding=1) * torch.tensor(g)).sum().backward()
        return [rx.grad.numpy(), rw.grad.numpy()]

    return [
        ("matmul relu", lambda ta, tb: [(ta @ tb).relu()], lambda: [np.maximum(a @ b, 0)], [a, b]),
        ("packed matmul", lambda ta, tb: [ta @ tb], lambda: [big @ big_b], [big, big_b]),
        ("math", lambda ta: [ta.abs().sqrt() + ta.exp() - (ta.abs() + 1).log(), ta.max(1)],
         lambda: [np.sqrt(np.abs(a)) + np.exp(a) - np.log(np.abs(a) + 1), a.max(1)], [a]),
        ("conv padded, grads", conv_grads, conv_grads_torch, [x, w, g]),
        ("max pool", lambda tx: [tx.max_pool2d()],
         lambda: [torch.nn.functional.max_pool2d(torch.tensor(x), 2).numpy()], [x]),
    ]


@pytest.mark.parametrize("name", RUNNABLE + ["native"])
def test_kernels_compiled_for_a_runnable_preset_equal_the_reference(name):
    with Context(CPU_TARGET=name):
        assert Device["CPU"].target.name == name
        for label, build, reference, arrays in _workloads():
            outs = build(*[Tensor(arr) for arr in arrays])
            for out, ref in zip(outs, reference()):
                np.testing.assert_allclose(out.numpy(), ref, rtol=2e-4, atol=2e-4,
                                           err_msg=f"{name}: {label}")


def _masked_plans(target: CPUTarget) -> list:
    """(AST, plan) pairs with masked vector loads: the heuristic's plan of a matmul whose 29
    columns pad the last vector, and a conv weight gradient vectorized over its 5 kx taps at the
    target's full width (the other lanes masked off)."""
    a = Tensor(RNG.standard_normal((37, 53), dtype=np.float32)).realize()
    b = Tensor(RNG.standard_normal((53, 29), dtype=np.float32)).realize()
    (matmul,) = schedule([(a @ b).node], realized=REALIZED).kernels
    plan = KernelPlan.from_ast(matmul.ast)
    out = [(matmul.ast, plan.apply_all(heuristic.choose_opts(plan, ACTIONS, target)))]
    tx = Tensor(RNG.standard_normal((2, 3, 9, 9), dtype=np.float32)).realize()
    tg = Tensor(RNG.standard_normal((2, 4, 5, 5), dtype=np.float32)).realize()
    tw = Tensor(RNG.standard_normal((4, 3, 5, 5), dtype=np.float32), requires_grad=True)
    (tx.conv2d(tw) * tg).sum().backward()
    (grad,) = schedule([tw.grad.node], realized=REALIZED).kernels
    plan = KernelPlan.from_ast(grad.ast)
    assert plan.shape == (4, 3, 5, 5, 2, 5, 5)
    out.append((grad.ast, plan.apply(Opt("VECTORIZE", 3, target.lanes_of(4)))))
    return out


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_renders_its_isa_and_compiles(name, tmp_path):
    """Same-architecture presets compile with their own flags (whether or not this CPU can run
    them: the compiler accepts -mavx512f anywhere) and run where it can. A preset of another
    architecture (NEON on x86) cannot be compiled for here: what is checked is that its source is
    portable C (no x86 header or intrinsic) that compiles and runs with the host compiler and no
    ISA flags, and gives the oracle's numbers; not how good gcc's AArch64 code for it would be."""
    target = _target(name)
    renderer = CRenderer(target)
    style = {"mask registers": "_mm512_maskz_loadu_ps", "maskload": "_mm256_maskload_ps",
             "select": f"i + {target.lanes_of(4)} <= n"}[target.masked_loads]
    if target.arch == HOST.arch:
        runtime = CPURuntime(cache_dir=tmp_path, target=target)
    else:
        runtime = CPURuntime(cache_dir=tmp_path, target=dataclasses.replace(
            HOST, name="host-baseline", flags=(), features=frozenset()))
    for index, (ast, plan) in enumerate(_masked_plans(target)):
        source = renderer.render(linearize(plan, plan.name))
        assert plan.vector_axis.size <= target.lanes_of(4) and "tl_maskload" in source, source
        assert not any(f"float{w} " in source for w in (8, 16, 32) if w > target.lanes_of(4))
        if index == 1:  # the full-width vector: the ISA's own masked load
            assert style in source, source
        if target.arch != HOST.arch:
            assert "immintrin" not in source and "_mm" not in source
        library, _ = runtime.compile(source)
        assert library.stat().st_size > 0
        if runtime.target.executable_on(HOST):
            _check_against_oracle(ast, plan, runtime, library)


def _check_against_oracle(ast, plan: KernelPlan, runtime: CPURuntime, library) -> None:
    """The compiled kernel's buffers after one run against the numpy oracle's (ir/evaluate.py)
    running the kernel's AST on the same random inputs."""
    from tinylab.codegen.beam import _buffers
    program = linearize(plan, plan.name)
    buffers = _buffers(program, Device["CPU"])
    expected = [b.numpy().copy() for b in buffers]
    runtime.load(library, plan.name)(*[b.handle for b in buffers])
    evaluate_kernel(ast, expected)
    for buffer, reference in zip(buffers, expected):
        np.testing.assert_allclose(buffer.numpy(), reference, rtol=1e-4, atol=1e-4)
