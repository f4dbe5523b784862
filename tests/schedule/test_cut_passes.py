"""choose_cuts walks a region again only when a node its walk checked was cut since: the cuts,
regions and decision texts are those of walking every region on every pass (the reference here),
on graphs that take many passes (softmax chains, shared long computations, a buffer limit)."""
import numpy as np
import pytest

from tinylab import Tensor
from tinylab.schedule import cuts
from tinylab.schedule.fusion import SchedulerOptions
from tinylab.schedule.printer import print_schedule
from tinylab.schedule.schedule import schedule


def softmax_chain(x, depth):
    for _ in range(depth):
        x = (x - x.max(axis=1, keepdim=True)).exp2() * 0.5
    return [x]


def shared_hashes(x, depth):  # long computations read by several reduces' kernels
    outs = []
    for i in range(depth):
        noise = ((x * (i + 1.5)).sin() * 3.0 + x.exp2()).sqrt().log2() * 0.25 + 1.0
        outs.append(noise.softmax(1) + noise.sum(1, keepdim=True))
    return outs


def matmuls(x, depth):
    w = Tensor(np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8))
    for _ in range(depth):
        x = (x @ w).relu() + x.mean(1, keepdim=True)
    return [x.softmax(1)]


def printed(outs, options) -> str:
    s = schedule([t.node for t in outs], options)
    return print_schedule(s) + "\n" + "\n".join(d.describe() for d in s.decisions)


def walk_everything(update):
    def update_all(self, context, newly_cut):
        for out in list(self.walked):
            self._forget(out)
        return update(self, context, newly_cut)
    return update_all


@pytest.mark.parametrize("build", [softmax_chain, shared_hashes, matmuls])
@pytest.mark.parametrize("options", [{}, {"max_buffers": 4}, {"recompute_limit": 2},
                                     {"fuse_after_reduce": False}])
def test_kept_walks_cut_as_walking_everything(build, options, monkeypatch):
    x = Tensor(np.random.default_rng(0).random((4, 8), dtype=np.float32))
    outs = build(x, 6)
    kept = printed(outs, SchedulerOptions(**options))
    monkeypatch.setattr(cuts._Regions, "update", walk_everything(cuts._Regions.update))
    assert printed(outs, SchedulerOptions(**options)) == kept
    assert "CUT" in kept
