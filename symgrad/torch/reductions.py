"""Reductions and ops along a dimension: sums, products, extrema and their indices, norms, variance, the
softmax family, cumulative sums and products, topk.

>>> import symgrad.torch as torch
>>> x = torch.tensor([[1.0, 5.0, 2.0], [4.0, 0.0, 3.0]], name="x")
>>> torch.max(x, 1).indices.tolist(), torch.prod(x, 1).tolist(), torch.topk(x, 2).values.tolist()
([1, 0], [10.0, 0.0], [[5.0, 2.0], [4.0, 3.0]])
"""

from __future__ import annotations

from typing import Any

from ..core.errors import TorchRuntimeError, TorchTypeError
from ..core.errors import UnsupportedError as _UnsupportedError
from ..core.methods import relabel as _relabel
from ..core.tensor import Tensor
from ..core.tensor import apply as _apply


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, **aliases: Any) -> Tensor:
    return input.sum(dim, keepdim, dtype=dtype, **aliases)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, **aliases: Any) -> Tensor:
    return input.mean(dim, keepdim, dtype=dtype, **aliases)


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The product of all entries, or over one ``dim``; its gradient is exact where entries are 0, as torch's."""
    return input.prod(dim, keepdim=keepdim, dtype=dtype)


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """exp(x) / Σ exp(x) over ``dim``; its numbers subtract the maximum first, as torch's (no overflow)."""
    return input.softmax(dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    return input.log_softmax(dim, dtype=dtype)


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    return input.logsumexp(dim, keepdim=keepdim)


def amax(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The largest entry over ``dim`` (all dims for None or ``()``); ties share the gradient evenly, as in torch."""
    return input.amax(dim, keepdim=keepdim)


def amin(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The smallest entry over ``dim``; ties share the gradient evenly, as in torch."""
    return input.amin(() if dim is None else dim, keepdim=keepdim)


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """``max(x)`` (ties share the gradient), ``max(x, dim)`` -> (values, int64 indices) with the gradient going
    to the first maximal entry, or ``max(x, other)`` = ``maximum``."""
    if isinstance(dim, Tensor) and keepdim:
        raise TorchTypeError("max(input, other) takes no keepdim")
    return input.max(dim, keepdim=keepdim)


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """``min(x)``, ``min(x, dim)`` -> (values, indices), or ``min(x, other)`` = ``minimum``, as :func:`max`."""
    if isinstance(dim, Tensor) and keepdim:
        raise TorchTypeError("min(input, other) takes no keepdim")
    return input.min(dim, keepdim=keepdim)


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The int64 index of the first maximum along ``dim`` (of the flattened input when ``dim`` is None)."""
    return input.argmax(dim, keepdim=keepdim)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    return input.argmin(dim, keepdim=keepdim)


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
    """(values, indices) of the k largest (or smallest) entries along ``dim``, sorted; the input needs values,
    since which entries they are depends on them."""
    return input.topk(k, dim, largest=largest, sorted=sorted)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """The p-norm over ``dim`` (all dims by default): 'fro', any number p (0 counts the non-zero entries), inf,
    -inf, with torch's gradients (0 where the norm is 0, ties of ±inf shared). 'nuc' needs singular values."""
    if p == "nuc":
        raise _UnsupportedError("norm with p='nuc' needs singular values, which symgrad does not compute")
    return _relabel(input.norm(2 if p is None else p, dim=dim, keepdim=keepdim), dtype)


def _spread_arguments(dim: Any, unbiased: Any, correction: Any, what: str) -> tuple[Any, Any]:
    """torch's var/std signatures: ``(x)``, ``(x, unbiased)``, ``(x, dim, unbiased, keepdim)`` or ``correction=``."""
    if isinstance(dim, bool):  # torch.var(input, unbiased)
        if unbiased is not None:
            raise TorchTypeError(f"{what}(): unbiased given twice")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TorchRuntimeError(f"{what}(): cannot specify both unbiased and correction")
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


def var_mean(
    input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None
) -> Any:
    """(var, mean), with :func:`var`'s arguments, computed as torch's ``var_mean`` computes them (Welford's updates:
    equal entries have a variance of exactly 0 and their own value as mean, where ``var`` and ``mean`` may not)."""
    return _with_mean("var", input, dim, unbiased, keepdim, correction)


def std_mean(
    input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None
) -> Any:
    """(std, mean), with :func:`std`'s arguments, computed as torch's ``std_mean`` computes them (see
    :func:`var_mean`)."""
    return _with_mean("std", input, dim, unbiased, keepdim, correction)


def _with_mean(name: str, input: Tensor, dim: Any, unbiased: Any, keepdim: bool, correction: Any) -> tuple:
    """``var_mean``'s or ``std_mean``'s pair: the spread (``name``) and the mean, both from Welford's updates."""
    dim, correction = _spread_arguments(dim, unbiased, correction, f"{name}_mean")
    spread = getattr(input, name)(dim, correction=correction, keepdim=keepdim)  # its checks and attributes
    spread = _apply(name, input, **{**spread.attrs, "welford": True})
    return spread, _apply("welford_mean", input, dim=spread.attrs["dim"], keepdim=bool(keepdim))


def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    return input.cumsum(dim, dtype=dtype)


def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running products along ``dim``; the gradient is exact where entries are 0, as torch's."""
    return input.cumprod(dim, dtype=dtype)


__all__ = [
    "amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logsumexp", "max", "mean", "min",
    "norm", "prod", "softmax", "std", "std_mean", "sum", "topk", "var", "var_mean",
]  # fmt: skip
