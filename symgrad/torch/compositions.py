"""Torch functions that ATen composes in C++ from other ops, with no Python decomposition torch could run: the
same compositions, written with torch's ops, which the tracer then follows (see :mod:`.decompositions`).

Each keeps ATen's order of operations, so that its numbers are torch's to the last bit where ATen's are.

>>> import torch
>>> tile(torch.tensor([1.0, 2.0]), (2, 2)).tolist()
[[1.0, 2.0, 1.0, 2.0], [1.0, 2.0, 1.0, 2.0]]
"""

from __future__ import annotations

from typing import Any


def tile(input: Any, dims: Any) -> Any:
    """``torch.tile``: ``repeat``, with ``dims`` padded by leading 1s to the input's rank."""
    dims = tuple(dims)
    return input.repeat((1,) * (input.dim() - len(dims)) + dims)


def inner(input: Any, other: Any) -> Any:
    """``torch.inner``: the product over the last dims, the result shaped ``input.shape[:-1] + other.shape[:-1]``
    (a product by a number where either is 0-d)."""
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    product = input.reshape(-1, input.shape[-1]).matmul(other.reshape(-1, other.shape[-1]).mT)
    return product.reshape(tuple(input.shape[:-1]) + tuple(other.shape[:-1]))


def trapezoid(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Any:
    """``torch.trapezoid`` (and ``trapz``): Σ (y_i + y_{i+1}) · dx_i / 2 along ``dim``; with a constant spacing,
    the sum of the pairs times dx / 2, as ATen writes it."""
    import torch

    if y.shape[dim] == 0:
        return torch.zeros_like(y.sum(dim))
    left, right = y.narrow(dim, 0, y.shape[dim] - 1), y.narrow(dim, 1, y.shape[dim] - 1)
    if x is None or not isinstance(x, torch.Tensor):
        spacing = 1.0 if x is None and dx is None else (x if x is not None else dx)
        return (left + right).sum(dim) * (spacing / 2)
    if x.dim() == 1:
        steps = x.diff()
        shape = [1] * y.dim()
        shape[dim] = steps.shape[0]
        steps = steps.reshape(shape)
    else:
        steps = x.narrow(dim, 1, x.shape[dim] - 1) - x.narrow(dim, 0, x.shape[dim] - 1)
    return ((left + right) * steps).sum(dim) / 2.0


def trapz(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Any:
    return trapezoid(y, x, dx=dx, dim=dim)


def nanmean(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    """``torch.nanmean``: the nansum over the count of entries that are not nan."""
    import torch

    counted = torch.logical_not(torch.isnan(input)).sum(dim=dim, keepdim=keepdim)
    return torch.nansum(input, dim=dim, keepdim=keepdim, dtype=dtype) / counted


def diagflat(input: Any, offset: int = 0) -> Any:
    """``torch.diagflat``: the flattened input on a diagonal of a square matrix."""
    return input.reshape(-1).diag(offset)


def linalg_vecdot(x: Any, y: Any, *, dim: int = -1) -> Any:
    """``torch.linalg.vecdot``: Σ conj(x) · y along ``dim`` (real tensors: their product's sum)."""
    return (x * y).sum(dim)


def addbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    """``torch.addbmm``: β · input + α · Σ_b batch1[b] @ batch2[b]."""
    summed = batch1.matmul(batch2).sum(0)
    return (input if beta == 1 else input * beta) + (summed if alpha == 1 else summed * alpha)


def unsafe_chunk(input: Any, chunks: int, dim: int = 0) -> Any:
    return input.chunk(chunks, dim)


def index(input: Any, indices: Any) -> Any:
    """``aten.index.Tensor``, which torch's decompositions reach (``F.interpolate`` through ``_unsafe_index``):
    ``input[indices]``, a None entry taking the whole dim."""
    return input[tuple(slice(None) if i is None else i for i in indices)]


COMPOSED = {
    "tile": tile,
    "inner": inner,
    "trapezoid": trapezoid,
    "trapz": trapz,
    "nanmean": nanmean,
    "diagflat": diagflat,
    "linalg_vecdot": linalg_vecdot,
    "addbmm": addbmm,
    "unsafe_chunk": unsafe_chunk,
    "index": index,
}
"""By the name the tracer looks a function up by (``linalg_vecdot`` for ``torch.linalg.vecdot``)."""
