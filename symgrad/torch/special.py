"""``torch.special``: the special functions, as torch names them there.

Most are the rows' own spellings (``torch.special.i0e``, registered beside their rows in
:mod:`symgrad.ops.math_functions`); the rest are torch's aliases of functions symgrad has under
their ``torch`` names (``expit`` is ``sigmoid``, ``psi`` is ``digamma``).

>>> import symgrad.torch as torch
>>> x = torch.tensor([0.0, 2.0], name="x")
>>> torch.special.expit(x).tolist() == torch.sigmoid(x).tolist()
True
"""

from __future__ import annotations

from typing import Any

from ..core.registry import SPELLINGS
from ..core.tensor import Tensor, apply
from . import pointwise, reductions
from .nn import functional as _functional


def multigammaln(input: Tensor, p: int) -> Tensor:
    """torch.special.multigammaln: :func:`symgrad.torch.mvlgamma`."""
    return pointwise.mvlgamma(input, p)


def polygamma(n: int, input: Tensor) -> Tensor:
    return pointwise.polygamma(n, input)


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    return pointwise.logit(input, eps)


def round(input: Tensor, decimals: int = 0) -> Tensor:
    return pointwise.round(input, decimals=decimals)


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    return reductions.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    return reductions.log_softmax(input, dim, dtype)


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    return reductions.logsumexp(input, dim, keepdim)


def log1p(input: Tensor) -> Tensor:
    return apply("log1p", input)


_ALIASES = {
    "expit": pointwise.sigmoid, "erf": pointwise.erf, "erfc": pointwise.erfc, "expm1": pointwise.expm1,
    "exp2": pointwise.exp2, "xlogy": pointwise.xlogy, "gammaln": pointwise.lgamma,
    "log_sigmoid": _functional.logsigmoid,
}  # fmt: skip
globals().update(_ALIASES)
_SPELLED = {name: build for name, build in sorted(SPELLINGS.get("torch.special", {}).items()) if name not in globals()}
globals().update(_SPELLED)

__all__ = [
    "log1p", "log_softmax", "logit", "logsumexp", "multigammaln", "polygamma", "round", "softmax",
    *_ALIASES, *_SPELLED,
]  # fmt: skip
