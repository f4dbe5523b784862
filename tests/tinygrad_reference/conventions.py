"""tinygrad's conventions, as cases that run unchanged on tinygrad and on tinylab: each takes a
namespace with `Tensor`, `dtypes` and `nn` and returns numpy arrays. make_reference.py stores
real tinygrad's results (tests/golden/tinygrad/conventions.npz); test_tinygrad_conventions.py
runs them on tinylab under TINYGRAD_VALUES=1 (the alias's values) and compares.
"""
import numpy as np

X34 = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
IMAGE = (np.arange(2 * 3 * 5 * 6, dtype=np.float32).reshape(2, 3, 5, 6) % 7) * 0.5
VOLUME = (np.arange(2 * 4 * 3 * 5, dtype=np.float32).reshape(1, 2, 4, 3, 5) % 5) * 0.25
TIES = np.array([1, 3, 3, 2, 5, 5, 0], dtype=np.float32)


def _pads(lib, mode):
    x = lib.Tensor(IMAGE[:1, :1])
    return [x.pad(p, mode=mode).numpy() for p in ((1, -2, -1, 2), (-1, 2, 2, -1), (-2, -1, 0, 3))]


def _interpolate(lib):
    t = lib.Tensor
    return [t(IMAGE).interpolate((4, 9), mode="linear").numpy(),
            t(IMAGE).interpolate((7, 3), mode="linear", align_corners=True).numpy(),
            t(VOLUME).interpolate((3, 5, 2), mode="linear").numpy(),
            t(IMAGE).interpolate((4, 9)).numpy(),                       # tinygrad's default mode
            t(IMAGE).interpolate((10,), mode="linear").numpy(),          # the last dim only
            t([[1, 2, 3, 4], [21, 22, 23, 24], [41, 42, 43, 44]]).interpolate(
                (2, 3), mode="linear").numpy(),                           # int input, 2-D
            t(IMAGE).interpolate((3, 4), mode="nearest").numpy()]


def _scans(lib):
    t = lib.Tensor
    values, index = t(TIES).cummax(0)
    low, low_index = t(TIES).cummin(0)
    rows, row_index = t(X34 % 3).cummax(1)
    scalar, scalar_index = t(2.5).cummax(0)
    return [values.numpy(), index.numpy(), low.numpy(), low_index.numpy(), rows.numpy(),
            row_index.numpy(), scalar.numpy(), scalar_index.numpy()]


def _products(lib):
    t, dt = lib.Tensor, lib.dtypes
    a8 = t(np.array([[100, 100, -3], [7, 8, 9]], np.int8))
    b8 = t(np.array([[3, 1], [3, 2], [5, -7]], np.int8))
    x, w = t(X34 / 7), t(X34.T / 5)
    return [a8.matmul(b8, dtype=dt.int32).numpy(), a8.dot(b8, dtype=dt.int32).numpy(),
            x.matmul(w, dtype=dt.float16).numpy(), x.linear(w, dtype=dt.float16).numpy(),
            t(IMAGE).cast(dt.int32).conv2d(t(IMAGE[:2, :3, :2, :2]).cast(dt.int32) * 3,
                                            dtype=dt.int64).numpy(),
            t(IMAGE).conv2d(t(IMAGE[:2, :3, :2, :2]), padding=(-1, 0)).numpy(),
            t(X34).sum(dtype="float").numpy(), t([[1, 2], [3, 4]]).prod(dtype="long").numpy(),
            t(X34).sum(1, dtype="half").numpy()]


def _indexing(lib):
    t = lib.Tensor(X34)
    return [t[(0,)].numpy(), t[(1, 1)].numpy(), t[(0, 2), ].numpy(), t[(0, 2), (1, 3)].numpy(),
            t[:, (0, 2)].numpy(), lib.Tensor([False, True, True]).argmax().numpy(),
            lib.Tensor([True, False, True]).argmin().numpy()]


def _misc(lib):
    t, dt = lib.Tensor, lib.dtypes
    values, index = t(TIES).topk(3, sorted_=True)
    ones = [t(np.ones((2, 3, 4), np.float32)), t(np.ones((4, 3, 5), np.float32))]
    return [t(X34 / 3).gelu().numpy(), values.numpy(), index.numpy(),
            lib.Tensor.einsum("a...b,b...c->a...c", *ones).numpy(),
            np.array(dt.finfo(dt.float16) + dt.finfo(dt.bfloat16) + dt.finfo(dt.float32)),
            np.array([dt.is_float(dt.float16), dt.is_float(dt.int8), dt.is_int(dt.uint8),
                      dt.is_int(dt.bool)]),
            t(np.array([1.0, 3.14159, -2.5e10, 1.00390625, 1.01171875, 65504.0, -0.0],
                       np.float32)).cast(dt.bfloat16).cast(dt.float32).numpy()]


def _lars(lib):
    """Two LARS steps (tinygrad's defaults but lr) on a fixed quadratic, momentum and trust."""
    weight = lib.Tensor(X34 / 10)
    bias = lib.Tensor(np.array([0.5, -0.25, 1.0, 0.0], np.float32))
    optimizer = lib.nn.optim.LARS([weight, bias], lr=0.5)
    for _ in range(2):
        with lib.Context(TRAINING=1):
            optimizer.zero_grad()
            loss = ((weight * 3 + bias) ** 2).sum() + (bias * weight.sum(0)).sum()
            loss.backward()
            optimizer.step()
    return [weight.numpy(), bias.numpy()]


CASES = {"pad_constant": lambda lib: _pads(lib, "constant"),
         "pad_reflect": lambda lib: _pads(lib, "reflect"),
         "pad_replicate": lambda lib: _pads(lib, "replicate"),
         "pad_circular": lambda lib: _pads(lib, "circular"),
         "interpolate": _interpolate, "scans": _scans, "products": _products,
         "indexing": _indexing, "misc": _misc, "lars": _lars}


def run(lib) -> dict:
    """name_k -> the k-th array of each case."""
    return {f"{name}_{k}": np.asarray(value) for name, case in CASES.items()
            for k, value in enumerate(case(lib))}
