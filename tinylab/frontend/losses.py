"""Classification and losses: one_hot, (sparse) categorical cross-entropy with label smoothing
and ignore_index, binary cross-entropy (on probabilities or logits), nll_loss, each with
PyTorch's reductions and its shape checks. Mixed into Tensor through NNMixin (frontend/nn_ops.py).
"""
from __future__ import annotations

from ..dtype import dtypes
from ..errors import ArgumentError, DTypeError, ShapeError
from . import traced


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


class LossMixin:
    __slots__ = ()

    # ---- classification ----
    def one_hot(self, num_classes: int = -1):
        """(..., num_classes) with a 1 at each value's class (F.one_hot); num_classes=-1 means
        max + 1. Like PyTorch, class values are checked: the smallest and largest are realized
        and read when the op is built (outside TinyJit capture, where they are not known yet).
        Any integer dtype is accepted (PyTorch wants int64); bool is not."""
        if not self.dtype.is_int:
            raise DTypeError(f"one_hot: needs an integer tensor of class indices, got "
                            f"{self.dtype.name}")
        if isinstance(num_classes, bool) or not isinstance(num_classes, int):
            raise TypeError(f"one_hot: num_classes must be an int, got {num_classes!r}")
        if self.numel() == 0 and num_classes <= 0:
            raise ValueError(f"one_hot: cannot infer the number of classes from an empty tensor "
                             f"(shape {self.shape}); pass num_classes")
        if num_classes == 0 or num_classes < -1:  # no class value can be smaller
            raise ValueError(f"one_hot: num_classes must be positive (or -1), got {num_classes}")
        # under a transform (vmap over the labels) the values are not known yet: unchecked,
        # as under TinyJit capture and as torch.func.vmap does
        if self.numel() and not _capturing() and not traced.is_traced(self.node):
            low, high = self.min(), self.max()
            type(self).realize(low, high)
            low, high = int(low.item()), int(high.item())
            if low < 0:
                raise ArgumentError(f"one_hot: class values must be non-negative, got {low}")
            if num_classes == -1:
                num_classes = high + 1
            elif high >= num_classes:
                raise ArgumentError(f"one_hot: class values must be smaller than num_classes="
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
            raise DTypeError(f"{op}: labels must be an integer tensor, got "
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
