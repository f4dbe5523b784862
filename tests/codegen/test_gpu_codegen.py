"""GPU lowering on OpenCL (PoCL here): work-group axes (LOCAL), grouped reduces through local
memory (GROUP), folded launch dimensions and float16 as a storage type, each checked against
numpy with the plan forced, plus the launch-dimension arithmetic on its own."""
import itertools

import numpy as np
import pytest

from tinylab import Context, Device, Tensor, trace
from tinylab.codegen.plan import Opt
from tinylab.engine import compile_record, realize
from tinylab.target.launch import launch_dims

needs_cl = pytest.mark.skipif(not Device["CL"].available, reason="no OpenCL device")
RNG = np.random.default_rng(3)
X = RNG.standard_normal((8, 1024)).astype(np.float32)
A = RNG.standard_normal((16, 32)).astype(np.float32)
B = RNG.standard_normal((32, 24)).astype(np.float32)
P = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)


def _matmul(a, b):
    n, k = a.shape
    m = b.shape[1]
    return (a.reshape(n, 1, k) * b.T.reshape(1, m, k)).sum(axis=2)


# name: (inputs, build, numpy reference, forced actions)
CASES = {
    "grouped sum": ([X], lambda x: x.sum(1), lambda x: x.sum(1), [Opt("GROUP", 1, 64)]),
    "grouped max, local rows": ([X], lambda x: x.max(1), lambda x: x.max(1),
                                [Opt("GROUP", 1, 32), Opt("LOCAL", 0, 4)]),
    "grouped sum, register tile": ([X], lambda x: (x * 2).sum(1), lambda x: (x * 2).sum(1),
                                   [Opt("UPCAST", 0, 2), Opt("GROUP", 1, 16)]),
    "two group axes": ([X], lambda x: x.sum(), lambda x: x.sum(),
                       [Opt("GROUP", 0, 16), Opt("GROUP", 0, 8)]),
    "grouped sum, unrolled": ([X], lambda x: x.exp().sum(1), lambda x: np.exp(x).sum(1),
                              [Opt("UNROLL", 1, 4), Opt("GROUP", 1, 16)]),
    "matmul, tiles and work-group": ([A, B], _matmul, lambda a, b: a @ b,
                                     [Opt("UPCAST", 0, 4), Opt("LOCAL", 1, 8),
                                      Opt("LOCAL", 0, 2)]),
    "four grid loops folded": ([P], lambda p: p.permute(3, 2, 1, 0) + 1,
                               lambda p: p.transpose(3, 2, 1, 0) + 1, []),
    "four local loops folded": ([P], lambda p: p.permute(3, 2, 1, 0) + 1,
                                lambda p: p.transpose(3, 2, 1, 0) + 1,
                                [Opt("LOCAL", 3, 2), Opt("LOCAL", 2, 3), Opt("LOCAL", 1, 2),
                                 Opt("LOCAL", 0, 5)]),
}


@needs_cl
@pytest.mark.parametrize("name", list(CASES))
def test_forced_gpu_plans_on_cl(name, monkeypatch):
    arrays, build, reference, opts = CASES[name]
    monkeypatch.setattr(realize.STATE, "runners", {})
    monkeypatch.setattr(compile_record, "choose_gpu_opts", lambda plan, actions: list(opts))
    with Context(DEV="CL"), trace() as t:
        out = build(*[Tensor(a) for a in arrays]).numpy()
    assert [k.opts for k in t.kernels] == [opts]
    np.testing.assert_allclose(out, reference(*arrays), rtol=1e-4, atol=1e-4)


@needs_cl
def test_default_gpu_plan_groups_a_long_reduce():
    data = RNG.standard_normal(1 << 16).astype(np.float32)
    with Context(DEV="CL"), trace() as t:
        total = Tensor(data).sum().numpy()
    (kernel,) = t.kernels
    assert any(o.action == "GROUP" for o in kernel.opts)
    assert "__local" in kernel.source and "barrier(" in kernel.source
    np.testing.assert_allclose(total, data.sum(dtype=np.float64), rtol=1e-4)


@needs_cl
def test_float16_is_computed_in_float_and_rounded_like_numpy():
    h = (RNG.standard_normal((4, 64)) * 3).astype(np.float16)
    with Context(DEV="CL"):
        x = Tensor(h)
        got = ((x * 3 + 1) * x).numpy()
        total = x.float().sum(1).half().numpy()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, (h * np.float16(3) + np.float16(1)) * h)
    np.testing.assert_allclose(total, h.astype(np.float32).sum(1), rtol=1e-3)


@pytest.mark.parametrize("sizes", [(7,), (3, 5), (2, 3, 4), (2, 3, 4, 5), (70000, 3, 2)])
def test_launch_dims_cover_every_index_once(sizes):
    loops = [(f"g{i}", s, "global") for i, s in enumerate(sizes)] + [("l0", 4, "local")]
    dims = launch_dims(loops, grid_limits=(2 ** 31 - 1, 65535, 65535))
    assert all(g <= limit for g, limit in zip(dims.grid, (2 ** 31 - 1, 65535, 65535)))
    assert dims.block == (4, 1, 1)
    seen = set()
    grid_ids = itertools.product(*[range(g) for g in dims.grid]) if np.prod(sizes) < 1000 else []
    for ids in grid_ids:
        value = {p.var: ids[p.dim] // p.below % p.size for p in dims.parts if p.space == "group"}
        seen.add(tuple(value[f"g{i}"] for i in range(len(sizes))))
    if grid_ids:
        assert seen == set(itertools.product(*[range(s) for s in sizes]))
    assert np.prod(dims.grid) == np.prod(sizes)
