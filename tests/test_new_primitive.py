"""A primitive is one row: SQUARE is declared below, in this file only, at run time, and then
renders and runs on C (CPU), OpenCL, WGSL and PYTHON, differentiates (reverse through autograd,
forward through tinylab.func.jvp) and batches (vmap), each checked against numpy or central
differences. CUBE has a C spelling and a decomposition only: WGSL and PYTHON decompose it."""
import re

import numpy as np
import pytest

from tinylab import Context, Device, Tensor, func, trace
from tinylab.engine.realize import STATE
from tinylab.errors import IRError
from tinylab.ir import node as ir
from tinylab.ir.ops import ALU, UNARY, Op
from tinylab.ir.primitives.row_parts import elementwise_batch

RNG = np.random.default_rng(55)
SQUARE_ROW = dict(
    oracle=np.square,
    reverse=lambda grad, node: (grad * node.src[0] * 2.0,),   # d x² = 2x dx
    jvp=lambda node, tangents: tangents[0] * node.src[0] * 2.0,
    batch=elementwise_batch,
    spellings={"c": lambda r, a, dtype, src: f"({a[0]}*{a[0]})",
               "c_vector": lambda walk, a, t, mask: f"({a[0]}*{a[0]})",
               "wgsl": lambda r, a, dtype, src: f"({a[0]} * {a[0]})"})


def unregister(row: Op) -> None:
    """Forget the row, and the kernels this process compiled with it (the session's end-of-run
    WGSL / CUDA checks render every kernel compiled so far: conftest.py)."""
    for key in [key for key in STATE.runners if any(n.op is row for n in key[1].toposort())]:
        del STATE.runners[key]
    Op.unregister(row.name)


@pytest.fixture
def square():
    row = Op.register("SQUARE", "unary", **SQUARE_ROW)
    yield row
    unregister(row)


@pytest.fixture
def cube():
    row = Op.register("CUBE", "unary", batch=elementwise_batch,
                      spellings={"c": lambda r, a, dtype, src: f"({a[0]}*{a[0]}*{a[0]})"},
                      decomposition=lambda x: x * x * x)   # x³ = x·x·x
    yield row
    unregister(row)


def apply(op: Op, x: Tensor) -> Tensor:
    return x._wrap(ir.alu(op, x.node))


def sources(fn) -> list[str]:
    with trace() as t:
        fn()
    return [k.source for k in t.kernels]


@pytest.mark.parametrize("device", ["CPU", "PYTHON", "CL"])
def test_square_renders_and_runs(square, device):
    if not Device[device].available:
        pytest.skip(f"{device} is not available here")
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    out = {}

    def run():   # alone, after a view, and fused into a reduce
        t = Tensor(x, device=device)
        out["alone"] = apply(square, t).numpy()
        out["view"] = apply(square, t.permute(1, 0)[1:5]).numpy()
        out["sum"] = apply(square, t + 1).sum(axis=1).numpy()
    texts = sources(run)
    np.testing.assert_allclose(out["alone"], x * x, rtol=1e-6)
    np.testing.assert_allclose(out["view"], (x.T * x.T)[1:5], rtol=1e-6)
    np.testing.assert_allclose(out["sum"], ((x + 1) ** 2).sum(axis=1), rtol=1e-5)
    spelled = "alu('SQUARE'" if device == "PYTHON" else "*val"
    assert any(spelled in text for text in texts), texts[0]


def test_square_renders_as_wgsl_and_runs_on_webgpu(square):
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    with Context(DEV="NULL:WGSL"):
        texts = sources(lambda: apply(square, Tensor(x) * 2).realize())
    assert any(re.search(r"\((alu\d+) \* \1\)", text) for text in texts), texts
    if Device["WEBGPU"].available:
        got = apply(square, Tensor(x, device="WEBGPU") * 2).numpy()
        np.testing.assert_allclose(got, (2 * x) ** 2, rtol=1e-6)


def test_square_differentiates_both_ways(square):
    x = RNG.standard_normal((3, 4))
    t = Tensor(x.astype(np.float32), requires_grad=True)
    apply(square, t).sum().backward()
    h = 1e-3   # central differences of the numpy oracle, in float64
    central = (np.square(x + h) - np.square(x - h)) / (2 * h)
    np.testing.assert_allclose(t.grad.numpy(), central, rtol=1e-4, atol=1e-5)
    v = RNG.standard_normal((3, 4))
    value, tangent = func.jvp(lambda a: apply(square, a), (Tensor(x.astype(np.float32)),),
                              (Tensor(v.astype(np.float32)),))
    np.testing.assert_allclose(value.numpy(), x * x, rtol=1e-5)
    np.testing.assert_allclose(tangent.numpy(), central * v, rtol=1e-4, atol=1e-5)


def test_square_batches(square):
    xs = RNG.standard_normal((5, 3, 4)).astype(np.float32)
    y = RNG.standard_normal((3, 4)).astype(np.float32)
    batched = func.vmap(lambda a, b: apply(square, a - b).sum(axis=1), in_dims=(0, None))
    np.testing.assert_allclose(batched(Tensor(xs), Tensor(y)).numpy(),
                               ((xs - y) ** 2).sum(axis=2), rtol=1e-5)


def test_the_row_sets_the_vocabulary(square):
    assert square in UNARY and square in ALU and Op["SQUARE"] is square
    assert all(square in Device[d].renderer.ops for d in ("CPU", "PYTHON", "NULL:WGSL"))
    assert [op.name for op in Op][-1] == "SQUARE"


def test_a_renderer_without_a_spelling_decomposes(cube):
    x = RNG.standard_normal((2, 5)).astype(np.float32)
    assert cube in Device["CPU"].renderer.ops
    assert cube not in Device["NULL:WGSL"].renderer.ops and cube not in Device["PYTHON"].renderer.ops
    got = apply(cube, Tensor(x, device="PYTHON")).numpy()
    np.testing.assert_allclose(got, x ** 3, rtol=1e-5)
    np.testing.assert_allclose(apply(cube, Tensor(x, device="CPU")).numpy(), x ** 3, rtol=1e-5)
    with Context(DEV="NULL:WGSL"):
        texts = sources(lambda: apply(cube, Tensor(x)).realize())
    assert "CUBE" not in texts[0] and texts[0].count(" * ") >= 2, texts[0]


def test_a_row_with_neither_spelling_nor_decomposition_is_refused():
    with pytest.raises(IRError, match=r"primitive HALVE: no spelling for the 'wgsl' renderers"):
        Op.register("HALVE", "unary", oracle=lambda a: a / 2,
                    spellings={"c": lambda r, a, dtype, src: f"({a[0]}/2)"})
    assert "HALVE" not in Op


def test_shipped_renderers_take_their_ops_from_the_rows():
    from tinylab.ir.ops import spelled_by
    for device, family in (("CPU", "c"), ("NULL:WGSL", "wgsl"), ("PYTHON", "python")):
        renderer = Device[device].renderer
        assert renderer.family == family and renderer.ops == spelled_by(family) == frozenset(ALU)
    decomposed = {op.name for op in ALU if op.decomposition is not None}
    assert decomposed == {"NEG", "TRUNC", "MAX", "MOD"}
