"""``torch.linalg`` as symgrad mirrors it: inverse, determinants, solve and Cholesky of (batches of) square
matrices, and vector and matrix norms. Decompositions without a closed form symgrad can differentiate as
torch does (eigh, qr, svd) are refused in one line.

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

from ..core.dims import format_shape, normalize_dims
from ..core.errors import ShapeError, TorchRuntimeError, UnsupportedError
from ..core.methods import relabel
from ..core.tensor import Tensor, apply

slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])  # torch.return_types.linalg_slogdet's fields


def inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix (a batch too; 0×0 gives 0×0)."""
    return apply("inv", A)


def det(A: Tensor) -> Tensor:
    """The determinant of each square matrix (1 for 0×0), with torch's gradient (0 at a singular matrix)."""
    return apply("det", A)


def slogdet(A: Tensor) -> Any:
    """(sign, logabsdet) of det(A): ``sign`` has no gradient (as in torch); ``logabsdet`` has A⁻ᵀ."""
    return slogdet_result(apply("sign", apply("det", A)), apply("logabsdet", A))


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor L (A = L Lᵀ) of symmetric positive-definite matrices, or Lᵀ with ``upper``: a closed
    form entry by entry, LAPACK's numbers, torch's gradient (which reads the lower triangle of A's gradient
    symmetrised)."""
    L = apply("cholesky", A)
    return L.mT if upper else L


def _vector_rhs(A: Tensor, B: Tensor) -> bool:
    """torch's rule: B is a (batch of) vector(s) when it is 1-D, or has one dim less than A and A's batch."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """X with A X = B (``left=False``: X A = B), as A⁻¹ B: torch's values up to rounding, and its gradients
    (B̄ = A⁻ᵀ Ḡ, Ā = −B̄ Xᵀ)."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"linalg.solve: A must be batches of square matrices, but they are {format_shape(A.shape)}")
    inverse = apply("inv", A)
    if _vector_rhs(A, B):
        column = B.unsqueeze(-1) if left else B.unsqueeze(-2)
        return (inverse @ column)[..., 0] if left else (column @ inverse)[..., 0, :]
    return inverse @ B if left else B @ inverse


def _refuse(what: str) -> Any:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise UnsupportedError(
            f"torch.linalg.{what} is not supported: it has no closed form that symgrad can differentiate as torch "
            "does (its sign and order conventions come from LAPACK)"
        )

    refused.__name__ = refused.__qualname__ = what
    refused.__doc__ = f"Refused: torch.linalg.{what} has no closed form symgrad can differentiate as torch does."
    return refused


eigh, eigvalsh, eig, eigvals, qr, svd, svdvals = (
    _refuse(name) for name in ("eigh", "eigvalsh", "eig", "eigvals", "qr", "svd", "svdvals")
)


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The ord-norm over ``dim`` (all entries by default), for any number ord (0 counts non-zero entries), inf
    and -inf, with torch's gradients (0 where the norm is 0, ties of ±inf shared evenly)."""
    if isinstance(ord, str):
        raise TorchRuntimeError(f"linalg.vector_norm: Expected a number as ord, but got {ord!r}")
    return relabel(x.norm(ord, dim=normalize_dims(dim, x.ndim), keepdim=keepdim), dtype)


def matrix_norm(
    A: Tensor, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """The matrix norm over the two dims ``dim``: 'fro', 1 and -1 (largest/smallest column sum of |A|), inf and
    -inf (rows), as torch computes them; 'nuc', 2 and -2 need singular values and are refused."""
    if A.ndim < 2:
        raise ShapeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions. (it has {A.ndim})")
    axes = tuple(normalize_dims(d, A.ndim)[0] for d in dim) if isinstance(dim, (tuple, list)) else ()
    if len(axes) != 2 or axes[0] == axes[1]:
        raise ShapeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    if ord == "fro":
        return relabel(apply("norm", A, dim=tuple(sorted(axes)), keepdim=bool(keepdim)), dtype)
    if ord in ("nuc", 2, -2):
        raise UnsupportedError(
            f"matrix_norm with ord={ord!r} needs singular values, which symgrad does not compute; "
            "use 'fro', 1, -1, inf or -inf"
        )
    if ord not in (1, -1, math.inf, -math.inf):
        raise TorchRuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    summed = axes[1] if abs(ord) == math.inf else axes[0]  # 1: column sums; inf: row sums (the transpose's)
    sums = A.abs().sum(dim=summed, keepdim=True)
    pick = sums.amax if ord > 0 else sums.amin
    return relabel(pick(tuple(sorted(axes)), keepdim=keepdim), dtype)


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """torch.linalg.norm: a vector norm over one dim (or of all entries when neither ord nor dim is given), a
    matrix norm over two dims (or of a 2-D input when ord is given without dim)."""
    if isinstance(dim, int) or (isinstance(dim, (tuple, list)) and len(dim) == 1):
        if isinstance(ord, str):
            raise TorchRuntimeError(
                f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {ord!r} with {dim}"
            )
        return vector_norm(A, 2 if ord is None else ord, dim=dim, keepdim=keepdim, dtype=dtype)
    if dim is not None:
        return matrix_norm(A, "fro" if ord is None else ord, dim=dim, keepdim=keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, keepdim=keepdim, dtype=dtype)
    if A.ndim == 1:
        return vector_norm(A, ord, keepdim=keepdim, dtype=dtype)
    # torch requires a 2-D input here; symgrad also takes the last two dims of a batch (as matrix_norm does)
    return matrix_norm(A, ord, keepdim=keepdim, dtype=dtype)


__all__ = [
    "cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matrix_norm", "norm", "qr", "slogdet",
    "slogdet_result", "solve", "svd", "svdvals", "vector_norm",
]  # fmt: skip
