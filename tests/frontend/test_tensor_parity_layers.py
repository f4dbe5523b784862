"""Parity with torch.nn for every layer in tinylab.nn: the torch module's weights (perturbed
away from their initial values) are copied into the tinylab layer, then the outputs, the inputs'
gradients, every parameter's gradient and the running statistics after a training step must
match, on batches of several, one and zero samples and on non-contiguous inputs."""
import pytest
import torch

from parity_harness import LayerCase, layer_variants, run_layer_case
from tinylab import nn


def layer(name, ours, theirs, shapes, **kw):
    return LayerCase(name, ours, theirs, shapes, **kw)


LINEAR = [
    layer("Linear", lambda: nn.Linear(5, 3), lambda: torch.nn.Linear(5, 3),
          [((4, 5),), ((0, 5),), ((2, 3, 5),), ((5,),), ((1, 5),)]),
    layer("Linear_no_bias", lambda: nn.Linear(4, 2, bias=False),
          lambda: torch.nn.Linear(4, 2, bias=False), [((3, 4),)], covers=("Linear",)),
    layer("Conv2d", lambda: nn.Conv2d(3, 4, 3, padding=1, stride=(1, 2)),
          lambda: torch.nn.Conv2d(3, 4, 3, padding=1, stride=(1, 2)),
          [((2, 3, 5, 6),), ((0, 3, 4, 4),), ((1, 3, 1, 1),)]),
    layer("Conv2d_groups", lambda: nn.Conv2d(4, 6, (2, 3), groups=2, dilation=2, bias=False),
          lambda: torch.nn.Conv2d(4, 6, (2, 3), groups=2, dilation=2, bias=False),
          [((2, 4, 5, 7),)], covers=("Conv2d",)),
    layer("Conv1d", lambda: nn.Conv1d(3, 4, 3, stride=2, padding=1),
          lambda: torch.nn.Conv1d(3, 4, 3, stride=2, padding=1),
          [((2, 3, 9),), ((0, 3, 5),), ((1, 3, 1),)]),
    layer("ConvTranspose2d", lambda: nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1,
                                                        output_padding=1),
          lambda: torch.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1),
          [((1, 4, 2, 3),), ((0, 4, 2, 2),), ((1, 4, 1, 1),)]),
]

NORMALIZATION = [
    layer("BatchNorm", lambda: nn.BatchNorm(3), lambda: torch.nn.BatchNorm2d(3),
          [((4, 3, 2, 5),), ((1, 3, 1, 1),), ((0, 3, 2, 2),)],
          covers=("BatchNorm2d",)),
    layer("BatchNorm_training", lambda: nn.BatchNorm2d(3, momentum=0.3),
          lambda: torch.nn.BatchNorm2d(3, momentum=0.3), [((4, 3, 2, 5),), ((2, 3, 1, 1),)],
          train=True, covers=("BatchNorm", "BatchNorm2d")),
    layer("BatchNorm1d", lambda: nn.BatchNorm1d(3), lambda: torch.nn.BatchNorm1d(3),
          [((5, 3),), ((4, 3, 6),)], train=True),
    layer("BatchNorm3d", lambda: nn.BatchNorm3d(2, affine=False),
          lambda: torch.nn.BatchNorm3d(2, affine=False), [((2, 2, 3, 2, 2),)], train=True),
    layer("BatchNorm_no_running_stats", lambda: nn.BatchNorm(3, track_running_stats=False),
          lambda: torch.nn.BatchNorm1d(3, track_running_stats=False), [((5, 3),)],
          covers=("BatchNorm",)),
    layer("LayerNorm", lambda: nn.LayerNorm((4, 5)), lambda: torch.nn.LayerNorm((4, 5)),
          [((3, 4, 5),), ((4, 5),), ((0, 4, 5),)]),
    layer("LayerNorm_plain", lambda: nn.LayerNorm(5, eps=1e-3, elementwise_affine=False),
          lambda: torch.nn.LayerNorm(5, eps=1e-3, elementwise_affine=False), [((2, 5),)],
          covers=("LayerNorm",)),
    layer("GroupNorm", lambda: nn.GroupNorm(2, 4), lambda: torch.nn.GroupNorm(2, 4),
          [((2, 4, 3, 3),), ((1, 4, 5),), ((0, 4, 2),)]),
    layer("InstanceNorm", lambda: nn.InstanceNorm(3),
          lambda: torch.nn.InstanceNorm2d(3, affine=True), [((2, 3, 4, 4),), ((1, 3, 2, 5),)]),
    layer("InstanceNorm1d", lambda: nn.InstanceNorm1d(3), lambda: torch.nn.InstanceNorm1d(3),
          [((2, 3, 6),)]),
    layer("InstanceNorm2d", lambda: nn.InstanceNorm2d(3), lambda: torch.nn.InstanceNorm2d(3),
          [((2, 3, 4, 5),)]),
    layer("InstanceNorm3d", lambda: nn.InstanceNorm3d(2), lambda: torch.nn.InstanceNorm3d(2),
          [((2, 2, 3, 2, 4),)]),
    layer("RMSNorm", lambda: nn.RMSNorm(5), lambda: torch.nn.RMSNorm(5, eps=1e-6),
          [((3, 5),), ((5,),), ((0, 5),)]),
    layer("RMSNorm_2d", lambda: nn.RMSNorm((2, 5), eps=1e-5),
          lambda: torch.nn.RMSNorm((2, 5), eps=1e-5), [((3, 2, 5),)], covers=("RMSNorm",)),
]

LOOKUP_AND_RECURRENCE = [
    layer("Embedding", lambda: nn.Embedding(10, 4), lambda: torch.nn.Embedding(10, 4),
          [((2, 3),), ((),), ((0,),)], kinds=("index5",)),
    # (an LSTM step compiles many kernels: two shape sets here, more in tests/nn/test_layers)
    layer("LSTMCell", lambda: nn.LSTMCell(3, 5), lambda: torch.nn.LSTMCell(3, 5),
          [((3,), (5,), (5,)), ((2, 3), (2, 5), (2, 5))],
          call=lambda cell, x, h, c: cell(x, (h, c))),
]

CASES = LINEAR + NORMALIZATION + LOOKUP_AND_RECURRENCE


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case,shapes,strided", layer_variants(CASES))
def test_layer_parity(case, shapes, strided):
    run_layer_case(case, shapes, strided)
