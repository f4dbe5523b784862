"""Device selection and listing, DEBUG output, and the LinearNet README example on every backend."""
import subprocess
import sys

import numpy as np

from tinylab import Context, Device, GlobalCounters, Tensor, nn


def test_default_and_dev_setting():
    assert Device.DEFAULT in ("CPU", "CL", "CUDA")
    with Context(DEV="PYTHON"):
        assert Device.DEFAULT == "PYTHON"
        assert Tensor.ones(2).device == "PYTHON"


def test_device_listing_runs():
    out = subprocess.run([sys.executable, "-m", "tinylab.device"], capture_output=True, text=True,
                         check=True).stdout
    assert "CPU" in out and "PYTHON" in out and "Device.DEFAULT" in out
    assert "CPU threads: " in out  # how the OpenMP threads wait and where they run
    roofs = next(line for line in out.splitlines() if line.startswith("CPU roofs: "))
    assert all(f"{level} " in roofs for level in ("L1", "L2", "L3", "DRAM")) and "GFLOPS" in roofs


def test_debug_levels_print(capsys):
    x = Tensor(np.ones((4, 4), np.float32)).realize()
    with Context(DEBUG=4):
        (x * 2).sum(1).numpy()
    out = capsys.readouterr().out
    assert "scheduled 1 kernel" in out and "*** CPU" in out and "GFLOPS" in out
    assert "void r_4_4" in out


def test_global_counters():
    x = Tensor(np.ones((8, 8), np.float32)).realize()
    GlobalCounters.reset()
    (x @ x).numpy()
    assert GlobalCounters.kernel_count == 1
    assert GlobalCounters.global_ops >= 2 * 8 ** 3
    assert GlobalCounters.global_mem >= 2 * 64 * 4  # x is read once (one parameter)


class LinearNet:
    def __init__(self):
        self.l1 = Tensor.kaiming_uniform(784, 128)
        self.l2 = Tensor.kaiming_uniform(128, 10)

    def __call__(self, x):
        return x.flatten(1).dot(self.l1).relu().dot(self.l2)


def test_readme_linearnet_loss_goes_down(device):
    Tensor.manual_seed(0)
    model = LinearNet()
    optim = nn.optim.Adam([model.l1, model.l2], lr=0.001)
    x, y = Tensor.rand(4, 1, 28, 28), Tensor([2, 4, 3, 7])
    losses = []
    with Context(TRAINING=1):
        for _ in range(5):
            optim.zero_grad()
            loss = model(x).sparse_categorical_crossentropy(y).backward()
            optim.step()
            losses.append(loss.item())
    assert losses[-1] < losses[0]
