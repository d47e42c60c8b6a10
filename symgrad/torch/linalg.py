"""``torch.linalg`` as symgrad mirrors it: inverse, determinants and norms of small square matrices.

>>> import symgrad.torch as torch
>>> A = torch.tensor([[2.0, 1.0], [0.0, 4.0]], requires_grad=True, name="A")
>>> torch.linalg.det(A).tolist()
8.0
>>> torch.linalg.slogdet(A).logabsdet.backward()
>>> A.grad.tolist()
[[0.5, 0.0], [-0.125, 0.25]]
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

from ..core.dims import normalize_dims
from ..core.errors import ShapeError, UnsupportedError
from ..core.tensor import Tensor, apply

slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])  # torch.return_types.linalg_slogdet's fields


def inv(A: Tensor) -> Tensor:
    return apply("inv", A)


def det(A: Tensor) -> Tensor:
    return apply("det", A)


def slogdet(A: Tensor) -> Any:
    """(sign, logabsdet) of det(A): ``sign`` has no gradient (as in torch); ``logabsdet`` has A⁻ᵀ."""
    return slogdet_result(apply("sign", apply("det", A)), apply("logabsdet", A))


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The ord-norm over ``dim`` (all entries by default), for ord 2 (gradient 0 at 0, as torch), 1 and inf."""
    axes = normalize_dims(dim, x.ndim)
    if ord == 2:
        return apply("norm", x, dim=axes, keepdim=bool(keepdim))
    if ord == 1:
        return x.abs().sum(dim=axes, keepdim=keepdim)
    if ord == math.inf:
        return x.abs().amax(axes, keepdim=keepdim)
    raise UnsupportedError(f"vector_norm with ord={ord!r} is not supported (use 2, 1 or inf)")


def matrix_norm(A: Tensor, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False) -> Tensor:
    """The Frobenius norm over the two dims ``dim`` (the only ord supported)."""
    if A.ndim < 2:
        raise ShapeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions. (it has {A.ndim})")
    axes = normalize_dims(dim, A.ndim)
    if len(axes) != 2:
        raise ShapeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    if ord != "fro":
        raise UnsupportedError(f"matrix_norm with ord={ord!r} is not supported (use 'fro')")
    return apply("norm", A, dim=axes, keepdim=bool(keepdim))


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False) -> Tensor:
    """torch.linalg.norm for ord None (2-norm of the flattened entries, or over ``dim``) and 'fro'."""
    if ord is None:
        return vector_norm(A, 2, dim=dim, keepdim=keepdim)
    if ord == "fro":
        return matrix_norm(A, "fro", dim=(-2, -1) if dim is None else dim, keepdim=keepdim)
    if isinstance(dim, int) or (dim is None and A.ndim == 1) or (isinstance(dim, (tuple, list)) and len(dim) == 1):
        return vector_norm(A, ord, dim=dim, keepdim=keepdim)
    raise UnsupportedError(f"linalg.norm with ord={ord!r} of a matrix is not supported (use None or 'fro')")


__all__ = ["det", "inv", "matrix_norm", "norm", "slogdet", "slogdet_result", "vector_norm"]
