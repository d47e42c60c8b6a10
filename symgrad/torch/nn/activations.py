"""Activations of ``torch.nn.functional``, with torch's gradients at their kinks, and dropout.

Each is an op of the table (``relu``, ``elu``, ``hardswish``...) or a composite of ops
whose gradient is torch's: ``softsign`` is ``x / (1 + |x|)`` as in torch, ``hardtanh``
blocks the gradient at its bounds, ``softplus`` switches to ``x`` above its threshold.

>>> import symgrad.torch as torch
>>> F = torch.nn.functional
>>> x = torch.tensor([-3.0, 0.0, 3.0], requires_grad=True, name="x")
>>> F.hardswish(x).sum().backward()
>>> x.grad.tolist()
[0.0, 0.5, 1.0]
"""

from __future__ import annotations

import itertools
from typing import Any

from ...core.dims import normalize_dim
from ...core.errors import TorchRuntimeError, TorchValueError, UnsupportedError
from ...core.tensor import Tensor, apply
from ...ops.draws import Drawn
from ..creation import bernoulli_noise


def _not_inplace(inplace: bool, what: str) -> None:
    if inplace:
        raise UnsupportedError(f"{what}(inplace=True) is not supported; use the out-of-place {what}")


def _softmax_dim(input: Tensor, dim: int | None, what: str) -> int:
    if dim is None:
        raise UnsupportedError(f"{what}() without dim (torch's deprecated implicit choice) is not supported; give dim")
    return normalize_dim(dim, input.ndim)


def _no_dtype(dtype: Any, what: str) -> None:
    if dtype is not None:
        raise UnsupportedError(f"{what}(dtype=...) is not supported; cast the input first")


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0); the gradient at 0 is 0, as torch's."""
    _not_inplace(inplace, "relu")
    return apply("relu", input)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6): torch's ``hardtanh(x, 0, 6)``, whose gradient is 0 at 0 and at 6."""
    return hardtanh(input, 0.0, 6.0, inplace)


def sigmoid(input: Tensor) -> Tensor:
    return apply("sigmoid", input)


def tanh(input: Tensor) -> Tensor:
    return apply("tanh", input)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    _no_dtype(dtype, "softmax")
    return input.softmax(_softmax_dim(input, dim, "softmax"))


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    _no_dtype(dtype, "log_softmax")
    return input.log_softmax(_softmax_dim(input, dim, "log_softmax"))


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """softmax(−x) along ``dim``, as torch computes it."""
    _no_dtype(dtype, "softmin")
    return (-input).softmax(_softmax_dim(input, dim, "softmin"))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x Φ(x) with the exact (erf) Φ, or torch's tanh approximation with ``approximate='tanh'``."""
    if approximate not in ("none", "tanh"):
        raise TorchRuntimeError("approximate argument must be either none or tanh.")
    return apply("gelu" if approximate == "none" else "gelu_tanh", input)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    _not_inplace(inplace, "silu")
    return apply("silu", input)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha (exp(x) − 1); at 0 the gradient is alpha, as torch's."""
    _not_inplace(inplace, "elu")
    return apply("elu", input, alpha=alpha)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale · elu(x, alpha) with torch's float64 constants."""
    _not_inplace(inplace, "selu")
    return apply("selu", input)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha (exp(x / alpha) − 1)."""
    _not_inplace(inplace, "celu")
    if alpha == 0:
        raise TorchRuntimeError("ZeroDivisionError")
    return apply("celu", input, alpha=alpha)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x · tanh(softplus(x))."""
    _not_inplace(inplace, "mish")
    return apply("mish", input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x · relu6(x + 3) / 6; the gradient at −3 is 0 and at 3 is 1, as torch's."""
    _not_inplace(inplace, "hardswish")
    return apply("hardswish", input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6; the gradient is torch's: 0 at ±3 and beyond, and inside (−3, 3) the float32 value of 1/6
    that torch's backward multiplies by (1/6 within 3e-8)."""
    _not_inplace(inplace, "hardsigmoid")
    return apply("hardsigmoid", input)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta · x)) / beta, and x itself where beta · x > threshold (torch's rule, for the value and
    the gradient). With beta = 1 and threshold ≥ 20 it is the ``softplus`` row, whose numbers switch at 20: above
    20 the two differ by less than exp(−20) ≈ 2e-9."""
    if beta == 1 and threshold >= 20:
        return apply("softplus", input)
    scaled = input * beta if beta != 1 else input
    smooth = apply("softplus", scaled)
    return apply("where", apply("gt", scaled, threshold), input, smooth / beta if beta != 1 else smooth)


def logsigmoid(input: Tensor) -> Tensor:
    return apply("logsigmoid", input)


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|), the composite torch uses (the gradient of |x| at 0 is 0)."""
    return input / (input.abs() + 1)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """clamp(x, min_val, max_val) in value; the gradient is 0 at and beyond the bounds, else 1, as torch's hardtanh
    (unlike clamp, which passes it at the bounds)."""
    _not_inplace(inplace, "hardtanh")
    if min_val > max_val:
        raise TorchValueError("min_val cannot be greater than max_val")
    return apply("hardtanh", input, min_val=min_val, max_val=max_val)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, else negative_slope · x (the gradient at 0 is negative_slope, as in torch)."""
    _not_inplace(inplace, "leaky_relu")
    return apply("leaky_relu", input, negative_slope=negative_slope)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value (the gradient at the threshold is 0, as in torch)."""
    _not_inplace(inplace, "threshold")
    return apply("threshold", input, threshold=threshold, value=value)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """The input itself when ``training=False`` or ``p=0``, zeros when ``p=1``; with 0 < p < 1 in training,
    ``input * noise`` with noise ``bernoulli(1 - p) / (1 - p)`` drawn as torch draws it (from the generator of
    :func:`symgrad.torch.manual_seed` at concrete sizes; see :mod:`symgrad.ops.draws`)."""
    if p < 0.0 or p > 1.0:
        raise TorchValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    _not_inplace(inplace, "dropout")
    if not training or p == 0:
        return input
    if p == 1:
        return input * 0.0
    return input * dropout_noise(input, p, bernoulli_noise(input.shape, input.dtype, p))


def dropout_noise(like: Tensor, p: float, values: Any = None, *, key: int | None = None) -> Tensor:
    """The noise a dropout of ``like`` multiplies by: a new draw, numbered ``key`` (by default in the order of
    the draws), with its numbers ``values`` when they are known."""
    return apply("dropout_noise", like, p=float(p), key=next(_draws) if key is None else key, drawn=Drawn(values))


_draws = itertools.count(1)


__all__ = [
    "celu", "dropout", "elu", "gelu", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu", "log_softmax",
    "logsigmoid", "mish", "relu", "relu6", "selu", "sigmoid", "silu", "softmax", "softmin", "softplus", "softsign",
    "tanh", "threshold",
]  # fmt: skip
