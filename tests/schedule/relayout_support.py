"""Helpers for the relayout tests (schedule/relayout.py): the engine's capabilities with the CPU
relaying out for a given number of float32 lanes, whatever this CPU has, the relayout
decisions of a schedule made with them, and a conv's gradients beside PyTorch's. The `lanes`
fixture (tests/schedule/conftest.py) makes the engine use them."""
import dataclasses

import numpy as np
import torch

from tinylab import Device, Tensor
from tinylab.engine.realize import REALIZED
from tinylab.schedule.fusion import Reason, SchedulerOptions
from tinylab.schedule.schedule import schedule


def caps_with_lanes(lanes):
    """Device.caps() with the CPU relaying out for `lanes` float32 lanes."""
    return {name: dataclasses.replace(caps, relayout_lanes=lanes) if name == "CPU" else caps
            for name, caps in Device.caps().items()}


def relayouts(nodes, lanes):
    """(the relayout decisions, the schedule) of `nodes` relaid out for `lanes` lanes."""
    sched = schedule(nodes, SchedulerOptions(relayout_operands=True), realized=REALIZED,
                     caps=caps_with_lanes(lanes))
    return [d for d in sched.decisions if d.reason is Reason.RELAYOUT], sched


def conv_grads(rng, n, c, size, o, k, **conv):
    """((x, w), (PyTorch's x gradient, its w gradient)) of sum(conv2d(x, w) * g) for random
    x, w and g drawn from `rng`; x.grad and w.grad are lazy until read."""
    x = rng.standard_normal((n, c, size, size)).astype(np.float32)
    w = rng.standard_normal((o, c, k, k)).astype(np.float32)
    tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
    out = tx.conv2d(tw, **conv)
    g = rng.standard_normal(out.shape).astype(np.float32)
    out.backward(Tensor(g))
    rx, rw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    torch.nn.functional.conv2d(rx, rw, **conv).backward(torch.tensor(g))
    return (tx, tw), (rx.grad.numpy(), rw.grad.numpy())
