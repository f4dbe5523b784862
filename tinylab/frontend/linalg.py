"""Products: matmul (broadcast MUL + SUM, with PyTorch's 1-D and batch rules), dot, linear,
sequential, einsum, and scaled_dot_product_attention built from them (grouped-query heads too).
Mixed into Tensor through NNMixin (frontend/nn_ops.py).
"""
from __future__ import annotations

import functools
import math

from ..dtype import dtypes, promote
from ..errors import ShapeError


def _share_heads(query, key, value):
    """Grouped-query attention: repeat each key/value head for the query heads that share it."""
    if query.ndim < 3 or key.ndim < 3 or value.ndim < 3:
        return key, value
    heads = query.shape[-3]
    if heads % key.shape[-3] or heads % value.shape[-3]:
        raise ShapeError(f"scaled_dot_product_attention: the number of heads in key "
                         f"({key.shape[-3]}) and value ({value.shape[-3]}) must divide the "
                         f"number of heads in query ({heads}) when enable_gqa=True")
    return (key.repeat_interleave(heads // key.shape[-3], dim=-3),
            value.repeat_interleave(heads // value.shape[-3], dim=-3))



def _product_sum(x, w, dtype=None):
    """The batched product of x (..., m, k) and w (..., k, n) as broadcast MUL + SUM."""
    if dtype is None:
        out_dtype = promote(x.dtype, w.dtype)
        # float16 / bfloat16: products and sum in float32, rounded once (PyTorch's CPU matmul);
        # rounding each product to 16 bits first loses digits a 64-long dot product shows
        wide = dtypes.float32 if out_dtype.is_narrow_float else out_dtype
        accumulate = None
    else:
        out_dtype = accumulate = dtypes.from_any(dtype)
        wide = promote(promote(x.dtype, w.dtype), out_dtype)
    x, w = x.cast(wide), w.cast(wide)
    product = x.unsqueeze(-2) * w.transpose(-1, -2).unsqueeze(-3)
    return product.sum(-1, dtype=accumulate).cast(out_dtype)


class LinearAlgebraMixin:
    __slots__ = ()

    # ---- linear algebra ----
    def matmul(self, other, reverse: bool = False, dtype=None):
        """PyTorch's matmul; `dtype=` (tinygrad's) accumulates in that dtype: the products in
        the wider of it and the operands' dtype, each cast to it and summed in it."""
        a, b = (other, self) if reverse else (self, other)
        if not hasattr(a, "node") or not hasattr(b, "node"):
            raise TypeError("matmul: both operands must be tensors")
        if a.ndim == 0 or b.ndim == 0:
            raise ShapeError(f"matmul: both operands need at least 1 dimension, got shapes "
                             f"{a.shape} and {b.shape}")
        x = a.unsqueeze(0) if a.ndim == 1 else a
        w = b.unsqueeze(-1) if b.ndim == 1 else b
        if x.shape[-1] != w.shape[-2]:
            raise ShapeError(f"matmul: shapes {a.shape} and {b.shape} do not align "
                             f"({x.shape[-1]} != {w.shape[-2]})")
        from .tensor import broadcast_shape
        try:
            broadcast_shape(x.shape[:-2], w.shape[:-2], op="matmul")
        except ShapeError:
            raise ShapeError(f"matmul: the batch dims of shapes {a.shape} and {b.shape} cannot "
                             f"be broadcast together") from None
        out = _product_sum(x, w, dtype)
        if a.ndim == 1:
            out = out.squeeze(-2)
        if b.ndim == 1:
            out = out.squeeze(-1)
        return out

    def dot(self, other, dtype=None):
        """PyTorch's rules for 0-D and 1-D operands (both 1-D of one length: their inner
        product; 0-D: an error). With more dims it is matmul, as in tinygrad (x.dot(w) in an
        MLP), where PyTorch raises; `dtype=` as matmul's."""
        if not hasattr(other, "node"):
            raise TypeError(f"dot: other must be a tensor, got {type(other).__name__}")
        if self.ndim == 0 or other.ndim == 0:
            raise ShapeError(f"dot: 1-D tensors expected, but got {self.ndim}-D and "
                             f"{other.ndim}-D tensors (shapes {self.shape} and {other.shape})")
        if self.ndim == 1 and other.ndim == 1 and self.shape != other.shape:
            raise ShapeError(f"dot: inconsistent tensor size, {self.shape[0]} and "
                             f"{other.shape[0]} elements")
        return self.matmul(other, dtype=dtype)

    def linear(self, weight, bias=None, dtype=None):
        """x @ weight + bias (tinygrad's weight layout: (in, out)); `dtype=` (tinygrad's)
        computes it all in that dtype."""
        if dtype is not None:
            dtype = dtypes.from_any(dtype)
            return self.cast(dtype).linear(weight.cast(dtype),
                                           bias.cast(dtype) if bias is not None else None)
        if bias is not None and self.dtype.is_narrow_float and \
                self.dtype == weight.dtype == bias.dtype:
            # the product and the bias added in float32, rounded once (PyTorch's addmm)
            return self.float().linear(weight.float(), bias.float()).cast(self.dtype)
        out = self * weight if weight.ndim == 1 else self.matmul(weight)
        return out + bias if bias is not None else out

    def sequential(self, layers):
        return functools.reduce(lambda x, f: f(x), layers, self)

    @staticmethod
    def einsum(formula: str, *operands):
        """Einstein summation ('ij,jk->ik', '...ij->...ji', 'ii->i'): each operand is permuted
        and reshaped onto the letters of all operands, multiplied (broadcast) and summed over
        the letters missing from the output."""
        from .einsum import einsum
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
        return einsum(formula, operands)

    def scaled_dot_product_attention(self, key, value, attn_mask=None, dropout_p: float = 0.0,
                                     is_causal: bool = False, scale: float | None = None,
                                     enable_gqa: bool = False):
        """softmax(self @ key^T * scale + mask) @ value over the last two dims; a bool mask
        keeps True positions, a float mask is added; is_causal keeps j <= i. Dropout on the
        weights applies while Tensor.training (as tinygrad). enable_gqa: key and value may
        have fewer heads (dim -3) than the query, each shared by a group of query heads."""
        for name, t in (("key", key), ("value", value)):
            if not hasattr(t, "node") or t.ndim < 2:
                raise ShapeError(f"scaled_dot_product_attention: {name} must be a tensor with at "
                                 f"least 2 dims, got {getattr(t, 'shape', type(t).__name__)}")
        if self.ndim < 2 or self.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
            raise ShapeError(f"scaled_dot_product_attention: query {self.shape}, key {key.shape} "
                             f"and value {value.shape} do not fit (query and key share the last "
                             f"dim, key and value the second to last)")
        if enable_gqa:
            key, value = _share_heads(self, key, value)
        from .tensor import broadcast_shape
        try:
            broadcast_shape(self.shape[:-2], key.shape[:-2], value.shape[:-2])
        except ShapeError:
            raise ShapeError(f"scaled_dot_product_attention: the batch and head dims of query "
                             f"{self.shape}, key {key.shape} and value {value.shape} do not "
                             f"broadcast (fewer key/value heads need enable_gqa=True)") from None
        if is_causal and attn_mask is not None:
            raise ValueError("scaled_dot_product_attention: give attn_mask or is_causal, not both")
        scale = 1 / math.sqrt(self.shape[-1]) if scale is None else scale
        scores = self.matmul(key.transpose(-2, -1)) * scale
        if is_causal:
            rows, cols = scores.shape[-2:]
            attn_mask = type(self).ones(rows, cols, dtype=dtypes.bool, device=self.device).tril()
        if attn_mask is not None:
            scores = attn_mask.where(scores, -math.inf) if attn_mask.dtype.is_bool \
                else scores + attn_mask
        return scores.softmax(-1).dropout(dropout_p).matmul(value)
