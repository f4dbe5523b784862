"""The inspector shows transforms: a traced vmap(grad(loss)) gives model nodes tagged with the
transform that made them, kernels coloured by it in the DOT and Python-laid-out SVG graphs, and
a legend in the static HTML."""
import numpy as np

from tinylab import Tensor, func, trace
from tinylab.inspection import build_model, to_dot, to_html
from tinylab.inspection.kernel_graph import TRANSFORM_COLORS


def loss(w, x):
    return ((x @ w).tanh() ** 2).sum()


def test_vmap_of_grad_is_one_graph_with_coloured_transform_nodes():
    rng = np.random.default_rng(0)
    w = Tensor(rng.standard_normal((4, 3)).astype(np.float32)).realize()
    x = Tensor(rng.standard_normal((5, 4)).astype(np.float32)).realize()
    with trace() as recorded:
        grads = func.vmap(func.grad(loss), in_dims=(None, 0))(w, x)
        grads.realize()
    assert len(recorded.realizes) == 1  # one program: every example's gradient at once
    model = build_model(recorded, timings=False)
    made = {n.get("transform", "") for n in model["nodes"]} - {""}
    assert "vmap batch axis" in made
    assert any(box.get("transform") for box in model["graph"]["boxes"])
    assert TRANSFORM_COLORS["vmap batch axis"] in to_dot(model, expand=True)
    html = to_html(model, graph_engine="python")
    assert "made by a transform" in html and TRANSFORM_COLORS["vmap batch axis"] in html
    expected = np.stack([2 * np.outer(x.numpy()[i], np.tanh(x.numpy()[i] @ w.numpy())
                                      * (1 - np.tanh(x.numpy()[i] @ w.numpy()) ** 2))
                         for i in range(5)])
    np.testing.assert_allclose(grads.numpy(), expected, rtol=1e-4, atol=1e-5)
