"""A second batch size does not silently recompile everything: where Dynamo marks a dimension
dynamic, the bridge binds it to a tinylab Variable, so one set of kernels serves every size up to
a bound (laid out at the bound, as tinylab's symbolic sizes are); a graph that cannot take a
symbolic size compiles per size and says why in a warning. Values against eager at every size.
"""
import copy
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from bridge_check import assert_close, assert_gradients_close  # noqa: E402
from test_compile import Attention, SmallCNN  # noqa: E402
from tinylab import GlobalCounters  # noqa: E402


def _steps(make, shape, sizes):
    """A training step at each batch size: (kernels built per step, warnings raised)."""
    torch.manual_seed(0)
    torch._dynamo.reset()
    eager = make()
    compiled_model = copy.deepcopy(eager)
    fn = torch.compile(compiled_model, backend="tinylab")
    built = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in sizes:
            x = torch.randn(n, *shape, generator=torch.Generator().manual_seed(n))
            before = GlobalCounters.kernels_built
            out, ref = fn(x), eager(x)
            assert_close(out.detach(), ref.detach(), 1e-4, what=f"batch {n}")
            (out ** 2).mean().backward()
            (ref ** 2).mean().backward()
            assert_gradients_close(eager, compiled_model)
            eager.zero_grad()
            compiled_model.zero_grad()
            built.append(GlobalCounters.kernels_built - before)
    return built, [str(w.message) for w in caught if "tinylab" in str(w.message)]


def test_a_cnn_trains_at_every_batch_size_on_one_set_of_symbolic_kernels():
    built, warned = _steps(SmallCNN, (1, 8, 8), [8, 6, 5, 7, 6])
    assert not warned, warned
    assert built[2:] == [0, 0, 0], f"kernels built per step: {built}"   # 6 made them symbolic


def test_a_size_past_the_bound_builds_once_more_then_reuses():
    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(8, 16), torch.nn.Linear(16, 3)

        def forward(self, x):
            return F.log_softmax(self.b(F.relu(self.a(x))), -1)
    built, warned = _steps(MLP, (8,), [5, 7, 9, 40, 3, 33])
    assert not warned, warned
    assert built[2] == 0 and built[3] > 0 and built[4:] == [0, 0], built


def test_a_graph_that_cannot_take_a_symbolic_size_says_so_and_stays_right():
    """Attention reshapes (batch, time, width) to (batch·time, width): tinylab keeps a symbolic
    size one axis, so this graph compiles per size, and a warning names the reshape."""
    built, warned = _steps(Attention, (6, 16), [4, 6, 8, 6])
    assert warned and "once per size" in warned[0] and "reshape" in warned[0].lower()
    assert built[3] == 0   # a size seen before reuses its kernels
