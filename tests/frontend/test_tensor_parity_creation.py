"""Parity with PyTorch for the creation methods (zeros, ones, full, eye, arange, linspace and
the *_like forms): values and dtypes for empty, 0-d, one-element and rectangular shapes, float
and integer ranges with negative and fractional steps, and each dtype they take. Random
creation is checked by its statistics in test_tensor_creation.py."""
import math

import pytest
import torch

from parity_harness import Case, run_case, variants
from tinylab import Tensor

NONE = [()]  # one shape set with no inputs


def make(name, ours, theirs, **kw):
    return Case(name, ours, theirs, NONE, (), grad=False, **kw)


def like(name, ours, theirs, kinds=("real",), **kw):
    return Case(name, ours, theirs, [((2, 3),), ((),), ((0, 4),), ((1,),)], kinds, grad=False,
                noncontiguous=False, also=(("int",), ("bool",), ("f16",), ("f64",)), **kw)


CONSTANTS = [
    make("zeros", lambda: (Tensor.zeros(2, 3), Tensor.zeros((0, 2)), Tensor.zeros(()),
                           Tensor.zeros(1, dtype="int64"), Tensor.zeros(2, dtype="bool")),
         lambda: (torch.zeros(2, 3), torch.zeros(0, 2), torch.zeros(()),
                  torch.zeros(1, dtype=torch.int64), torch.zeros(2, dtype=torch.bool))),
    make("ones", lambda: (Tensor.ones(3, 1), Tensor.ones(0), Tensor.ones(), Tensor.ones(
        (2,), dtype="float16"), Tensor.ones(2, 2, dtype="uint8")),
         lambda: (torch.ones(3, 1), torch.ones(0), torch.ones(()), torch.ones(2, dtype=torch.half),
                  torch.ones(2, 2, dtype=torch.uint8))),
    make("full", lambda: (Tensor.full((2, 3), 7), Tensor.full((), -2.5), Tensor.full((0, 3), 1.0),
                          Tensor.full((2,), True), Tensor.full((3,), math.inf),
                          Tensor.full((1,), math.nan), Tensor.full((2,), 3, dtype="float64"),
                          Tensor.full((2,), 1e-40)),
         lambda: (torch.full((2, 3), 7).int(), torch.full((), -2.5), torch.full((0, 3), 1.0),
                  torch.full((2,), True), torch.full((3,), math.inf), torch.full((1,), math.nan),
                  torch.full((2,), 3, dtype=torch.float64), torch.full((2,), 1e-40))),
    like("zeros_like", lambda x: x.zeros_like(), torch.zeros_like),
    like("ones_like", lambda x: (x.ones_like(), x.ones_like(dtype="float64")),
         lambda x: (torch.ones_like(x), torch.ones_like(x, dtype=torch.float64))),
    like("full_like", lambda x: (x.full_like(3), x.full_like(-1.5, dtype="float32")),
         lambda x: (torch.full_like(x, 3), torch.full_like(x, -1.5, dtype=torch.float32))),
]

EYES = [(3, None), (1, None), (0, None), (2, 5), (0, 3), (1, 4), (3, 0)]
RANGES = [
    make("eye", lambda: [Tensor.eye(n, m) if m else Tensor.eye(n) for n, m in EYES] +
         [Tensor.eye(3, dtype="int32"), Tensor.eye(2, 3, dtype="bool")],
         lambda: [torch.eye(n, m) if m else torch.eye(n) for n, m in EYES] +
         [torch.eye(3, dtype=torch.int32), torch.eye(2, 3, dtype=torch.bool)]),
    make("arange", lambda: (Tensor.arange(5), Tensor.arange(2, 9, 3), Tensor.arange(5, -4, -2),
                            Tensor.arange(0), Tensor.arange(3, 3), Tensor.arange(0.5, 3.2, 0.7),
                            Tensor.arange(-1.0, 1.0, 0.25), Tensor.arange(4, dtype="float64"),
                            Tensor.arange(2.5, -1, -0.5), Tensor.arange(1, 2, 0.1)),
         lambda: (torch.arange(5), torch.arange(2, 9, 3), torch.arange(5, -4, -2),
                  torch.arange(0), torch.arange(3, 3), torch.arange(0.5, 3.2, 0.7),
                  torch.arange(-1.0, 1.0, 0.25), torch.arange(4, dtype=torch.float64),
                  torch.arange(2.5, -1, -0.5), torch.arange(1, 2, 0.1)), atol=1e-6),
    make("linspace", lambda: (Tensor.linspace(-1, 2, 7), Tensor.linspace(0, 1, 1),
                              Tensor.linspace(0, 1, 0), Tensor.linspace(3, -3, 4),
                              Tensor.linspace(0, 10, 6, dtype="int32"),
                              Tensor.linspace(1e-3, 1e3, 5), Tensor.linspace(2, 2, 3),
                              Tensor.linspace(0, 1, 11, dtype="float64")),
         lambda: (torch.linspace(-1, 2, 7), torch.linspace(0, 1, 1), torch.linspace(0, 1, 0),
                  torch.linspace(3, -3, 4), torch.linspace(0, 10, 6, dtype=torch.int32),
                  torch.linspace(1e-3, 1e3, 5), torch.linspace(2, 2, 3),
                  torch.linspace(0, 1, 11, dtype=torch.float64)), atol=1e-6, rtol=1e-6),
]

CASES = CONSTANTS + RANGES

# Wrong numbers the wrong-numbers branch fixed (issue 15), kept as rows.
EYE_TALL = [
    # Tensor.eye(4, 1).numpy() had a 1 at [2, 0], Tensor.eye(5, 3) one at [4, 0] (more rows
    # than columns: the merged pad/flatten/shrink view lost the pad's mask)
    make("eye_tall", lambda: (Tensor.eye(4, 1), Tensor.eye(5, 3), Tensor.eye(3, 2, dtype="int32")),
         lambda: (torch.eye(4, 1), torch.eye(5, 3), torch.eye(3, 2, dtype=torch.int32)),
         covers=("eye",)),
]
CASES += EYE_TALL


@pytest.mark.parametrize("case,shapes,strided", variants(CASES))
def test_creation_parity(case, shapes, strided):
    run_case(case, shapes, strided)
