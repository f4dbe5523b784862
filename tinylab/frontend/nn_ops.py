"""Neural-network functional methods: matmul/linear, convolutions and pooling from sliding-window
views, normalization, dropout, one_hot and the losses. All composites of the primitive ops:
a matmul is broadcast MUL + SUM, a conv2d is pad + windows + MUL + SUM.
Mixed into Tensor (frontend/tensor.py).
"""
from __future__ import annotations

import functools
import math

from ..dtype import dtypes, promote
from ..errors import ShapeError


def _pair(value, n: int, name: str, minimum: int | None = None) -> tuple:
    """An int or n ints as an n-tuple, each at least `minimum`; errors name the argument."""
    values = (value,) * n if isinstance(value, int) else tuple(value)
    if len(values) != n or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise ShapeError(f"{name}: expected an int or {n} ints, got {value!r}")
    if minimum is not None and any(v < minimum for v in values):
        raise ShapeError(f"{name}: must be at least {minimum}, got {value!r}")
    return values


def _capturing() -> bool:
    from ..engine.realize import capturer
    return capturer() is not None


def _check_nll(log_probs, labels, weight) -> None:
    if not hasattr(labels, "node") or not labels.dtype.is_int:
        raise TypeError(f"nll_loss: target must be an integer tensor of class indices, got "
                        f"{getattr(labels, 'dtype', type(labels).__name__)}")
    if log_probs.ndim == 0:
        raise ShapeError("nll_loss: input must have a class dim, got a 0-D tensor")
    expected = () if log_probs.ndim == 1 else log_probs.shape[:1] + log_probs.shape[2:]
    if labels.shape != expected:
        raise ShapeError(f"nll_loss: target {labels.shape} must be input {log_probs.shape} "
                         f"without the class dim, {expected}")
    classes = log_probs.shape[0 if log_probs.ndim == 1 else 1]
    if weight is not None and (not hasattr(weight, "node") or weight.shape != (classes,)):
        raise ShapeError(f"nll_loss: weight must have one value per class, ({classes},), got "
                         f"{getattr(weight, 'shape', type(weight).__name__)}")


def _check_reduction(reduction: str, op: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _reduce_loss(per_item, reduction: str, op: str):
    _check_reduction(reduction, op)
    return {"mean": per_item.mean, "sum": per_item.sum, "none": lambda: per_item}[reduction]()


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


class NNMixin:
    __slots__ = ()

    # ---- linear algebra ----
    def matmul(self, other, reverse: bool = False):
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
        dtype = promote(x.dtype, w.dtype)
        x, w = x.cast(dtype), w.cast(dtype)
        product = x.unsqueeze(-2) * w.transpose(-1, -2).unsqueeze(-3)
        out = product.sum(-1)
        if a.ndim == 1:
            out = out.squeeze(-2)
        if b.ndim == 1:
            out = out.squeeze(-1)
        return out

    def dot(self, other):
        """PyTorch's rules for 0-D and 1-D operands (both 1-D of one length: their inner
        product; 0-D: an error). With more dims it is matmul, as in tinygrad (x.dot(w) in an
        MLP), where PyTorch raises."""
        if not hasattr(other, "node"):
            raise TypeError(f"dot: other must be a tensor, got {type(other).__name__}")
        if self.ndim == 0 or other.ndim == 0:
            raise ShapeError(f"dot: 1-D tensors expected, but got {self.ndim}-D and "
                             f"{other.ndim}-D tensors (shapes {self.shape} and {other.shape})")
        if self.ndim == 1 and other.ndim == 1 and self.shape != other.shape:
            raise ShapeError(f"dot: inconsistent tensor size, {self.shape[0]} and "
                             f"{other.shape[0]} elements")
        return self.matmul(other)

    def linear(self, weight, bias=None):
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

    # ---- convolution ----
    def _conv_padding(self, padding, kernel: tuple, dilation: tuple) -> tuple:
        """Padding as ((before, after), ...) for the spatial dims."""
        n = len(kernel)
        if isinstance(padding, str):
            if padding == "valid":
                return ((0, 0),) * n
            if padding != "same":
                raise ValueError(f"conv: padding must be an int, a tuple, 'same' or 'valid', "
                                 f"got {padding!r}")
            pads = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
            return tuple(pads)
        flat = _pair(padding, n if isinstance(padding, int) or len(padding) == n else 2 * n,
                     "padding", minimum=0)
        if isinstance(padding, int) or len(padding) == n:
            return tuple((p, p) for p in flat[:n])
        pairs = [(flat[2 * i], flat[2 * i + 1]) for i in range(n)]  # PyTorch's flat order:
        return tuple(reversed(pairs))                               # last dim first

    def conv2d(self, weight, bias=None, groups: int = 1, stride=1, dilation=1, padding=0):
        """N-d convolution over the dims after (batch, channels); weight (out, in/groups, *k)."""
        spatial = weight.ndim - 2
        if spatial < 1 or self.ndim != spatial + 2:
            raise ShapeError(f"conv: input {self.shape} must have {spatial + 2} dims for weight "
                             f"{weight.shape} (batch, channels, *spatial)")
        batch, cin = self.shape[:2]
        cout, cin_group = weight.shape[:2]
        kernel = weight.shape[2:]
        if groups < 1 or cin % groups or cout % groups or cin // groups != cin_group:
            raise ShapeError(f"conv: input channels {cin} / groups {groups} must equal weight's "
                             f"{cin_group} (weight {weight.shape}), and out channels {cout} "
                             f"must divide by groups")
        if bias is not None and bias.shape != (cout,):
            raise ShapeError(f"conv: bias {bias.shape} must have one value per output channel "
                             f"({cout},)")
        stride = _pair(stride, spatial, "stride", minimum=1)
        dilation = _pair(dilation, spatial, "dilation", minimum=1)
        pads = self._conv_padding(padding, kernel, dilation)
        padded = tuple(s + b + a for s, (b, a) in zip(self.shape[2:], pads))
        if any(d * (k - 1) + 1 > s for k, d, s in zip(kernel, dilation, padded)):
            raise ShapeError(f"conv: kernel {kernel} (dilation {dilation}) is larger than the "
                             f"padded input {padded} (input {self.shape[2:]})")
        x = self.pad(((0, 0), (0, 0)) + pads)._pool(kernel, stride, dilation)
        out_spatial = x.shape[2:2 + spatial]
        group_out = cout // groups
        # (b, g, cin_g, 1, *out, *k) -> (b, g, group_out, *out, cin_g, *k)
        x = x.reshape((batch, groups, cin_group, 1) + out_spatial + kernel)
        x = x.expand((batch, groups, cin_group, group_out) + out_spatial + kernel)
        o = tuple(range(4, 4 + spatial))
        k = tuple(range(4 + spatial, 4 + 2 * spatial))
        x = x.permute((0, 1, 3) + o + (2,) + k)
        # weights stored output-channel-last (a small copy): the kernel's vector lanes can run
        # over output channels with contiguous weight loads while each input value is broadcast
        grouped = weight.reshape((groups, group_out, cin_group) + kernel)
        last = tuple(range(2, 3 + spatial)) + (1,)
        channel_last = grouped.permute((0,) + last).contiguous()
        back = (0, 1 + spatial + 1) + tuple(range(1, 2 + spatial))
        w = channel_last.permute(back)
        w = w.reshape((1, groups, group_out) + (1,) * spatial + (cin_group,) + kernel)
        reduce_axes = tuple(range(-1 - spatial, 0))
        out = (x * w).sum(reduce_axes).reshape((batch, cout) + out_spatial)
        return out if bias is None else out + bias.reshape((1, cout) + (1,) * spatial)

    def conv1d(self, weight, bias=None, groups: int = 1, stride=1, dilation=1, padding=0):
        return self.conv2d(weight, bias, groups, stride, dilation, padding)

    def conv_transpose2d(self, weight, bias=None, groups: int = 1, stride=1, dilation=1,
                         padding=0, output_padding=0):
        """Transposed convolution: dilate the input by the stride, pad, and convolve with the
        flipped, transposed weight (in, out/groups, *k)."""
        spatial = weight.ndim - 2
        kernel = weight.shape[2:]
        stride = _pair(stride, spatial, "stride", minimum=1)
        dilation = _pair(dilation, spatial, "dilation", minimum=1)
        padding = _pair(padding, spatial, "padding", minimum=0)
        output_padding = _pair(output_padding, spatial, "output_padding", minimum=0)
        cin, group_out = weight.shape[:2]
        if spatial < 1 or self.ndim != spatial + 2 or self.shape[1] != cin or groups < 1 \
                or cin % groups:
            raise ShapeError(f"conv_transpose2d: input {self.shape} must be (batch, {cin}, "
                             f"*spatial) for weight {weight.shape} (in, out/groups, *kernel), "
                             f"with in divisible by groups {groups}")
        w = weight.reshape((groups, cin // groups, group_out) + kernel)
        w = w.transpose(1, 2).reshape((groups * group_out, cin // groups) + kernel)
        w = w.flip(tuple(range(2, 2 + spatial)))
        x = self
        if any(s > 1 for s in stride):  # insert (s-1) zeros between inputs
            batch, channels = x.shape[:2]
            for i, s in enumerate(stride):
                if s == 1:
                    continue
                axis = 2 + i
                size = x.shape[axis]
                x = x.unsqueeze(axis + 1)
                pads = [(0, 0)] * x.ndim
                pads[axis + 1] = (0, s - 1)
                x = x.pad(tuple(pads))
                shape = x.shape[:axis] + (size * s,) + x.shape[axis + 2:]
                x = x.reshape(shape)
                bounds = [(0, n) for n in x.shape]
                bounds[axis] = (0, (size - 1) * s + 1)
                x = x.shrink(tuple(bounds))
        pads = []
        for k, d, p, op in zip(kernel, dilation, padding, output_padding):
            edge = d * (k - 1) - p
            pads.append((edge, edge + op))
        flat = tuple(v for pair in reversed(pads) for v in pair)
        return x.conv2d(w, bias, groups, 1, dilation, flat)

    # ---- pooling ----
    def _pool_args(self, kernel_size, stride, dilation, padding, spatial: int, op: str):
        """(kernel, stride, dilation, pads) per spatial dim, checked as PyTorch does: padding at
        most half the kernel, and each (dilated) window fits the padded input."""
        kernel = _pair(kernel_size, spatial, "kernel_size", minimum=1)
        stride = kernel if stride is None else _pair(stride, spatial, "stride", minimum=1)
        dilation = _pair(dilation, spatial, "dilation", minimum=1)
        pads = self._conv_padding(padding, kernel, dilation)
        for (b, _), k in zip(pads, kernel):
            if b > k // 2:
                raise ShapeError(f"{op}: padding {padding} must be at most half the kernel "
                                 f"{kernel}")
        sizes = self.shape[-spatial:] if spatial else ()
        for size, (b, a), k, d in zip(sizes, pads, kernel, dilation):
            if d * (k - 1) + 1 > size + b + a:
                raise ShapeError(f"{op}: window {kernel} (dilation {dilation}) does not fit "
                                 f"input {tuple(sizes)} padded by {padding}")
        return kernel, stride, dilation, pads

    def _ceil_pads(self, pads, kernel, stride, dilation):
        """Extra right padding so ceil_mode keeps the last partial window."""
        spatial = self.shape[-len(kernel):]
        out = []
        for i, (b, a), k, s, d in zip(spatial, pads, kernel, stride, dilation):
            size = i + b + a
            window = d * (k - 1) + 1
            count = math.ceil((size - window) / s) + 1
            if (count - 1) * s >= i + b:  # the last window must start inside the input
                count -= 1
            out.append((b, a + max(0, (count - 1) * s + window - size)))
        return tuple(out)

    def max_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, padding=0,
                   ceil_mode: bool = False, return_indices: bool = False):
        """2-D max pooling; return_indices=True also gives PyTorch's flat per-plane indices of
        the maxima (pooling.py). Tied maxima in a window share its gradient, as tinygrad's and
        as amax's in both libraries (PyTorch's max_pool2d gives it all to the first)."""
        return self._max_pool(2, kernel_size, stride, dilation, padding, ceil_mode,
                              return_indices)

    def _max_pool(self, dims: int, kernel_size, stride, dilation, padding, ceil_mode: bool,
                  return_indices: bool = False):
        spatial = dims if self.ndim > dims else self.ndim
        kernel, stride, dilation, pads = self._pool_args(kernel_size, stride, dilation, padding,
                                                         spatial, "max_pool")
        if ceil_mode:
            pads = self._ceil_pads(pads, kernel, stride, dilation)
        if return_indices:
            return self._max_pool_with_indices(kernel, stride, dilation, pads)
        lowest = -math.inf if self.dtype.is_float else self.dtype.min_value()
        x = self.pad(((0, 0),) * (self.ndim - spatial) + pads, value=lowest)
        return x._pool(kernel, stride, dilation).max(tuple(range(-spatial, 0)))

    def avg_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, padding=0,
                   ceil_mode: bool = False, count_include_pad: bool = True):
        return self._avg_pool(2, kernel_size, stride, dilation, padding, ceil_mode,
                              count_include_pad)

    def _avg_pool(self, dims: int, kernel_size, stride, dilation, padding, ceil_mode: bool,
                  count_include_pad: bool):
        spatial = dims if self.ndim > dims else self.ndim
        kernel, stride, dilation, pads = self._pool_args(kernel_size, stride, dilation, padding,
                                                         spatial, "avg_pool")
        full = self._ceil_pads(pads, kernel, stride, dilation) if ceil_mode else pads
        lead = ((0, 0),) * (self.ndim - spatial)
        axes = tuple(range(-spatial, 0))
        total = self.pad(lead + full)._pool(kernel, stride, dilation).sum(axes)
        ones = type(self).ones(*self.shape[-spatial:], device=self.device)
        # padding counts as part of the window when count_include_pad; the ceil_mode overhang
        # never does
        extra = tuple((0, a2 - a1) for (_, a1), (_, a2) in zip(pads, full))
        counts = ones.pad(pads, value=1.0 if count_include_pad else 0.0).pad(extra)
        counts = counts._pool(kernel, stride, dilation).sum(axes)
        return total / (counts.cast(total.dtype) if total.dtype.is_float else counts)

    def max_pool1d(self, kernel_size=2, stride=None, dilation=1, padding=0, ceil_mode=False,
                   return_indices: bool = False):
        out = self.unsqueeze(-2).max_pool2d((1, kernel_size), None if stride is None else
                                            (1, stride), (1, dilation), (0, padding),
                                            ceil_mode, return_indices)
        if return_indices:  # a (1, W) plane's flat index is the 1-D index
            return out[0].squeeze(-2), out[1].squeeze(-2)
        return out.squeeze(-2)

    def avg_pool1d(self, kernel_size=2, stride=None, padding=0, ceil_mode=False,
                   count_include_pad=True):
        return self.unsqueeze(-2).avg_pool2d((1, kernel_size), None if stride is None else
                                             (1, stride), 1, (0, padding), ceil_mode,
                                             count_include_pad).squeeze(-2)

    # ---- normalization ----
    def batchnorm(self, weight, bias, mean, invstd, axis=1):
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(self._axis(a, "batchnorm") for a in axes)
        shape = tuple(s if i in axes else 1 for i, s in enumerate(self.shape))
        for name, t in (("weight", weight), ("bias", bias), ("mean", mean), ("invstd", invstd)):
            if t is not None and t.numel() != math.prod(shape) and t.numel() != 1:
                raise ShapeError(f"batchnorm: {name} {t.shape} must hold one value per "
                                 f"channel {tuple(self.shape[a] for a in axes)} of input "
                                 f"{self.shape}")
        x = self - mean.reshape(shape)
        if weight is not None:
            x = x * weight.reshape(shape)
        x = x * (invstd.reshape(shape) if invstd.ndim == len(axes) else invstd)
        return x + bias.reshape(shape) if bias is not None else x

    def layernorm(self, axis=-1, eps: float = 1e-5):
        axis = self._reduce_axes(axis, "layernorm")
        y = self - self.mean(axis, keepdim=True)
        return y * (y * y).mean(axis, keepdim=True).add(eps).rsqrt()

    def dropout(self, p: float = 0.5):
        if not 0 <= p <= 1:
            raise ValueError(f"dropout: p must be in [0, 1], got {p}")
        if not type(self).training or p == 0:
            return self
        if p == 1:
            return self * 0
        keep = type(self).rand(*self.shape, device=self.device) >= p
        return keep.where(self, 0) * (1 / (1 - p))

    # ---- classification ----
    def one_hot(self, num_classes: int = -1):
        """(..., num_classes) with a 1 at each value's class (F.one_hot); num_classes=-1 means
        max + 1. Like PyTorch, class values are checked: the smallest and largest are realized
        and read when the op is built (outside TinyJit capture, where they are not known yet).
        Any integer dtype is accepted (PyTorch wants int64); bool is not."""
        if not self.dtype.is_int:
            raise TypeError(f"one_hot: needs an integer tensor of class indices, got "
                            f"{self.dtype.name}")
        if isinstance(num_classes, bool) or not isinstance(num_classes, int):
            raise TypeError(f"one_hot: num_classes must be an int, got {num_classes!r}")
        if self.numel() == 0 and num_classes <= 0:
            raise ValueError(f"one_hot: cannot infer the number of classes from an empty tensor "
                             f"(shape {self.shape}); pass num_classes")
        if num_classes == 0 or num_classes < -1:  # no class value can be smaller
            raise ValueError(f"one_hot: num_classes must be positive (or -1), got {num_classes}")
        if self.numel() and not _capturing():
            low, high = self.min(), self.max()
            type(self).realize(low, high)
            low, high = int(low.item()), int(high.item())
            if low < 0:
                raise ValueError(f"one_hot: class values must be non-negative, got {low}")
            if num_classes == -1:
                num_classes = high + 1
            elif high >= num_classes:
                raise ValueError(f"one_hot: class values must be smaller than num_classes="
                                 f"{num_classes}, got {high}")
        elif num_classes == -1:
            num_classes = int(self.max().item()) + 1
        classes = type(self).arange(num_classes, device=self.device)
        return (self.unsqueeze(-1) == classes).cast(dtypes.default_int)

    def sparse_categorical_crossentropy(self, Y, ignore_index: int = -1,  # noqa: N803
                                        label_smoothing: float = 0.0, reduction: str = "mean",
                                        op: str = "sparse_categorical_crossentropy"):
        """Cross entropy of logits (..., classes) against integer labels (...); labels equal to
        ignore_index count for nothing, and 'mean' divides by the labels that count."""
        if not hasattr(Y, "node") or not (Y.dtype.is_int or Y.dtype.is_bool):
            raise TypeError(f"{op}: labels must be an integer tensor, got "
                            f"{getattr(Y, 'dtype', type(Y).__name__)}")
        if Y.shape != self.shape[:-1]:
            raise ShapeError(f"{op}: labels {Y.shape} must match logits {self.shape} without "
                             f"the class dim")
        log_probs = self.log_softmax(-1)
        classes = self.shape[-1]
        keep = Y != ignore_index
        target = (Y.unsqueeze(-1) == type(self).arange(classes, device=self.device)) \
            & keep.unsqueeze(-1)
        per_item = -target.where(log_probs, 0.0).sum(-1)
        if label_smoothing:  # (a -inf logit makes the mean -inf: only read it when used)
            smooth = keep.where(log_probs.mean(-1), 0.0)
            per_item = (1 - label_smoothing) * per_item - label_smoothing * smooth
        if reduction == "mean":  # no label counts (empty, or all ignored): 0 / 0 = NaN, as PyTorch
            return per_item.sum() / keep.sum()
        return _reduce_loss(per_item, reduction, op)

    def cross_entropy(self, Y, reduction: str = "mean", label_smoothing: float = 0.0,  # noqa
                      ignore_index: int = -1):
        """Y holds class indices (like sparse_categorical_crossentropy) or probabilities. As in
        PyTorch, classes are dim 1 of (N, C, d1, ...) logits (dim 0 of unbatched (C,) ones)."""
        if Y.dtype.is_float and Y.shape != self.shape:
            raise ShapeError(f"cross_entropy: probabilities {Y.shape} must match logits "
                             f"{self.shape}")
        x = self
        if self.ndim > 2:  # (N, C, d1, ...) -> (N, d1, ..., C): classes last
            order = (0,) + tuple(range(2, self.ndim)) + (1,)
            x = self.permute(order)
            Y = Y.permute(order) if Y.dtype.is_float and Y.ndim == self.ndim else Y  # noqa: N806
        return x._cross_entropy_classes_last(Y, reduction, label_smoothing, ignore_index)

    def _cross_entropy_classes_last(self, Y, reduction, label_smoothing, ignore_index):  # noqa
        if Y.dtype.is_float:
            log_probs = self.log_softmax(-1)
            classes = self.shape[-1]
            Y = Y * (1 - label_smoothing) + label_smoothing / classes  # noqa: N806
            return _reduce_loss(-(log_probs * Y).sum(-1), reduction, "cross_entropy")
        return self.sparse_categorical_crossentropy(Y, ignore_index, label_smoothing, reduction,
                                                    op="cross_entropy")

    def _same_shape(self, Y, op: str) -> None:  # noqa: N803
        if not hasattr(Y, "node") or Y.shape != self.shape:
            raise ShapeError(f"{op}: target {getattr(Y, 'shape', type(Y).__name__)} must have "
                             f"the input's shape {self.shape}")

    def binary_crossentropy(self, Y, reduction: str = "mean"):  # noqa: N803
        """Each log is at least -100 as in PyTorch: a probability of exactly 0 or 1 costs 100,
        not inf. (There the gradient is 0; PyTorch's is (p - y) / 1e-12.)"""
        self._same_shape(Y, "binary_crossentropy")
        per_item = -(Y * self.log().maximum(-100) + (1 - Y) * (1 - self).log().maximum(-100))
        return _reduce_loss(per_item, reduction, "binary_crossentropy")

    def binary_crossentropy_logits(self, Y, reduction: str = "mean", pos_weight=None):  # noqa
        """Binary cross entropy of logits (F.binary_cross_entropy_with_logits); pos_weight
        (broadcast against the target, e.g. one per class) weighs the positive term.
        (1 - y) x + w softplus(-x), w = 1 + (pos_weight - 1) y: its gradient holds at x = 0 too
        (the form relu(x) - xy + log(1 + e^-|x|) has no gradient from relu and |x| there)."""
        self._same_shape(Y, "binary_crossentropy_logits")
        if pos_weight is None:
            per_item = (1 - Y) * self + (-self).softplus()
        else:
            if not hasattr(pos_weight, "node"):
                raise TypeError(f"binary_crossentropy_logits: pos_weight must be a tensor, got "
                                f"{type(pos_weight).__name__}")
            from .tensor import broadcast_shape
            broadcast_shape(pos_weight.shape, Y.shape, op="binary_crossentropy_logits pos_weight")
            log_weight = (pos_weight - 1) * Y + 1  # -log(1 - p) costs 1, -log(p) costs pos_weight
            per_item = (1 - Y) * self + log_weight * (-self).softplus()  # softplus(-x) = -log p
        return _reduce_loss(per_item, reduction, "binary_crossentropy_logits")

    def nll_loss(self, Y, weight=None, ignore_index: int = -100, reduction: str = "mean"):  # noqa
        """Negative log likelihood of log-probabilities (N, C, d1...) or (C,) against integer
        class labels (N, d1...) or () (F.nll_loss; the class dim is 1, or 0 for 1-D input).
        weight: one per class; labels equal to ignore_index count for nothing; 'mean' divides by
        the total weight of the labels that count (NaN when none do, as PyTorch). Labels out of
        range pick nothing (they are lazy), where PyTorch raises."""
        _check_nll(self, Y, weight)
        _check_reduction(reduction, "nll_loss")
        class_dim = 0 if self.ndim == 1 else 1
        classes = self.shape[class_dim]
        others = [d for d in range(self.ndim) if d != class_dim]
        log_probs = self.permute(others + [class_dim])  # (N, d1..., C), labels Y (N, d1...)
        hit = (Y.unsqueeze(-1) == type(self).arange(classes, device=self.device)) \
            & (Y != ignore_index).unsqueeze(-1)
        zero = log_probs._const(0, shape=())
        item_weight = hit.where(weight if weight is not None else 1.0, zero).sum(-1)
        per_item = -hit.where(log_probs, zero).sum(-1) * item_weight
        if reduction == "mean":
            return per_item.sum() / item_weight.sum()
        return _reduce_loss(per_item, reduction, "nll_loss")
