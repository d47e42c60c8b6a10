"""Reductions and ops along a dimension: sums, means, maxima, norms, variance, the softmax family, cumsum."""

from __future__ import annotations

import math as _math
from typing import Any

from ..core.dims import normalize_dims as _normalize_dims
from ..core.tensor import Tensor
from .pointwise import maximum


def sum(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return input.sum(dim=dim, keepdim=keepdim)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return input.mean(dim=dim, keepdim=keepdim)


def softmax(input: Tensor, dim: int) -> Tensor:
    return input.softmax(dim)


def log_softmax(input: Tensor, dim: int) -> Tensor:
    return input.log_softmax(dim)


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    return input.logsumexp(dim, keepdim=keepdim)


def amax(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The largest entry over ``dim`` (all dims for None or ``()``); ties share the gradient evenly, as in torch."""
    return input.amax(dim, keepdim=keepdim)


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """``max(x)`` (ties share the gradient), ``max(x, dim)`` -> (values, indices) with the gradient going to the
    first maximal entry (``indices`` is None: symgrad does not compute it), or ``max(x, other)`` = ``maximum``."""
    if isinstance(dim, Tensor):
        if keepdim:
            raise TypeError("max(input, other) takes no keepdim")
        return maximum(input, dim)
    return input.max(dim, keepdim=keepdim)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Tensor:
    """The p-norm over ``dim`` (all dims by default): p = 2 or 'fro' (gradient 0 at 0, as torch), 1 or inf."""
    if p == _math.inf:
        return input.abs().amax(_normalize_dims(dim, input.ndim), keepdim=keepdim)
    if p is None:
        p = 2
    return input.norm(p, dim=dim, keepdim=keepdim)


def _spread_arguments(dim: Any, unbiased: Any, correction: Any, what: str) -> tuple[Any, Any]:
    """torch's var/std signatures: ``(x)``, ``(x, unbiased)``, ``(x, dim, unbiased, keepdim)`` or ``correction=``."""
    if isinstance(dim, bool):  # torch.var(input, unbiased)
        if unbiased is not None:
            raise TypeError(f"{what}(): unbiased given twice")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{what}(): cannot specify both unbiased and correction")
    if unbiased is not None:
        correction = int(bool(unbiased))
    return dim, 1 if correction is None else correction


def var(
    input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None
) -> Tensor:
    """torch.var: ``var(x)``, ``var(x, dim, keepdim=..., correction=...)`` and the old ``unbiased`` forms."""
    dim, correction = _spread_arguments(dim, unbiased, correction, "var")
    return input.var(dim, correction=correction, keepdim=keepdim)


def std(
    input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None
) -> Tensor:
    """torch.std (same arguments as :func:`var`); its gradient is 0 where it is 0, as torch's."""
    dim, correction = _spread_arguments(dim, unbiased, correction, "std")
    return input.std(dim, correction=correction, keepdim=keepdim)


def cumsum(input: Tensor, dim: int) -> Tensor:
    return input.cumsum(dim)


__all__ = ["amax", "cumsum", "log_softmax", "logsumexp", "max", "mean", "norm", "softmax", "std", "sum", "var"]
