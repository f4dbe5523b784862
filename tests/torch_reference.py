"""PyTorch as the reference oracle on its own ATen kernels, the same on every host: with oneDNN
on, some ops (gelu) go to oneDNN, which picks its code by the CPU it finds; on AVX-512 its
float32 gelu turns +inf into NaN and its far tail differs from ATen's by tens of percent."""
import contextlib
import warnings

import torch


@contextlib.contextmanager
def aten_kernels():
    """PyTorch eager inside the block runs ATen's kernels, oneDNN off."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # oneDNN's TF32 note on changing flags
        with torch.backends.mkldnn.flags(enabled=False):
            yield
