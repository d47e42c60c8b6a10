"""Rewrites of dims of size 1, which a Hessian of a column ``(d, 1)`` parameter leaves around its basis: a swap of
a dim of size 1 is a reshape, reshapes of one shape add as one reshape, and a stack of columns multiplied by one
matrix is one matrix product.

Each row of :data:`UNIT_DIM_REWRITES` is ``(what it rewrites, the rule)``; a rule takes the op's name, inputs,
attributes and result shape and returns the simpler node or None. Matrices (2-d) keep their transposes: ``x.T``
of a column reads better than a reshape.

>>> import symgrad as sg
>>> k, n, d = sg.dims("k n d")
>>> M, B = sg.symbols("M", (d, n)), sg.symbols("B", (k, n, 1))
>>> unit_dim_rewrite("matmul", [M, B], {}, (k, d, 1)).name
'(B.reshape(k, n) @ M.T).reshape(k, d, 1)'
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.dims import is_unit, same_dim
from ..core.tensor import Tensor, apply


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(same_dim(x, y) for x, y in zip(a, b))


def _swap_with_unit(name: str, inputs: list[Tensor], attrs: dict, shape: tuple) -> Tensor | None:
    """``t.transpose(a, b)`` where dim a or b has size 1 and every dim between them too (3-d and up):
    ``t.reshape(shape)``, the same entries (the other dims keep their order; a size-1 dim jumping over a larger
    one would reorder them)."""
    if name != "transpose" or len(shape) < 3:
        return None
    x = inputs[0]
    a, b = sorted(d % len(x.shape) for d in (attrs["dim0"], attrs["dim1"]))
    if not (is_unit(x.shape[a]) or is_unit(x.shape[b])) or not all(is_unit(d) for d in x.shape[a + 1 : b]):
        return None
    return x.reshape(*shape)


def _reshapes_added(name: str, inputs: list[Tensor], attrs: dict, shape: tuple) -> Tensor | None:
    """``a.reshape(s) + b.reshape(s)`` for ``a`` and ``b`` of one shape: ``(a + b).reshape(s)``."""
    if name not in ("add", "sub") or len(inputs) != 2 or not all(_is_reshape(t) for t in inputs):
        return None
    (a,), (b,) = inputs[0].inputs, inputs[1].inputs
    if not _same(a.shape, b.shape) or not _same(inputs[0].shape, inputs[1].shape):
        return None
    return apply(name, a, b, **attrs).reshape(*shape)


def _columns_product(name: str, inputs: list[Tensor], attrs: dict, shape: tuple) -> Tensor | None:
    """``M @ B`` with ``M`` a matrix (d, n) and ``B`` a stack of columns (k, n, 1): ``(B.reshape(k, n) @ M.T)``,
    reshaped to (k, d, 1), one matrix product instead of k matrix-vector ones."""
    if name != "matmul":
        return None
    m, b = inputs
    if len(m.shape) != 2 or len(b.shape) != 3 or not is_unit(b.shape[-1]):
        return None
    return (b.reshape(b.shape[0], b.shape[1]) @ m.T).reshape(*shape)


def _is_reshape(t: Tensor) -> bool:
    return t.op is not None and t.op.name == "reshape"


UNIT_DIM_REWRITES: tuple[tuple[str, Callable[[str, list[Tensor], dict, tuple], Tensor | None]], ...] = (
    ("t.transpose(a, b), a or b of size 1 -> t.reshape(...)", _swap_with_unit),
    ("a.reshape(s) + b.reshape(s) -> (a + b).reshape(s)", _reshapes_added),
    ("M @ (columns, k×n×1) -> (B.reshape(k, n) @ M.T).reshape(k, d, 1)", _columns_product),
)


def unit_dim_rewrite(name: str, inputs: list[Tensor], attrs: dict, shape: tuple) -> Tensor | None:
    """The first rewrite of :data:`UNIT_DIM_REWRITES` that applies to ``name(*inputs)``, or None."""
    for _, rule in UNIT_DIM_REWRITES:
        found = rule(name, inputs, attrs, shape)
        if found is not None:
            return found
    return None
