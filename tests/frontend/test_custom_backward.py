"""tinylab.custom_backward: a learner's reverse rule attached to a chain of primitives. Its
gradients against central differences of numpy (float64), for one and several sources, through
tinylab.func.grad of a grad; and the bad-input errors, raised when the rule is attached or
(for what only the rule's result shows) when backward runs it."""
import numpy as np
import pytest

from tinylab import Tensor, custom_backward, dtypes, func
from tinylab.errors import ArgumentError, DTypeError, ShapeError

from test_autograd import numeric_gradient as central

RNG = np.random.default_rng(7)


def f64(a, grad=True):
    return Tensor(a, dtype=dtypes.float64, requires_grad=grad)


def softsign(x):
    out = x / (1 + x.abs())
    return custom_backward(out, x, lambda grad: grad / ((1 + x.abs()) * (1 + x.abs())))


def test_one_source_against_central_differences():
    data, weights = RNG.standard_normal((3, 4)) * 2, RNG.standard_normal((3, 4))
    x = f64(data)
    (softsign(x) * Tensor(weights, dtype=dtypes.float64)).sum().backward()
    numeric = central(lambda a: (weights * a / (1 + np.abs(a))).sum(), data)
    np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_the_rule_replaces_the_chain():
    """A deliberately different rule is what backward uses: the chain's own rules are skipped."""
    x = f64(np.array([1.0, -2.0, 3.0]))
    out = custom_backward(x * x, x, lambda grad: grad * 10)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [10.0, 10.0, 10.0])


def test_a_rule_that_takes_the_output_gets_it():
    """rule(grad, out): sigmoid's s (1 - s) read from the output argument (a rule that captured
    out would keep it alive), against central differences; realized first, then lazy."""
    data, weights = RNG.standard_normal((3, 4)) * 3, RNG.standard_normal((3, 4))
    numeric = central(lambda a: (weights / (1 + np.exp(-a))).sum(), data)
    for realize_first in (True, False):
        x = f64(data)
        out = custom_backward(1 / (1 + (-x).exp()), x, lambda grad, s: grad * s * (1 - s))
        if realize_first:
            np.testing.assert_allclose(out.numpy(), 1 / (1 + np.exp(-data)), rtol=1e-12)
        (out * Tensor(weights, dtype=dtypes.float64)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_a_rule_that_takes_out_and_the_sources_gets_them():
    """rule(grad, out, *sources): hypot's rule reads everything from its arguments."""
    a_np, b_np = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    a, b = f64(a_np), f64(b_np)
    out = custom_backward((a * a + b * b).sqrt(), (a, b),
                          lambda grad, h, u, v: (grad * u / h, grad * v / h))
    (out * out * out).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), central(lambda u: (np.hypot(u, b_np) ** 3).sum(),
                                                       a_np), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(b.grad.numpy(), central(lambda v: (np.hypot(a_np, v) ** 3).sum(),
                                                       b_np), rtol=1e-6, atol=1e-8)


def test_two_sources_and_a_none_against_central_differences():
    """hypot(a, b) = sqrt(a² + b²) with a rule for both sources; then a rule that gives c none."""
    a_np, b_np = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    a, b = f64(a_np), f64(b_np)
    out = (a * a + b * b).sqrt()
    out = custom_backward(out, (a, b), lambda grad: (grad * a / out, grad * b / out))
    out.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), central(lambda v: np.hypot(v, b_np).sum(), a_np),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(b.grad.numpy(), central(lambda v: np.hypot(a_np, v).sum(), b_np),
                               rtol=1e-6, atol=1e-8)
    c, d = f64(a_np), f64(b_np)
    custom_backward(c * d, [c, d], lambda grad: (None, grad * c)).sum().backward()
    assert c.grad is None
    np.testing.assert_allclose(d.grad.numpy(), a_np)


def test_a_second_derivative_goes_through_the_rule():
    """The rule is ordinary Tensor code, so func.grad(func.grad(f)) differentiates it:
    softsign'' = -2 sign(x) / (1 + |x|)³, compared with central differences of softsign'."""
    data = np.array([-1.5, -0.3, 0.4, 2.0])
    second = func.grad(lambda t: func.grad(lambda u: softsign(u).sum())(t).sum())
    ours = second(Tensor(data, dtype=dtypes.float64)).numpy()
    numeric = central(lambda v: (1 / (1 + np.abs(v)) ** 2).sum(), data)
    np.testing.assert_allclose(ours, numeric, rtol=1e-5, atol=1e-7)


def test_bad_input_is_refused_when_the_rule_is_attached():
    x = f64(np.ones(3))
    with pytest.raises(ArgumentError, match="out must be a Tensor"):
        custom_backward(np.ones(3), x, lambda g: g)
    with pytest.raises(ArgumentError, match="sources must be"):
        custom_backward(x * 2, [], lambda g: g)
    with pytest.raises(ArgumentError, match="sources must be"):
        custom_backward(x * 2, [x, 3.0], lambda g: (g, g))
    with pytest.raises(ArgumentError, match="rule must be callable"):
        custom_backward(x * 2, x, "grad")
    with pytest.raises(DTypeError, match="float"):
        custom_backward((x * 2).cast(dtypes.int32), x, lambda g: g)
    with pytest.raises(ArgumentError, match="source 0 is out itself"):
        y = x * 2
        custom_backward(y, y, lambda g: g)
    with pytest.raises(ArgumentError, match="not computed from source 0"):
        custom_backward(x * 2, f64(np.zeros(4)), lambda g: g)
    with pytest.raises(ArgumentError, match="realized buffer"):
        custom_backward((x * 2).realize(), x, lambda g: g)


@pytest.mark.parametrize("rule, error, says", [
    (lambda g: (g, g), ArgumentError, "one gradient per source"),
    (lambda g: g.sum(), ShapeError, r"shape \(\)"),
    (lambda g: 2.0, ArgumentError, "float, not a Tensor"),
])
def test_a_wrong_rule_result_names_the_problem(rule, error, says):
    x = f64(RNG.standard_normal(3))
    out = custom_backward(x * 3, x, rule)
    with pytest.raises(error, match=says):
        out.sum().backward()
