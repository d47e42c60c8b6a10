"""Losses of ``torch.nn.functional``: regression losses, binary and multi-class cross-entropy, KL divergence.

Each is a composite of ops, or the ``cross_entropy`` row (class targets, no options: the fast path with a
closed-form gradient), so its gradient is torch's: ``l1_loss`` has gradient 0 where input equals target,
``binary_cross_entropy`` clamps its logs at −100 as torch does. Class targets (``cross_entropy``, ``nll_loss``)
enter as integer constants; with known values, ignored targets (``ignore_index``) are left out as torch does.

>>> import symgrad.torch as torch
>>> F = torch.nn.functional
>>> z = torch.tensor([[0.0, 0.0], [1.0, -1.0]], requires_grad=True, name="z")
>>> y = torch.tensor([1, -100])
>>> F.cross_entropy(z, y).backward()
>>> z.grad.tolist()
[[0.5, -0.5], [0.0, 0.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.constructors import full_like, tensor
from ...core.dtypes import is_floating
from ...core.errors import ShapeError, TorchRuntimeError, TorchValueError, UnsupportedError
from ...core.tensor import Tensor, apply, wrap
from .targets import class_targets, known_classes

_REDUCTIONS = ("mean", "sum", "none")


def _size(shape: tuple) -> str:
    return f"torch.Size([{', '.join(map(str, shape))}])"


def legacy_reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    """torch's ``_Reduction.legacy_get_string``: the deprecated ``size_average`` and ``reduce``, when given, decide."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "mean" if size_average and reduce else ("sum" if reduce else "none")


def _check_reduction(reduction: Any, allowed: tuple[str, ...] = _REDUCTIONS) -> str:
    if reduction not in allowed:
        raise TorchValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(losses: Tensor, reduction: str) -> Tensor:
    reduction = _check_reduction(reduction)
    if reduction == "mean":
        return losses.mean()
    return losses.sum() if reduction == "sum" else losses


def _weighted_reduce(losses: Tensor, weight: Any, reduction: str, mean_by_weight: bool) -> Tensor:
    """``losses * weight`` reduced; torch's weighted mean is Σ w·loss / Σ w (l1, mse) or the plain mean (huber)."""
    if weight is None:
        return _reduce(losses, reduction)
    if tuple(weight.shape) != tuple(losses.shape):
        raise TorchValueError("Weights and input must have the same size.")
    weighted = losses * weight
    if _check_reduction(reduction) == "mean" and mean_by_weight:
        return weighted.sum() / weight.sum()
    return _reduce(weighted, reduction)


# ── regression losses ────────────────────────────────────────────────────────
def mse_loss(
    input: Tensor,
    target: Any,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    weight: Any = None,
) -> Tensor:
    """(input − target)², averaged, summed or kept (reduction 'none'); with ``weight``, Σ w·loss / Σ w."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _weighted_reduce((input - target) ** 2, weight, reduction, mean_by_weight=True)


def l1_loss(
    input: Tensor,
    target: Any,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    weight: Any = None,
) -> Tensor:
    """|input − target| (gradient 0 where they are equal, as torch's); with ``weight``, Σ w·loss / Σ w."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _weighted_reduce((input - target).abs(), weight, reduction, mean_by_weight=True)


def smooth_l1_loss(
    input: Tensor, target: Any, size_average: Any = None, reduce: Any = None, reduction: str = "mean", beta: float = 1.0
) -> Tensor:
    """0.5 z² / beta where z = |input − target| < beta, else z − 0.5 beta; ``beta=0`` is the L1 loss, as in torch."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise TorchRuntimeError("smooth_l1_loss does not support negative values for beta.")
    z = (input - target).abs()
    if beta == 0:
        return _reduce(z, reduction)
    return _reduce(apply("where", apply("lt", z, beta), 0.5 * z * z / beta, z - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target: Any, reduction: str = "mean", delta: float = 1.0, weight: Any = None) -> Tensor:
    """0.5 z² where z = |input − target| < delta, else delta (z − 0.5 delta); with ``weight``, the mean of w·loss."""
    z = (input - target).abs()
    losses = apply("where", apply("lt", z, delta), 0.5 * z * z, delta * (z - 0.5 * delta))
    return _weighted_reduce(losses, weight, reduction, mean_by_weight=False)


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """target · (log target − input), with 0 where target is 0 (torch's xlogy); ``log_target=True`` takes
    exp(target) · (target − input). 'batchmean' divides the sum by the batch size."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, (*_REDUCTIONS, "batchmean"))
    t = wrap(target)
    if log_target:
        losses = apply("exp", t) * (t - input)
    else:
        losses = apply("where", apply("eq", t, 0), 0.0, t * apply("log", t)) - t * input
    if reduction == "batchmean":
        total = losses.sum()
        return total / input.shape[0] if input.ndim else total
    return _reduce(losses, reduction)


def gaussian_nll_loss(
    input: Tensor, target: Any, var: Any, full: bool = False, eps: float = 1e-6, reduction: str = "mean"
) -> Tensor:
    """0.5 · (log v + (input − target)² / v) with v = max(var, eps) (+ 0.5 · log 2π with ``full``). As in torch,
    the clamp at eps is invisible to the gradient (torch clamps under no_grad), and a ``var`` one dim short of
    ``input``, or with one size-1 dim, holds one variance for several entries. A negative var is torch's
    ValueError; at symbolic values the law holds where var ≥ 0."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise TorchValueError("var has negative entry/entries")
        var = full_like(input, float(var))
    var = wrap(var)
    if var.has_values() and bool(np.any(np.asarray(var.tolist(), dtype=float) < 0)):
        raise TorchValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(y for x, y in zip(input.shape, var.shape) if x != y) == 1):
            raise TorchValueError("var is of incorrect size")
    _check_reduction(reduction)
    # max(var, eps) in value, var in gradient: var − var is an exact 0 that carries var's gradient
    clamped = apply("where", apply("ge", var, eps), var, eps + (var - var.detach()))
    losses = 0.5 * (apply("log", clamped) + (input - target) ** 2 / clamped)
    if full:
        losses = losses + 0.5 * float(np.log(2 * np.pi))
    return _reduce(losses, reduction)


# ── binary cross-entropy ─────────────────────────────────────────────────────
def binary_cross_entropy(
    input: Tensor,
    target: Any,
    weight: Any = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """−w [t · max(log p, −100) + (1 − t) · max(log(1 − p), −100)], torch's clamp included; the gradient is torch's
    (p − t) / max(p (1 − p), 1e-12)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    t = wrap(target, input)
    if tuple(t.shape) != tuple(input.shape):
        raise TorchValueError(
            f"Using a target size ({_size(t.shape)}) that is different to the input size ({_size(input.shape)}) is "
            "deprecated. Please ensure they have the same size."
        )
    if input.has_values() and any(not 0 <= float(v) <= 1 for v in input.values().reshape(-1)):
        raise TorchRuntimeError("all elements of input should be between 0 and 1")
    losses = apply("binary_cross_entropy", input, t)
    return _reduce(losses if weight is None else losses * weight, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Any,
    weight: Any = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    pos_weight: Any = None,
) -> Tensor:
    """l · softplus(x) − p t x with l = (p − 1) t + 1 (p = pos_weight, 1 by default): torch's
    (1 − t) x − l · log σ(x), whose gradient l σ(x) − p t is torch's backward; times ``weight``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    t = wrap(target, input)
    if tuple(t.shape) != tuple(input.shape):
        raise TorchValueError(f"Target size ({_size(t.shape)}) must be the same as input size ({_size(input.shape)})")
    if pos_weight is None:
        losses = apply("binary_cross_entropy_with_logits", input, t)
    else:
        log_weight = (pos_weight - 1) * t + 1
        losses = log_weight * apply("softplus", input) - pos_weight * t * input
    return _reduce(losses if weight is None else losses * weight, reduction)


# ── multi-class cross-entropy ────────────────────────────────────────────────
def _class_dim(input: Tensor, what: str) -> int:
    if input.ndim == 0:
        raise TorchRuntimeError(f"{what}(): input tensor should be 1D or more, but got a 0-d tensor")
    return 0 if input.ndim == 1 else 1


def _check_target_shape(input: Tensor, target: Tensor) -> None:
    """Class targets are shaped as the input without its class dim (dim 1, or dim 0 of an unbatched input)."""
    expected = tuple(input.shape[:1] + input.shape[2:]) if input.ndim > 1 else ()
    if tuple(target.shape) == expected:
        return
    if input.ndim == 2 and target.ndim == 1:
        raise TorchValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({target.shape[0]})."
        )
    if input.ndim == 1:
        raise TorchValueError(
            f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0] if target.ndim else 0}"
        )
    raise ShapeError(
        f"Expected target size [{', '.join(map(str, expected))}], got [{', '.join(map(str, target.shape))}]"
    )


def _class_axis_last_to(t: Tensor, class_dim: int) -> Tensor:
    """Move the trailing class axis of a one-hot tensor (target shape + (C,)) to ``class_dim``."""
    if class_dim == t.ndim - 1:
        return t
    order = list(range(t.ndim - 1))
    order.insert(class_dim, t.ndim - 1)
    return t.permute(*order)


def _channel_view(weight: Tensor, ndim: int, class_dim: int) -> Tensor:
    return weight.reshape(1, weight.shape[0], *([1] * (ndim - 2))) if class_dim == 1 and ndim > 2 else weight


def _check_weight(weight: Any, classes: Any) -> None:
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != classes):
        raise TorchRuntimeError(
            f"weight tensor should be defined either for all {classes} classes or no classes but got weight tensor "
            f"of shape: [{', '.join(map(str, weight.shape))}]"
        )


class _Picked:
    """What a loss reads at each target position: the kept mask, the safe targets and their class weights."""

    def __init__(self, input: Tensor, y: Tensor, weight: Any, ignore_index: int, class_dim: int) -> None:
        self.class_dim = class_dim
        classes = input.shape[class_dim]
        self.keep: Tensor | None = None  # a boolean constant, where some targets are ignored
        self.kept = None  # how many are kept, when the targets are known
        if not y.has_values() and ignore_index != -100:  # -100 is out of every class range, so no target is it
            # which targets are ignored is known entry by entry: a mask of symbols, and the targets 0 where it is
            self.keep = y.ne(ignore_index)
            y = apply("where", self.keep, y, 0)
        if y.has_values():
            values = [int(v) for v in y.values().reshape(-1)]
            kept = [v != ignore_index for v in values]
            known_classes([v for v, k in zip(values, kept) if k], classes)
            self.kept = sum(kept)
            if not all(kept):
                self.keep = tensor(np.array(kept, dtype=int).reshape(y.shape).tolist(), dtype="bool")
                safe = [v if k else 0 for v, k in zip(values, kept)]
                y = tensor(np.array(safe, dtype=int).reshape(y.shape).tolist(), dtype="int64")
        self.one_hot = _class_axis_last_to(apply("one_hot", y, num_classes=classes), class_dim)
        self.weight = None if weight is None else _channel_view(weight, input.ndim, class_dim)
        self.target_weight = None if weight is None else (self.one_hot * self.weight).sum(dim=class_dim)

    def masked(self, losses: Tensor) -> Tensor:
        """0 at ignored targets (not loss · 0, which is nan where the loss is infinite)."""
        return losses if self.keep is None else apply("where", self.keep, losses, 0.0)

    def mean(self, losses: Tensor) -> Tensor:
        """torch's mean: Σ losses / Σ weight[target] over the kept targets (their count without weights)."""
        if self.target_weight is not None:
            return losses.sum() / self.masked(self.target_weight).sum()
        if self.keep is None:
            return losses.mean()
        return losses.sum() / (self.kept if self.kept is not None else self.keep.to(losses.dtype).sum())


def _nll(logp: Tensor, picked: _Picked, reduction: str) -> Tensor:
    losses = -(picked.one_hot * logp).sum(dim=picked.class_dim)
    if picked.target_weight is not None:
        losses = losses * picked.target_weight
    losses = picked.masked(losses)
    if reduction == "none":
        return losses
    return picked.mean(losses) if reduction == "mean" else losses.sum()


def _takes_the_row(input: Tensor, weight: Any, reduction: str, picked: _Picked) -> bool:
    """Whether a classification loss is the op-table row of its name: 2-D input, no class weights, a reduction,
    and no ignored target."""
    return input.ndim == 2 and weight is None and reduction != "none" and picked.keep is None


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Any = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """−weight[t] · input[n, t] at each target t (0 where t == ignore_index), summed, kept, or averaged by
    Σ weight[t] over the kept targets (nan when every target is ignored, as torch)."""
    reduction = _check_reduction(legacy_reduction(size_average, reduce, reduction))
    class_dim = _class_dim(input, "nll_loss")
    y = class_targets(target, "nll_loss", classes=input.shape[class_dim])
    _check_target_shape(input, y)
    _check_weight(weight, input.shape[class_dim])
    picked = _Picked(input, y, weight, ignore_index, class_dim)
    if _takes_the_row(input, weight, reduction, picked):
        return apply("nll_loss", input, y, reduction=reduction)  # a row, as cross_entropy: emitted code fuses them
    return _nll(input, picked, reduction)


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Any = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """log_softmax over the class dim, then nll_loss (class targets) or −Σ target · log_softmax (probability
    targets, a float target shaped as the input), with torch's ``weight``, ``ignore_index`` and
    ``label_smoothing``. 2-D logits with class targets and no options take the ``cross_entropy`` row."""
    reduction = _check_reduction(legacy_reduction(size_average, reduce, reduction))
    if not 0.0 <= label_smoothing <= 1.0:
        raise TorchRuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = _class_dim(input, "cross_entropy")
    classes = input.shape[class_dim]
    _check_weight(weight, classes)
    if isinstance(target, Tensor) and is_floating(target.dtype) and tuple(target.shape) == tuple(input.shape):
        return _probability_cross_entropy(input, target, weight, reduction, label_smoothing, class_dim)
    y = class_targets(target, "cross_entropy", classes=classes)
    _check_target_shape(input, y)
    picked = _Picked(input, y, weight, ignore_index, class_dim)
    if not label_smoothing and _takes_the_row(input, weight, reduction, picked):
        return apply("cross_entropy", input, y, reduction=reduction)
    logp = input.log_softmax(class_dim)
    nll = _nll(logp, picked, reduction)
    if not label_smoothing:
        return nll
    smooth = -((logp * picked.weight) if picked.weight is not None else logp).sum(dim=class_dim)
    smooth = picked.masked(smooth)
    if reduction == "mean":
        smooth = picked.mean(smooth)
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / classes)


def _probability_cross_entropy(
    input: Tensor, target: Tensor, weight: Any, reduction: str, label_smoothing: float, class_dim: int
) -> Tensor:
    """−Σ_c weight_c · target_c · log_softmax(input)_c; the mean divides by the number of samples (numel / C)."""
    classes = input.shape[class_dim]
    logp = input.log_softmax(class_dim)
    t = target * (1 - label_smoothing) + label_smoothing / classes if label_smoothing else target
    products = logp * t
    if weight is not None:
        products = products * _channel_view(weight, input.ndim, class_dim)
    if reduction == "none":
        return -products.sum(dim=class_dim)
    total = -products.sum()
    if reduction == "sum":
        return total
    samples = input.numel() / classes if input.numel() != 0 else 0
    return total / samples


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """The one-hot encoding of class indices (no gradient); ``num_classes=-1`` means max + 1."""
    target = class_targets(tensor, "one_hot")
    if not target.has_values():  # symbolic targets (a symbolic batch): torch's kernel checks them when it runs
        if num_classes == -1:
            raise UnsupportedError(
                "one_hot without num_classes takes its class count from the targets' values, which symbolic targets "
                "do not have: leave the targets' sizes out of the symbolic sizes"
            )
        return apply("one_hot", target, num_classes=num_classes)
    flat = [int(v) for v in target.values().reshape(-1)]
    if num_classes == -1:
        num_classes = (max(flat) + 1) if flat else 0
    if any(v < 0 for v in flat):
        raise TorchRuntimeError("Class values must be non-negative.")
    if isinstance(num_classes, int):  # a symbolic number of classes (p.shape[1]): torch checks it when it runs
        if any(v >= num_classes for v in flat):
            raise TorchRuntimeError("Class values must be smaller than num_classes.")
    return apply("one_hot", target, num_classes=num_classes)


__all__ = [
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "gaussian_nll_loss", "huber_loss",
    "kl_div", "l1_loss",
    "mse_loss", "nll_loss", "one_hot", "smooth_l1_loss",
]  # fmt: skip
