"""The scheduler's output is the same from one process to the next: a CNN + SGD training step's
schedules (item order, copies included, and every decision) and a schedule under max_buffers,
printed by fresh interpreters whose hash seeds and object addresses differ, are byte-identical.
Nodes hash by identity, so any choice made by iterating a set of them would show up here."""
import os
import subprocess
import sys
from pathlib import Path

import tinylab

PROGRAM = """
import sys
junk = [[object() for _ in range(int(sys.argv[1]))] for _ in range(7)]  # shift every address
import numpy as np
import tinylab
from tinylab import Tensor, nn
from tinylab.nn import optim
from tinylab.schedule.fusion import SchedulerOptions
from tinylab.schedule.printer import print_schedule
from tinylab.schedule.schedule import schedule

def report(sched):
    decisions = "\\n".join(d.describe() for d in sched.decisions)
    return f"{print_schedule(sched)}\\n{decisions}"

rng = np.random.default_rng(0)
conv, norm, linear = nn.Conv2d(1, 4, 3), nn.BatchNorm(4), nn.Linear(4 * 6 * 6, 10)
params = [conv.weight, conv.bias, norm.weight, norm.bias, linear.weight, linear.bias]
opt = optim.SGD(params, lr=0.01)
x = Tensor(rng.random((8, 1, 14, 14), dtype=np.float32))
labels = Tensor(rng.integers(0, 10, 8).astype(np.int32))
Tensor.training = True
with tinylab.trace() as trace:
    for _ in range(2):
        opt.zero_grad()
        hidden = norm(conv(x)).relu().max_pool2d()
        loss = linear(hidden.reshape(8, -1)).sparse_categorical_crossentropy(labels)
        loss.backward()
        opt.step()
        junk.append([object() for _ in range(int(sys.argv[1]) // 3)])
        loss.numpy()
for index, record in enumerate(trace.realizes):
    print(f"== realize {index}")
    print(report(record.schedule))

a = Tensor(rng.random((32, 48), dtype=np.float32))
b = Tensor(rng.random((48, 40), dtype=np.float32))
out = (a @ b).softmax() * 2 + (a @ b).sum(0)
print("== matmul + softmax, max_buffers=4")
print(report(schedule([out.node], SchedulerOptions(max_buffers=4))))
"""


def _run(seed: int, garbage: int) -> str:
    env = dict(os.environ, PYTHONHASHSEED=str(seed),
               PYTHONPATH=str(Path(tinylab.__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(garbage)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_schedules_are_identical_in_fresh_processes():
    runs = [_run(seed, garbage) for seed, garbage in ((0, 0), (1, 4099), (2, 30011))]
    first = runs[0]
    assert first.count("== realize") >= 3 and "copy: COPY" in first
    assert "too_many_buffers (5 buffers > limit 4)" in first
    for other in runs[1:]:
        assert other == first
