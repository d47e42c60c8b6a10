"""``torch.nn.functional``: the activations, losses and normalisations symgrad knows.

Each function is an op of the table or a composite of ops, so its gradient
comes from the ops' rules and matches torch's, including at kinks (see each
function's note). Class targets (``cross_entropy``, ``nll_loss``, ``one_hot``)
must have known integer values; they enter the formulas as constants.

>>> import symgrad.torch as torch
>>> F = torch.nn.functional
>>> z = torch.tensor([[0.0, 0.0]], requires_grad=True, name="z")
>>> loss = F.cross_entropy(z, torch.tensor([1]))
>>> round(loss.item(), 6)
0.693147
>>> loss.backward()
>>> z.grad.tolist()
[[0.5, -0.5]]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy

from ...core.constructors import symbols, tensor
from ...core.dims import format_shape, require_concrete
from ...core.errors import ShapeError, UnsupportedError
from ...core.tensor import Tensor, apply, wrap

_REDUCTIONS = ("mean", "sum", "none")


def _not_inplace(inplace: bool, what: str) -> None:
    if inplace:
        raise UnsupportedError(f"{what}(inplace=True) is not supported")


# ── activations ──────────────────────────────────────────────────────────────
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    _not_inplace(inplace, "relu")
    return apply("relu", input)


def sigmoid(input: Tensor) -> Tensor:
    return apply("sigmoid", input)


def tanh(input: Tensor) -> Tensor:
    return apply("tanh", input)


def softmax(input: Tensor, dim: int | None = None) -> Tensor:
    if dim is None:
        raise UnsupportedError("softmax() without dim (torch's deprecated implicit choice) is not supported; give dim")
    return input.softmax(dim)


def log_softmax(input: Tensor, dim: int | None = None) -> Tensor:
    if dim is None:
        raise UnsupportedError(
            "log_softmax() without dim (torch's deprecated implicit choice) is not supported; give dim"
        )
    return input.log_softmax(dim)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x Φ(x) with the exact (erf) Φ; ``approximate='tanh'`` is not supported."""
    if approximate != "none":
        raise UnsupportedError(f"gelu(approximate={approximate!r}) is not supported; only 'none'")
    return apply("gelu", input)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    _not_inplace(inplace, "silu")
    return apply("silu", input)


def softplus(input: Tensor, beta: Any = 1, threshold: Any = 20) -> Tensor:
    """log(1 + exp(x)). Only ``beta=1``; ``threshold`` is accepted and ignored: torch uses it only to switch to
    the linear function x for large inputs (beta·x > threshold), a numerical shortcut, not a different function."""
    if beta != 1:
        raise UnsupportedError(f"softplus(beta={beta!r}) is not supported; only beta=1")
    return apply("softplus", input)


def logsigmoid(input: Tensor) -> Tensor:
    return apply("logsigmoid", input)


def hardtanh(input: Tensor, min_val: Any = -1.0, max_val: Any = 1.0, inplace: bool = False) -> Tensor:
    """clamp(x, min_val, max_val) in value; the gradient is 0 *at* the bounds, as torch's hardtanh (unlike clamp's),
    so it is built as ``where(x <= min_val, min_val, where(x >= max_val, max_val, x))``."""
    _not_inplace(inplace, "hardtanh")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    inner = apply("where", apply("ge", input, max_val), max_val, input)
    return apply("where", apply("le", input, min_val), min_val, inner)


def leaky_relu(input: Tensor, negative_slope: Any = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, else negative_slope · x (the gradient at 0 is negative_slope, as in torch)."""
    _not_inplace(inplace, "leaky_relu")
    return apply("leaky_relu", input, negative_slope=negative_slope)


def threshold(input: Tensor, threshold: Any, value: Any, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value (the gradient at the threshold is 0, as in torch)."""
    _not_inplace(inplace, "threshold")
    return apply("threshold", input, threshold=threshold, value=value)


# ── layers ───────────────────────────────────────────────────────────────────
def linear(input: Tensor, weight: Tensor, bias: Any = None) -> Tensor:
    """``input @ weight.mT + bias`` (a 1-D weight gives ``input @ weight``)."""
    out = input @ (weight.mT if weight.ndim >= 2 else weight)
    return out if bias is None else out + bias


def layer_norm(input: Tensor, normalized_shape: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Tensor:
    """(x − mean) / sqrt(var + eps) over the last ``len(normalized_shape)`` dims, var biased (correction 0).
    Only without ``weight`` and ``bias``."""
    if weight is not None or bias is not None:
        raise UnsupportedError("layer_norm() with weight or bias is not supported; multiply and add them yourself")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or k > input.ndim or tuple(input.shape[input.ndim - k :]) != shape:
        listed = ", ".join(map(str, shape))
        raise ShapeError(
            f"Given normalized_shape=[{listed}], expected input with shape [*, {listed}], but got input of "
            f"size[{', '.join(map(str, input.shape))}]"
        )
    dims = tuple(range(input.ndim - k, input.ndim))
    centered = input - input.mean(dim=dims, keepdim=True)
    variance = (centered * centered).mean(dim=dims, keepdim=True)
    return centered / (variance + eps).sqrt()


# ── class targets ────────────────────────────────────────────────────────────
def _class_targets(target: Any, what: str, classes: Any = None) -> Tensor:
    """Class indices as an int64 tensor: an input named as the user named it, with its values when
    it has them, or symbolic (its entries are then only known in laws, where indices stay symbolic)."""
    if not isinstance(target, Tensor):
        raise TypeError(f"{what}(): target must be a Tensor, not {type(target).__name__}")
    named = target.kind == "symbol" or target.is_named_constant
    if not target.has_values():
        if target.kind != "symbol":
            raise UnsupportedError(f"{what}(): class targets must be a tensor of its own, not a computed one")
        if target.dtype == "int64":
            if getattr(target, "classes", None) is None:
                target.classes = classes
            return target
        return symbols(target.name, target.shape, dtype="int64", classes=classes)
    values = target.values()
    flat = [sympy.sympify(v) for v in values.reshape(-1)]
    if not all(v.is_Number and v.is_finite and float(v).is_integer() for v in flat):
        raise UnsupportedError(
            f"{what}(): targets must be class indices (integers); probability targets are not supported"
        )
    indices = np.array([sympy.Integer(int(v)) for v in flat], dtype=object).reshape(values.shape)
    if target.dtype == "int64" and not named:
        return target
    return tensor(indices.tolist(), name=target.name if named else None, dtype="int64")


def _check_classes(target: Tensor, classes: int, what: str) -> None:
    for v in target.values().reshape(-1):
        if not 0 <= int(v) < classes:
            raise IndexError(f"Target {int(v)} is out of bounds.")


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """The one-hot encoding of class indices (no gradient); ``num_classes=-1`` means max + 1."""
    target = _class_targets(tensor, "one_hot")
    flat = [int(v) for v in target.values().reshape(-1)]
    if num_classes == -1:
        num_classes = (max(flat) + 1) if flat else 0
    if any(v < 0 for v in flat):
        raise RuntimeError("Class values must be non-negative.")
    if any(v >= num_classes for v in flat):
        raise RuntimeError("Class values must be smaller than num_classes.")
    return apply("one_hot", target, num_classes=int(num_classes))


def _check_reduction(reduction: Any, what: str, allowed: tuple[str, ...] = _REDUCTIONS) -> str:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if reduction not in allowed:
        raise UnsupportedError(
            f"{what}(reduction={reduction!r}) is not supported; use {' or '.join(map(repr, allowed))}"
        )
    return reduction


def _class_input(input: Tensor, target: Tensor, what: str) -> Any:
    if input.ndim != 2:
        raise UnsupportedError(f"{what}() supports 2-D input (N, C) only, not shape {format_shape(input.shape)}")
    if target.ndim != 1 or target.shape[0] != input.shape[0]:
        raise ShapeError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
            f"({target.shape[0] if target.ndim else 'a 0-d tensor'})."
        )
    classes = input.shape[1]
    if target.has_values():
        (classes,) = require_concrete(input.shape[1:], what)
        _check_classes(target, classes, what)
    return classes


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
    """Mean (or sum) over the batch of logsumexp(z) − z[target], for 2-D logits and class-index targets."""
    _unsupported_options("cross_entropy", weight=weight, size_average=size_average, reduce=reduce)
    if label_smoothing:
        raise UnsupportedError("cross_entropy(label_smoothing=...) is not supported")
    _check_reduction(reduction, "cross_entropy", ("mean", "sum"))
    y = _class_targets(target, "cross_entropy", classes=input.shape[-1] if input.ndim else None)
    _class_input(input, y, "cross_entropy")
    if y.has_values() and ignore_index in [int(v) for v in y.values().reshape(-1)]:
        raise UnsupportedError("cross_entropy(): targets equal to ignore_index are not supported")
    return apply("cross_entropy", input, y, reduction=reduction)


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Any = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """−input[n, target[n]], averaged (or summed): ``-(one_hot(target, C) * input).sum() / N``."""
    _unsupported_options("nll_loss", weight=weight, size_average=size_average, reduce=reduce)
    _check_reduction(reduction, "nll_loss", ("mean", "sum"))
    y = _class_targets(target, "nll_loss", classes=input.shape[-1] if input.ndim else None)
    classes = _class_input(input, y, "nll_loss")
    if not y.has_values():
        raise UnsupportedError("nll_loss(): class targets need known values (give the target tensor values)")
    if ignore_index in [int(v) for v in y.values().reshape(-1)]:
        raise UnsupportedError("nll_loss(): targets equal to ignore_index are not supported")
    picked = -(apply("one_hot", y, num_classes=classes) * input).sum()
    return picked / input.shape[0] if reduction == "mean" else picked


# ── elementwise losses ───────────────────────────────────────────────────────
def _unsupported_options(what: str, **options: Any) -> None:
    for name, value in options.items():
        if value is not None:
            raise UnsupportedError(f"{what}({name}=...) is not supported")


def _reduce(losses: Tensor, reduction: Any, what: str) -> Tensor:
    reduction = _check_reduction(reduction, what)
    if reduction == "mean":
        return losses.mean()
    return losses.sum() if reduction == "sum" else losses


def mse_loss(
    input: Tensor,
    target: Any,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    weight: Any = None,
) -> Tensor:
    """(input − target)², averaged, summed or kept (reduction 'none')."""
    _unsupported_options("mse_loss", size_average=size_average, reduce=reduce, weight=weight)
    return _reduce((input - target) ** 2, reduction, "mse_loss")


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Any,
    weight: Any = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    pos_weight: Any = None,
) -> Tensor:
    """softplus(x) − target · x (= −[t log σ(x) + (1 − t) log(1 − σ(x))]), averaged, summed or kept."""
    _unsupported_options(
        "binary_cross_entropy_with_logits",
        weight=weight,
        size_average=size_average,
        reduce=reduce,
        pos_weight=pos_weight,
    )
    return _reduce(apply("softplus", input) - wrap(target) * input, reduction, "binary_cross_entropy_with_logits")


def binary_cross_entropy(
    input: Tensor,
    target: Any,
    weight: Any = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """−[t log p + (1 − t) log(1 − p)], averaged, summed or kept. torch clamps each log at −100 (a numerical
    guard for p = 0 or 1); symgrad does not, so it differs from torch only where p is exactly 0 or 1."""
    _unsupported_options("binary_cross_entropy", weight=weight, size_average=size_average, reduce=reduce)
    t = wrap(target)
    losses = -(t * apply("log", input) + (1 - t) * apply("log", 1 - input))
    return _reduce(losses, reduction, "binary_cross_entropy")


__all__ = [
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "gelu", "hardtanh", "layer_norm",
    "leaky_relu", "linear", "log_softmax", "logsigmoid", "mse_loss", "nll_loss", "one_hot", "relu", "sigmoid",
    "silu", "softmax", "softplus", "tanh", "threshold",
]  # fmt: skip
