"""No kernel addresses memory outside its buffers: each parameter's size in the linear program
(the bound below which the renderers read without a guard) is at most the buffer it is bound to,
for padded, shrunk, flipped and diagonal views in composition, and the values equal numpy's.

Found by `make asan` (kernels built with AddressSanitizer): x.diag(2) of 3 elements read data1[4]
unguarded, because a padded view's extent was taken from its full width, not its valid region.
"""
import numpy as np
import pytest

from tinylab import Tensor
from tinylab.engine.compile_record import compile_record
from tinylab.ir.variable import max_shape
from tinylab.ir.node import prod
from tinylab.schedule.schedule import schedule

A = np.arange(1, 13, dtype=np.float32)

COMPOSITIONS = {
    "diag above": (lambda t: t[:3].diag(2), lambda a: np.diag(a[:3], 2)),
    "diag below": (lambda t: t[:4].diag(-1), lambda a: np.diag(a[:4], -1)),
    "pad then slice": (lambda t: t.reshape(3, 4).pad(((1, 2), (3, 0)))[1:, 2:],
                       lambda a: np.pad(a.reshape(3, 4), ((1, 2), (3, 0)))[1:, 2:]),
    "flip of a pad": (lambda t: t.reshape(3, 4).pad(((0, 0), (0, 5))).flip(1) * 2,
                      lambda a: np.pad(a.reshape(3, 4), ((0, 0), (0, 5)))[:, ::-1] * 2),
    "cat of slices": (lambda t: t[:5].cat(t[7:], t[2:4]),
                      lambda a: np.concatenate([a[:5], a[7:], a[2:4]])),
    "padded window sum": (lambda t: t.reshape(1, 1, 12).pad(((0, 0), (0, 0), (2, 2)))
                          .reshape(1, 1, 16).unfold(2, 3, 1).sum(-1),
                          lambda a: np.convolve(np.pad(a, 2), np.ones(3), "valid")[None, None]),
    "cumsum": (lambda t: t.cumsum(0), lambda a: np.cumsum(a)),
}


def _kernels(tensor):
    return schedule([tensor.node]).kernels


@pytest.mark.parametrize("name", COMPOSITIONS)
def test_parameter_sizes_stay_inside_their_buffers(name):
    ours, theirs = COMPOSITIONS[name]
    out = ours(Tensor(A))
    for item in _kernels(out):
        record = compile_record("CPU", item.ast, noopt=False, beam=0)
        for param in record.program.params:
            slot = item.slots[param.index]
            elements = prod(max_shape(slot.shape))
            assert param.size <= elements, \
                f"{name}: {record.program.name} may address data{param.index}[{param.size - 1}]" \
                f" of a {elements}-element buffer"
    np.testing.assert_allclose(out.numpy(), theirs(A), rtol=1e-6)
