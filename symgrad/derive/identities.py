"""Products with an identity, which a Jacobian or Hessian law builds by contracting with a basis: ``eye(n) @ A``
is ``A``, and ``X @ eye(d).reshape(d, 1, d, 1)``, the basis of a column ``(d, 1)`` multiplied through, is
``X.T.reshape(d, 1, n, 1)``.

An identity here is ``eye(N)`` under layout ops that only insert or drop dims of size 1 or reorder dims (a
``reshape`` that keeps the order of the other dims, ``[:, None]``, ``transpose``, ``permute``): two dims of size N,
every other of size 1, and an entry of 1 where the two indices agree. The rules are the rows of
:data:`IDENTITY_PRODUCTS`: a product of such an identity with a matrix ``M`` is ``M`` itself, moved into place.

Each is exact for a finite ``M``. For an infinite entry, ``eye(n) @ M`` is nan wherever the identity's zeros meet
it, which is why code matching torch's double backward keeps it; a Hessian module drops it (torch's own Hessians
disagree with each other there: ``torch.func.hessian`` and ``torch.autograd.functional.hessian`` put the nans in
transposed places).

>>> import symgrad as sg
>>> from symgrad.core.tensor import apply
>>> n, d = sg.dims("n d")
>>> X = sg.symbols("X", (n, d))
>>> identity_product(X, apply("eye", n=d).reshape(d, 1, d, 1), (d, 1, n, 1)).name
'X.T.reshape(d, 1, n, 1)'
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.dims import same_dim, sized_axes
from ..core.tensor import Tensor

_SHAPE_OPS = ("reshape", "transpose", "permute", "index")


def identity_dims(t: Tensor) -> tuple[int, int] | None:
    """The positions of the two dims of size N when ``t`` is an identity ``eye(N)`` with dims of size 1 inserted or
    dims reordered (see the module docstring), else None."""
    node = t
    while node.op is not None and node.op.name in _SHAPE_OPS:
        if node.op.name == "index" and not all(i is None or i == slice(None) for i in node.attrs["index"]):
            return None
        kept, inner = [d for _, d in sized_axes(node.shape)], [d for _, d in sized_axes(node.inputs[0].shape)]
        if node.op.name in ("reshape", "index") and not (
            len(kept) == len(inner) and all(same_dim(a, b) for a, b in zip(kept, inner))
        ):
            return None
        node = node.inputs[0]
    if node.op is None or node.op.name != "eye":
        return None
    positions = [k for k, _ in sized_axes(t.shape)]
    size = node.attrs["n"]
    if len(positions) != 2 or not all(same_dim(t.shape[k], size) for k in positions):
        return None
    return positions[0], positions[1]


def _square(identity: Tensor, other: Tensor, shape: tuple) -> Tensor | None:
    """``eye(N) @ M`` or ``M @ eye(N)`` (the identity's two dims are its matrix dims): ``M``."""
    dims = identity_dims(identity)
    ndim = len(identity.shape)
    if dims != (ndim - 2, ndim - 1) or len(other.shape) != len(shape):
        return None
    return other if all(same_dim(a, b) for a, b in zip(other.shape, shape)) else None


def _column_basis(m: Tensor, identity: Tensor, shape: tuple) -> Tensor | None:
    """``M @ E`` with ``M`` an (r, N) matrix and ``E`` the columns ``e_i`` (N, 1) stacked along a batch dim: the
    columns ``M[:, i]``, that is ``M.T`` moved into ``shape``."""
    dims = identity_dims(identity)
    ndim = len(identity.shape)
    if dims is None or dims[1] != ndim - 2 or dims[0] >= ndim - 2 or len(m.shape) != 2:
        return None
    return m.T.reshape(*shape)


def _row_basis(identity: Tensor, m: Tensor, shape: tuple) -> Tensor | None:
    """``E @ M`` with ``E`` the rows ``e_iᵀ`` (1, N) stacked along a batch dim and ``M`` an (N, c) matrix: the rows
    ``M[i]``, that is ``M`` moved into ``shape``."""
    dims = identity_dims(identity)
    ndim = len(identity.shape)
    if dims is None or dims[1] != ndim - 1 or dims[0] >= ndim - 2 or len(m.shape) != 2:
        return None
    return m.reshape(*shape)


# (what the product looks like, the rule for (left, right, result shape)); the first that applies is used
IDENTITY_PRODUCTS: tuple[tuple[str, Callable[[Tensor, Tensor, tuple], Tensor | None]], ...] = (
    ("eye(N) @ M -> M", lambda a, b, shape: _square(a, b, shape)),
    ("M @ eye(N) -> M", lambda a, b, shape: _square(b, a, shape)),
    ("M @ (columns e_i) -> M.T in place", lambda a, b, shape: _column_basis(a, b, shape)),
    ("(rows e_i^T) @ M -> M in place", lambda a, b, shape: _row_basis(a, b, shape)),
)


def identity_product(a: Tensor, b: Tensor, shape: tuple) -> Tensor | None:
    """``a @ b`` without its identity factor (see :data:`IDENTITY_PRODUCTS`), or None when neither is one."""
    if len(a.shape) < 2 or len(b.shape) < 2:
        return None
    for _, rule in IDENTITY_PRODUCTS:
        found = rule(a, b, shape)
        if found is not None:
            return found
    return None
