"""Parity with PyTorch for the API added for issue 15 (nn side): max pooling with indices,
1-D / 3-D pooling, max_unpool, interpolate, nll_loss, binary_crossentropy_logits(pos_weight=),
scaled_dot_product_attention(enable_gqa=) (forward and backward), then the errors PyTorch
raises for the same bad input."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

import parity_domains_api  # noqa: F401 - registers the api_ input domains
from parity_harness import Case, run_case, run_error_check, variants
from tinylab import Tensor
from tinylab.errors import DTypeError, ShapeError


def case(name, ours, theirs, shapes, kinds=("real",), **kw):
    return Case(name, ours, theirs, shapes, kinds, atol=kw.pop("atol", 1e-5), **kw)


X = (2, 3, 7, 6)
X3D = (2, 2, 5, 4, 6)
POOLING = [
    case("max_pool2d_indices", lambda x: x.max_pool2d(return_indices=True),
         lambda x: F.max_pool2d(x, 2, return_indices=True), [(X,), ((1, 1, 2, 2),),
                                                             ((0, 2, 4, 4),), ((3, 5, 4),)]),
    case("max_pool2d_indices_stride_padding",
         lambda x: x.max_pool2d(3, stride=2, padding=1, return_indices=True),
         lambda x: F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True), [(X,)]),
    case("max_pool2d_indices_dilation_ceil",
         lambda x: x.max_pool2d((2, 3), stride=2, dilation=(2, 1), ceil_mode=True,
                                return_indices=True),
         lambda x: F.max_pool2d(x, (2, 3), stride=2, dilation=(2, 1), ceil_mode=True,
                                return_indices=True), [(X,)]),
    # ties: the first maximum in scan order gets the index and the gradient, as in PyTorch
    case("max_pool2d_indices_ties", lambda x: x.max_pool2d(3, 1, padding=1, return_indices=True),
         lambda x: F.max_pool2d(x, 3, 1, padding=1, return_indices=True), [(X,)], ("api_ties",)),
    case("max_pool2d_indices_special", lambda x: x.max_pool2d(2, 1, return_indices=True),
         lambda x: F.max_pool2d(x, 2, 1, return_indices=True), [((2, 2, 5, 6),)], ("api_special",),
         grad=False),
    case("max_pool2d_indices_int", lambda x: x.max_pool2d(2, return_indices=True)[1],
         lambda x: F.max_pool2d(x.double(), 2, return_indices=True)[1], [(X,)], ("int",),
         grad=False),
    case("max_pool1d_indices", lambda x: x.max_pool1d(3, stride=2, padding=1,
                                                      return_indices=True),
         lambda x: F.max_pool1d(x, 3, stride=2, padding=1, return_indices=True),
         [((2, 3, 9),), ((1, 1, 2),)]),
    case("max_pool3d", lambda x: x.max_pool3d(2), lambda x: F.max_pool3d(x, 2),
         [(X3D,), ((1, 1, 2, 2, 2),), ((0, 1, 4, 4, 4),), ((2, 4, 6, 4),)]),
    case("max_pool3d_options", lambda x: x.max_pool3d((2, 3, 2), stride=(1, 2, 2), padding=1,
                                                      dilation=(2, 1, 1), ceil_mode=True),
         lambda x: F.max_pool3d(x, (2, 3, 2), stride=(1, 2, 2), padding=1, dilation=(2, 1, 1),
                                ceil_mode=True), [(X3D,)]),
    case("max_pool3d_indices", lambda x: x.max_pool3d(3, stride=2, padding=1,
                                                      return_indices=True),
         lambda x: F.max_pool3d(x, 3, stride=2, padding=1, return_indices=True), [(X3D,)]),
    case("avg_pool3d", lambda x: x.avg_pool3d(2), lambda x: F.avg_pool3d(x, 2),
         [(X3D,), ((1, 1, 2, 2, 2),), ((0, 1, 4, 4, 4),)]),
    case("avg_pool3d_options", lambda x: x.avg_pool3d(3, stride=2, padding=1, ceil_mode=True,
                                                      count_include_pad=False),
         lambda x: F.avg_pool3d(x, 3, stride=2, padding=1, ceil_mode=True,
                                count_include_pad=False), [(X3D,)]),
    case("max_unpool2d", lambda x: _pool_unpool(x),
         lambda x: _pool_unpool(x, F.max_pool2d, F.max_unpool2d),
         [(X,), ((1, 1, 2, 2),), ((2, 3, 4),)]),
    case("max_unpool2d_output_size", lambda x: _pool_unpool(x, output_size=(7, 7)),
         lambda x: _pool_unpool(x, F.max_pool2d, F.max_unpool2d, output_size=(7, 7)), [(X,)]),
    case("max_unpool2d_stride_padding", lambda x: _pool_unpool(x, stride_padding=True),
         lambda x: _pool_unpool(x, F.max_pool2d, F.max_unpool2d, stride_padding=True), [(X,)]),
    case("max_unpool1d", lambda x: x.max_pool1d(2, return_indices=True)[0].max_unpool1d(
        x.max_pool1d(2, return_indices=True)[1], 2),
         lambda x: F.max_unpool1d(*F.max_pool1d(x, 2, return_indices=True), 2),
         [((2, 3, 9),), ((1, 1, 2),)]),
    case("max_unpool3d", lambda x: x.max_pool3d(2, return_indices=True)[0].max_unpool3d(
        x.max_pool3d(2, return_indices=True)[1], 2),
         lambda x: F.max_unpool3d(*F.max_pool3d(x, 2, return_indices=True), 2), [(X3D,)]),
    # any indices, not only max_pool's: a value lands at its index, duplicates add up in
    # tinylab and PyTorch keeps one of them (so these indices are distinct per plane)
    case("max_unpool2d_of_values", lambda v, i: v.max_unpool2d(i.flip(-1) * 2 + 1, 2),
         lambda v, i: F.max_unpool2d(v, i.flip(-1).long() * 2 + 1, 2),
         [((2, 3, 3, 2), (2, 3, 3, 2))], ("real", "api_positions6"),
         noncontiguous=False),  # PyTorch's backward cannot read strided indices
]


def _pool_unpool(x, pool=None, unpool=None, stride_padding=False, **kw):
    """max_pool then max_unpool with its indices, in tinylab or (pool/unpool given) PyTorch;
    stride_padding: kernel 3, stride 2, padding 1, back to the input's size."""
    kernel, stride, padding = (3, 2, 1) if stride_padding else (2, None, 0)
    if stride_padding:
        kw["output_size"] = x.shape[-2:]
    if pool is None:
        values, indices = x.max_pool2d(kernel, stride, padding=padding, return_indices=True)
        return values.max_unpool2d(indices, kernel, stride, padding, **kw)
    values, indices = pool(x, kernel, stride, padding, return_indices=True)
    return unpool(values, indices, kernel, stride, padding, **kw)


def interpolate_case(name, shapes, **kw):
    atol = kw.pop("atol", 1e-5)
    return case(name, lambda x: x.interpolate(**kw), lambda x: F.interpolate(x, **kw), shapes,
                atol=atol)


RESAMPLING = [
    interpolate_case("interpolate", [((2, 3, 5),), ((1, 1, 1),)], size=7),
    interpolate_case("interpolate_nearest_scale", [((2, 3, 5),), ((1, 2, 4, 3),)],
                     scale_factor=1.5),
    interpolate_case("interpolate_nearest_down", [((1, 2, 9, 7),)], size=(4, 3)),
    interpolate_case("interpolate_nearest_double", [((1, 2, 3, 4),)], scale_factor=2),
    interpolate_case("interpolate_nearest_3d", [((1, 2, 3, 4, 2),)], size=(5, 2, 3)),
    interpolate_case("interpolate_nearest_recompute", [((1, 1, 5, 3),)], scale_factor=1.7,
                     recompute_scale_factor=True),
    case("interpolate_nearest_exact", lambda x: x.interpolate(size=(7,) * (x.ndim - 2),
                                                              mode="nearest-exact"),
         lambda x: F.interpolate(x, size=(7,) * (x.ndim - 2), mode="nearest-exact"),
         [((2, 3, 5),), ((1, 2, 4, 6),)]),
    interpolate_case("interpolate_linear", [((2, 3, 5),), ((1, 1, 1),)], size=8, mode="linear"),
    interpolate_case("interpolate_linear_down", [((2, 3, 9),)], size=4, mode="linear"),
    interpolate_case("interpolate_linear_align_corners", [((2, 3, 5),)], size=8, mode="linear",
                     align_corners=True),
    interpolate_case("interpolate_linear_to_one", [((2, 3, 5),)], size=1, mode="linear",
                     align_corners=True),
    interpolate_case("interpolate_bilinear", [((2, 3, 4, 5),), ((1, 1, 1, 1),)], size=(7, 3),
                     mode="bilinear"),
    interpolate_case("interpolate_bilinear_scale", [((1, 2, 4, 5),)], scale_factor=(0.5, 1.7),
                     mode="bilinear"),
    interpolate_case("interpolate_bilinear_align_corners", [((2, 3, 4, 5),)], size=(6, 9),
                     mode="bilinear", align_corners=True),
    interpolate_case("interpolate_trilinear", [((1, 2, 3, 4, 2),)], size=(5, 3, 4),
                     mode="trilinear"),
    interpolate_case("interpolate_trilinear_align_corners", [((1, 1, 3, 2, 4),)],
                     scale_factor=2.5, mode="trilinear", align_corners=True),
    case("interpolate_double", lambda x: x.interpolate(size=6, mode="linear"),
         lambda x: F.interpolate(x, size=6, mode="linear"), [((1, 2, 4),)], ("f64",)),
    case("interpolate_nearest_int", lambda x: x.interpolate(size=(5, 2)),
         lambda x: F.interpolate(x.float(), size=(5, 2)).int(), [((1, 2, 3, 4),)], ("int",)),
    case("interpolate_special", lambda x: (x.interpolate(size=(7, 3)),
                                           x.interpolate(size=(7, 3), mode="bilinear")),
         lambda x: (F.interpolate(x, size=(7, 3)), F.interpolate(x, size=(7, 3), mode="bilinear")),
         [((1, 2, 5, 4),)], ("api_special",), grad=False),
    case("interpolate_empty_batch", lambda x: x.interpolate(size=(3, 4), mode="bilinear"),
         lambda x: F.interpolate(x, size=(3, 4), mode="bilinear"), [((0, 2, 5, 5),)]),
    case("interpolate_then_conv", lambda x, w: x.interpolate(scale_factor=2, mode="bilinear")
         .conv2d(w).relu().sum(),
         lambda x, w: F.conv2d(F.interpolate(x, scale_factor=2, mode="bilinear"), w).relu().sum(),
         [((1, 2, 3, 4), (3, 2, 3, 3))], atol=1e-4),
]


def _nll(reduction="mean", ignore=-100, weighted=False):
    def theirs(x, y, *weight):
        return F.nll_loss(x.log_softmax(1), y.long(), weight[0].detach() if weight else None,
                          ignore_index=ignore, reduction=reduction)

    def ours(x, y, *weight):
        return x.log_softmax(1).nll_loss(y, weight[0].detach() if weight else None,
                                         ignore_index=ignore, reduction=reduction)
    return ours, theirs


LOSSES = [
    case("nll_loss", *_nll(), [((5, 4), (5,)), ((1, 4), (1,)), ((0, 4), (0,))],
         ("real", "api_label4")),
    case("nll_loss_sum_none", lambda x, y: (_nll("sum")[0](x, y), _nll("none")[0](x, y)),
         lambda x, y: (_nll("sum")[1](x, y), _nll("none")[1](x, y)), [((6, 4), (6,))],
         ("real", "api_label4")),
    case("nll_loss_ignore", *_nll(), [((8, 4), (8,))], ("real", "api_label4_ignored")),
    case("nll_loss_ignore_none", *_nll("none"), [((8, 4), (8,))], ("real", "api_label4_ignored")),
    case("nll_loss_ignore_custom", *_nll(ignore=2), [((8, 4), (8,))], ("real", "api_label4")),
    case("nll_loss_weight", *_nll(weighted=True), [((6, 4), (6,), (4,))],
         ("real", "api_label4", "positive")),
    case("nll_loss_weight_ignore_sum", *_nll("sum", weighted=True), [((6, 4), (6,), (4,))],
         ("real", "api_label4_ignored", "positive")),
    case("nll_loss_spatial", *_nll(), [((2, 4, 3, 5), (2, 3, 5)), ((2, 4, 3), (2, 3))],
         ("real", "api_label4")),
    case("nll_loss_spatial_none", *_nll("none", weighted=True), [((2, 4, 3, 5), (2, 3, 5), (4,))],
         ("real", "api_label4", "positive")),
    case("nll_loss_unbatched", lambda x, y: x.log_softmax(0).nll_loss(y),
         lambda x, y: F.nll_loss(x.log_softmax(0), y.long()), [((4,), ())], ("real", "api_label4"),
         noncontiguous=False),
    case("nll_loss_all_ignored", lambda x, y: x.log_softmax(1).nll_loss(y * 0 - 100),
         lambda x, y: F.nll_loss(x.log_softmax(1), y.long() * 0 - 100), [((3, 4), (3,))],
         ("real", "api_label4")),
    case("binary_crossentropy_logits_pos_weight",
         lambda x, y, w: x.binary_crossentropy_logits(y, pos_weight=w.detach()),
         lambda x, y, w: F.binary_cross_entropy_with_logits(x, y, pos_weight=w.detach()),
         [((3, 4), (3, 4), (4,)), ((5,), (5,), (1,)), ((2, 3), (2, 3), (2, 3))],
         ("wide", "prob", "positive"), atol=1e-4),
    case("binary_crossentropy_logits_pos_weight_none",
         lambda x, y, w: x.binary_crossentropy_logits(y, reduction="none", pos_weight=w.detach()),
         lambda x, y, w: F.binary_cross_entropy_with_logits(x, y, reduction="none",
                                                           pos_weight=w.detach()),
         [((3, 4), (3, 4), (4,))], ("real", "api_binary", "positive")),
    case("binary_crossentropy_logits_pos_weight_sum",
         lambda x, y, w: x.binary_crossentropy_logits(y, reduction="sum", pos_weight=w.detach()),
         lambda x, y, w: F.binary_cross_entropy_with_logits(x, y, reduction="sum",
                                                           pos_weight=w.detach()),
         [((2, 3, 4), (2, 3, 4), (3, 1))], ("real", "prob", "positive"), atol=1e-4),
]

GQA = ((1, 4, 3, 8), (1, 2, 5, 8), (1, 2, 5, 6))
ATTENTION = [
    case("scaled_dot_product_attention_gqa",
         lambda q, k, v: q.scaled_dot_product_attention(k, v, enable_gqa=True),
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
         [GQA, ((2, 6, 2, 4), (2, 3, 4, 4), (2, 1, 4, 3)), ((4, 3, 8), (2, 5, 8), (2, 5, 6))],
         atol=1e-4),
    case("scaled_dot_product_attention_gqa_causal_mask",
         lambda q, k, v: q.scaled_dot_product_attention(k, v, is_causal=True, enable_gqa=True),
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
         [((1, 4, 5, 8), (1, 2, 5, 8), (1, 2, 5, 6))], atol=1e-4),
    case("scaled_dot_product_attention_gqa_equal_heads",
         lambda q, k, v: q.scaled_dot_product_attention(k, v, enable_gqa=True),
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
         [((1, 2, 3, 8), (1, 2, 5, 8), (1, 2, 5, 6))], atol=1e-4),
]

CASES = POOLING + RESAMPLING + LOSSES + ATTENTION


@pytest.mark.parametrize("case,shapes,strided", variants(CASES))
def test_api_nn_parity(case, shapes, strided):
    run_case(case, shapes, strided)


@pytest.mark.parametrize("name", ["max_pool2d_indices", "max_unpool2d", "interpolate_bilinear",
                                  "nll_loss"])
def test_api_nn_parity_on_every_backend(device, name):
    case = next(c for c in CASES if c.name == name)
    run_case(case, case.shapes[0], False)


# ---- errors: PyTorch rejects the input, and so does tinylab, when the op is built ----
def both(shape, dtype=np.float32):
    array = np.zeros(shape, dtype)
    return Tensor(array), torch.from_numpy(array)


X3, TX3 = both((1, 1, 5))
X4, TX4 = both((1, 1, 4, 4))
X2, TX2 = both((3, 4))
IDX, TIDX = both((1, 1, 2, 2), np.int64)
LOGP, TLOGP = both((3, 4))
LAB, TLAB = Tensor(np.zeros(3, np.int32)), torch.zeros(3, dtype=torch.long)

ERRORS = [
    ("interpolate_both", lambda: X3.interpolate(3, scale_factor=2),
     lambda: F.interpolate(TX3, 3, scale_factor=2), ValueError, ["interpolate", "size"]),
    ("interpolate_neither", lambda: X3.interpolate(), lambda: F.interpolate(TX3), ValueError,
     ["interpolate", "scale_factor"]),
    ("interpolate_2d_input", lambda: X2.interpolate(2), lambda: F.interpolate(TX2, 2),
     ShapeError, ["interpolate", "(3, 4)"]),
    ("interpolate_bilinear_on_3d", lambda: X3.interpolate(3, mode="bilinear"),
     lambda: F.interpolate(TX3, 3, mode="bilinear"), ShapeError, ["interpolate", "bilinear"]),
    ("interpolate_align_nearest", lambda: X3.interpolate(3, align_corners=True),
     lambda: F.interpolate(TX3, 3, align_corners=True), ValueError,
     ["interpolate", "align_corners", "'nearest'"]),
    ("interpolate_size_zero", lambda: X3.interpolate(0), lambda: F.interpolate(TX3, 0),
     ShapeError, ["interpolate", "(0,)"]),
    ("interpolate_scale_too_small", lambda: X3.interpolate(scale_factor=0.1),
     lambda: F.interpolate(TX3, scale_factor=0.1), ShapeError, ["interpolate", "(0,)"]),
    ("interpolate_mode", lambda: X3.interpolate(3, mode="cubic"),
     lambda: F.interpolate(TX3, 3, mode="cubic"), ValueError, ["interpolate", "'cubic'"]),
    ("interpolate_linear_int", lambda: Tensor(np.zeros((1, 1, 4), np.int32)).interpolate(
        3, mode="linear"), lambda: F.interpolate(torch.zeros(1, 1, 4, dtype=torch.long), 3,
                                                 mode="linear"), DTypeError,
     ["interpolate", "int32"]),
    ("max_pool3d_rank", lambda: X4[0].max_pool3d(2), lambda: F.max_pool3d(TX4[0], 2),
     ShapeError, ["max_pool3d", "(1, 4, 4)"]),
    ("avg_pool3d_rank", lambda: X4[0].avg_pool3d(2), lambda: F.avg_pool3d(TX4[0], 2),
     ShapeError, ["avg_pool3d", "(1, 4, 4)"]),
    ("max_pool2d_indices_padding", lambda: X4.max_pool2d(2, padding=2, return_indices=True),
     lambda: F.max_pool2d(TX4, 2, padding=2, return_indices=True), ValueError,
     ["pool", "padding"]),
    ("max_unpool2d_float_indices", lambda: X4[..., :2, :2].max_unpool2d(X4[..., :2, :2], 2),
     lambda: F.max_unpool2d(TX4[..., :2, :2], TX4[..., :2, :2], 2), DTypeError,
     ["max_unpool2d", "float32"]),
    ("max_unpool2d_indices_shape", lambda: X4[..., :2, :2].max_unpool2d(IDX[..., :1], 2),
     lambda: F.max_unpool2d(TX4[..., :2, :2], TIDX[..., :1], 2), ShapeError,
     ["max_unpool2d", "(1, 1, 2, 1)", "(1, 1, 2, 2)"]),
    ("max_unpool2d_output_size", lambda: X4[..., :2, :2].max_unpool2d(IDX, 2, output_size=(6, 6)),
     lambda: F.max_unpool2d(TX4[..., :2, :2], TIDX, 2, output_size=(6, 6)), ShapeError,
     ["max_unpool2d", "(6, 6)"]),
    ("max_unpool2d_rank", lambda: X4[0, 0].max_unpool2d(IDX[0, 0], 2),
     lambda: F.max_unpool2d(TX4[0, 0], TIDX[0, 0], 2), ShapeError, ["max_unpool2d", "(4, 4)"]),
    ("nll_loss_float_target", lambda: LOGP.nll_loss(LOGP), lambda: F.nll_loss(TLOGP, TLOGP),
     TypeError, ["nll_loss", "float32"]),
    ("nll_loss_batch", lambda: LOGP.nll_loss(LAB[:2]), lambda: F.nll_loss(TLOGP, TLAB[:2]),
     ShapeError, ["nll_loss", "(2,)", "(3, 4)"]),
    ("nll_loss_weight", lambda: LOGP.nll_loss(LAB, Tensor.ones(3)),
     lambda: F.nll_loss(TLOGP, TLAB, torch.ones(3)), ShapeError, ["nll_loss", "(4,)", "(3,)"]),
    ("nll_loss_reduction", lambda: LOGP.nll_loss(LAB, reduction="avg"),
     lambda: F.nll_loss(TLOGP, TLAB, reduction="avg"), ValueError, ["nll_loss", "'avg'"]),
    ("nll_loss_0d", lambda: Tensor(1.0).nll_loss(Tensor(0)),
     lambda: F.nll_loss(torch.tensor(1.0), torch.tensor(0)), ShapeError, ["nll_loss", "0-D"]),
    ("bce_pos_weight_shape",
     lambda: X2.binary_crossentropy_logits(X2, pos_weight=Tensor.ones(3)),
     lambda: F.binary_cross_entropy_with_logits(TX2, TX2, pos_weight=torch.ones(3)),
     ShapeError, ["binary_crossentropy_logits", "(3,)", "(3, 4)"]),
    ("sdpa_gqa_heads", lambda: Tensor.ones(1, 4, 3, 8).scaled_dot_product_attention(
        Tensor.ones(1, 3, 5, 8), Tensor.ones(1, 3, 5, 6), enable_gqa=True),
     lambda: F.scaled_dot_product_attention(torch.ones(1, 4, 3, 8), torch.ones(1, 3, 5, 8),
                                            torch.ones(1, 3, 5, 6), enable_gqa=True),
     ShapeError, ["scaled_dot_product_attention", "(3)", "(4)"]),
    ("sdpa_heads_without_gqa", lambda: Tensor.ones(1, 4, 3, 8).scaled_dot_product_attention(
        Tensor.ones(1, 2, 5, 8), Tensor.ones(1, 2, 5, 6)),
     lambda: F.scaled_dot_product_attention(torch.ones(1, 4, 3, 8), torch.ones(1, 2, 5, 8),
                                            torch.ones(1, 2, 5, 6)), ShapeError,
     ["scaled_dot_product_attention", "(1, 2, 5, 8)", "enable_gqa"]),
]


@pytest.mark.parametrize("name,ours,theirs,error,words", ERRORS, ids=[e[0] for e in ERRORS])
def test_api_nn_errors_match_pytorch(name, ours, theirs, error, words):
    run_error_check(name, ours, theirs, error, words)
