"""Symbolic shapes (issue 16): Variable / bind, every movement op, reduces and matmuls over a
symbolic axis against numpy for several bound values on every backend, one compiled kernel for
every value, clear errors for out-of-range binds and unsupported ops, and a golden C source."""
import pickle

import numpy as np
import pytest

from tinylab import GlobalCounters, Tensor, Variable
from tinylab.codegen.linearize import linearize
from tinylab.codegen.plan import KernelPlan
from tinylab.engine import realize as engine
from tinylab.errors import ShapeError
from tinylab.schedule.schedule import schedule

VALUES = (1, 3, 8)  # bound values tried in every test (the variable's range is 1..8 or 1..12)


def _check(got: Tensor, expected: np.ndarray, atol=1e-5):
    value = got.numpy()
    assert value.shape == expected.shape
    np.testing.assert_allclose(value, expected, rtol=1e-5, atol=atol)


@pytest.fixture
def data(rng):
    return {"a": rng.standard_normal((4, 8)).astype(np.float32),
            "k": rng.standard_normal((8, 6)).astype(np.float32),
            "q": rng.standard_normal((2, 6)).astype(np.float32)}


# ---- the Variable itself --------------------------------------------------------------------
def test_variable_bind_unbind_val_and_print():
    i = Variable("i", 1, 64)
    bound = i.bind(5)
    assert bound.val == 5 and bound.min == 1 and bound.max == 64 and bound.expr == "i"
    unbound, value = bound.unbind()
    assert unbound == i and value == 5
    assert repr(bound) == "<i[1-64]=5>" and repr(i) == "<i[1-64]>"
    assert (bound + 1).val == 6 and repr(bound + 1) == "<(i+1)[2-65]=6>"
    assert (bound * 3).val == 15
    assert bound != i.bind(6)  # the value is part of what a shape means
    assert pickle.loads(pickle.dumps(bound + 1)) == bound + 1
    assert Tensor.ones(bound).shape == (bound,)
    assert "<i[1-64]=5>" in repr(Tensor.zeros(4, bound))


@pytest.mark.parametrize("value", [0, 65, -1])
def test_out_of_range_bind_raises_naming_variable_range_and_value(value):
    with pytest.raises(ValueError, match=rf"'i' has range \[1, 64\]; {value} is outside it"):
        Variable("i", 1, 64).bind(value)


def test_bad_variables_and_binds_are_clear_errors():
    with pytest.raises(ValueError, match="already bound"):
        Variable("i", 1, 4).bind(2).bind(3)
    with pytest.raises(ValueError, match="only a variable can be bound"):
        (Variable("i", 1, 4) + 1).bind(2)
    with pytest.raises(TypeError, match="takes an int"):
        Variable("i", 1, 4).bind(2.5)
    for name in ("gidx0", "lane", "lm0", "one12", "temp3_1", "part2", "idx0", "at4", "vlane",
                 "tile2"):
        with pytest.raises(ValueError, match="reserved"):
            Variable(name, 1, 4)   # names generated kernels declare, or planning substitutes
    assert Variable("lanes", 1, 4).bind(3).val == 3 and Variable("lm", 1, 4).bind(2).val == 2
    assert Variable("tiles", 1, 4).bind(2).val == 2
    with pytest.raises(ValueError, match="0 <= min <= max"):
        Variable("i", 5, 4)
    with pytest.raises(ValueError, match="not bound"):
        _ = Variable("i", 1, 4).val
    with pytest.raises(TypeError, match="symbolic size"):
        range(Variable("i", 1, 4).bind(2))


# ---- every movement op, elementwise, creation -------------------------------------------------
MOVEMENT = {
    "slice": (lambda a, v: a[:, :v], lambda a, n: a[:, :n]),
    "slice_from_variable": (lambda a, v: a[:, v - 1:],
                            lambda a, n: a[:, n - 1:]),
    "shrink": (lambda a, v: a.shrink(((1, 3), (0, v))), lambda a, n: a[1:3, :n]),
    "permute": (lambda a, v: a[:, :v].permute(1, 0), lambda a, n: a[:, :n].T),
    "reshape_split_static": (lambda a, v: a[:, :v].reshape(2, 2, v),
                             lambda a, n: a[:, :n].reshape(2, 2, n)),
    "reshape_unsqueeze": (lambda a, v: a[:, :v].reshape(4, 1, v, 1),
                          lambda a, n: a[:, :n].reshape(4, 1, n, 1)),
    "expand": (lambda a, v: a[:1, :v].expand(3, v), lambda a, n: np.repeat(a[:1, :n], 3, 0)),
    "pad": (lambda a, v: a[:, :v].pad(((1, 0), (2, 3))),
            lambda a, n: np.pad(a[:, :n], ((1, 0), (2, 3)))),
    "pad_value": (lambda a, v: a[:, :v].pad(((0, 0), (1, 1)), value=7.0),
                  lambda a, n: np.pad(a[:, :n], ((0, 0), (1, 1)), constant_values=7.0)),
    "flip": (lambda a, v: a[:, :v].flip(1), lambda a, n: a[:, :n][:, ::-1]),
    "transpose_then_slice": (lambda a, v: a.T[:v], lambda a, n: a.T[:n]),
    "elementwise": (lambda a, v: (a[:, :v] * 2 + 1).exp().log(), lambda a, n: a[:, :n] * 2 + 1),
    "broadcast_with_static": (lambda a, v: a[:, :v] + a[:, :1], lambda a, n: a[:, :n] + a[:, :1]),
    "cat_along_symbolic": (lambda a, v: a[:, :v].cat(a[:, :v] * 2, dim=1),
                           lambda a, n: np.concatenate([a[:, :n], a[:, :n] * 2], 1)),
    "repeat": (lambda a, v: a[:, :v].repeat(2, 1), lambda a, n: np.tile(a[:, :n], (2, 1))),
}


@pytest.mark.parametrize("name", list(MOVEMENT))
def test_movement_ops_against_numpy(device, data, name):
    ours, reference = MOVEMENT[name]
    a = Tensor(data["a"])
    for n in VALUES:
        v = Variable("i", 1, 8).bind(n)
        out = ours(a, v)
        assert v in out.shape or any(isinstance(s, Variable) for s in out.shape)
        _check(out + 0, reference(data["a"], n), atol=1e-4)


@pytest.mark.parametrize("n", VALUES)
def test_creation_with_a_variable_dim(device, n):
    v = Variable("i", 1, 8).bind(n)
    _check(Tensor.ones(v) * 3, np.full(n, 3, np.float32))
    _check(Tensor.zeros(4, v) + 1, np.ones((4, n), np.float32))
    _check(Tensor.full((2, v), 2.5) + 0, np.full((2, n), 2.5, np.float32))
    _check(Tensor.empty(v, 2) * 0, np.zeros((n, 2), np.float32))
    _check(Tensor.ones(v).sum(), np.array(n, np.float32))


# ---- reduces and matmuls over a symbolic axis -------------------------------------------------
@pytest.mark.parametrize("n", VALUES)
def test_reduces_over_symbolic_and_static_axes(device, data, n):
    a, x = data["a"], Tensor(data["a"])
    v = Variable("i", 1, 8).bind(n)
    _check(x[:, :v].sum(1), a[:, :n].sum(1))
    _check(x[:, :v].max(1), a[:, :n].max(1))
    _check(x[:, :v].sum(0), a[:, :n].sum(0))
    _check(x[:, :v].sum(), np.array(a[:, :n].sum()))
    _check(x[:, :v].mean(1), a[:, :n].mean(1))


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("n", VALUES)
def test_matmul_and_attention_with_a_symbolic_dimension(device, data, n):
    a, k, q = data["a"], data["k"], data["q"]
    ta, tk, tq = Tensor(a), Tensor(k), Tensor(q)
    v = Variable("i", 1, 8).bind(n)
    _check(ta[:, :v] @ tk[:v], a[:, :n] @ k[:n], atol=1e-4)          # symbolic inner dim
    _check(tk[:v] @ tk.T, k[:n] @ k.T, atol=1e-4)                     # symbolic rows
    scores = tq @ tk[:v].T                                             # (2, v)
    _check(scores, q @ k[:n].T, atol=1e-4)
    weights = scores.softmax(-1)
    _check(weights, _softmax(q @ k[:n].T), atol=1e-5)
    _check(weights @ tk[:v], _softmax(q @ k[:n].T) @ k[:n], atol=1e-4)


def test_compositions(device, data):
    a = data["a"]
    x = Tensor(a)
    for n in VALUES:
        w = Variable("w", 1, 12).bind(n + 2)
        padded = np.pad(a, ((0, 0), (0, 8)))
        _check(x.pad(((0, 0), (0, 8)))[:, 4:4 + w] + 0, padded[:, 4:4 + n + 2])  # pad, shrink
        _check(x.pad(((0, 0), (0, 8)))[:, 4:4 + w].sum(1), padded[:, 4:4 + n + 2].sum(1))
        v = Variable("i", 1, 8).bind(n)
        stacked = Tensor.stack(x, x * 2)
        _check(stacked[:, :, :v].sum(2), np.stack([a, a * 2])[:, :, :n].sum(2))
        _check(x[:, :v].contiguous()[:2] * 2, a[:2, :n] * 2)  # a realized symbolic buffer


def test_autograd_through_a_symbolic_slice(data):
    a = data["a"]
    for n in VALUES:
        x = Tensor(a, requires_grad=True)
        v = Variable("i", 1, 8).bind(n)
        (x[:, :v] * x[:, :v]).sum().backward()
        expected = np.zeros_like(a)
        expected[:, :n] = 2 * a[:, :n]
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


# ---- one kernel for every value ----------------------------------------------------------------
def test_a_second_value_compiles_nothing_and_reuses_the_kernel(device, data):
    x = Tensor(data["a"]).realize()
    names = []
    for n in VALUES:
        v = Variable("i", 1, 8).bind(n)
        runners, compiles = len(engine.STATE.runners), GlobalCounters.compile_count
        (x[:, :v] * 2).sum(1).numpy()
        if n != VALUES[0]:
            assert len(engine.STATE.runners) == runners and GlobalCounters.compile_count == compiles
        names.append(schedule([(x[:, :v] * 2).sum(1).node]).kernels[0].ast)
    assert names[0] is names[1] is names[2]  # the kernel AST holds the unbound variable


def test_kernel_names_and_sources_show_the_variable(data):
    x = Tensor(data["a"]).realize()
    v = Variable("i", 1, 8).bind(3)
    (kernel,) = schedule([(x[:, :v] * 2).sum(1).node]).kernels
    assert kernel.var_vals == {"i": 3}
    plan = KernelPlan.from_ast(kernel.ast)
    assert plan.name == "r_4_i"
    program = linearize(plan)
    assert program.variables == (("i", 1, 8),)
    assert "variables=i[1-8]" in program.print()
    source = engine.render_for(kernel.ast, "CPU")
    assert "const int i" in source and "< i;" in source


def test_no_split_of_a_symbolic_axis():
    x = Tensor(np.ones((64, 64), np.float32)).realize()
    v = Variable("i", 1, 64).bind(5)
    for out in ((x[:, :v] * 2).sum(1), x[:v] @ x, x[:, :v] * 2, x[:, :v] @ x[:v]):
        (kernel,) = [k for k in schedule([out.node]).kernels]
        for device in ("CPU", "CL"):
            plan = engine.choose_plan(device, kernel.ast, False, 0)
            for axis in plan.axes:  # every symbolic axis is a whole loop
                assert not isinstance(axis.size, Variable) or (axis.mult == 1 and
                                                              axis.kind.is_loop)


def test_golden_symbolic_kernel_source(golden, data):
    x = Tensor(data["a"]).realize()
    v = Variable("i", 1, 8).bind(3)
    (kernel,) = schedule([(x.pad(((0, 0), (1, 0)))[:, :v] * 2).sum(1).node]).kernels
    plan = KernelPlan.from_ast(kernel.ast)
    from tinylab import Device
    golden("symbolic_reduce.c", Device["CPU"].renderer.render(linearize(plan, plan.name)))


# ---- clear errors ------------------------------------------------------------------------------
def test_unsupported_symbolic_ops_are_clear_errors(data):
    x = Tensor(data["a"])
    v = Variable("i", 1, 8).bind(3)
    with pytest.raises(ShapeError, match=r"RESHAPE: cannot reshape symbolic shape .*<i\[1-8\]=3>"):
        x[:, :v].reshape(4 * v)
    with pytest.raises(ShapeError, match="shrink: bounds .* do not fit shape"):
        x[:, v:v + 6]  # 3 + 6 passes 8 (x[:, v:v + 2] fits its bound value: allowed, as tinygrad)
    with pytest.raises(ShapeError, match="shrink: bounds .* do not fit shape"):
        x[:, :v].shrink((None, (0, 4)))  # 4 of a dim bound to 3
    with pytest.raises(IndexError, match="symbolic dim 1"):
        x[:, :v][:, 0]
    with pytest.raises(IndexError, match="only step 1"):
        x[:, :v:2]
    with pytest.raises(TypeError, match="not linear"):
        v * v
