"""Entrywise plumbing on NumPy object arrays of SymPy expressions.

NumPy gives torch's indexing, broadcasting and axis bookkeeping for free on
``dtype=object`` arrays; the helpers here add sums built with one ``Add`` (not
a chain of ``+``) and torch's ``matmul`` rule.

>>> import sympy
>>> a = np.array([[sympy.Symbol("a")], [sympy.Symbol("b")]], dtype=object)
>>> reduce_sum(a, (0,), keepdim=False)
array([a + b], dtype=object)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import sympy

from .errors import SymgradError, UnsupportedError


def as_object_array(value: object) -> np.ndarray:
    """Nested lists or a scalar as an object array of SymPy numbers."""
    arr = np.array(value, dtype=object)
    flat = [sympy.sympify(v) if not isinstance(v, sympy.Basic) else v for v in arr.reshape(-1)]
    return np.array([*flat, None], dtype=object)[:-1].reshape(arr.shape)


def numbers_only(data: Any) -> Any:
    """Nested lists of numbers, checked before SymPy sees them (strings would be parsed as code)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, np.ndarray):
            stack.extend(item.reshape(-1).tolist())
        elif not isinstance(item, (int, float, sympy.Number, np.number)) or isinstance(item, np.bool_):
            raise SymgradError(f"tensor values must be numbers, not {type(item).__name__}")
    return data


def object_array(items: list, shape: tuple[int, ...]) -> np.ndarray:
    """A flat list as an object array of the given shape (no NumPy guessing at nested types)."""
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(shape)


def elementwise(fn: Callable, *arrays: np.ndarray) -> np.ndarray:
    """Apply a scalar function entry by entry, broadcasting the arguments as torch does."""
    broadcast = np.broadcast_arrays(*arrays)
    shape = broadcast[0].shape
    flat = [fn(*args) for args in zip(*(b.reshape(-1) for b in broadcast), strict=False)]
    return object_array(flat, shape)


def groups(arr: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """The entries reduced together over ``axes``: one row per entry of the result, kept axes in order
    (also when some size is 0, where NumPy cannot infer a -1 in a reshape).

    >>> groups(np.arange(6).reshape(2, 3), (0,)).tolist()
    [[0, 3], [1, 4], [2, 5]]
    """
    axes = tuple(a for a in axes if a < arr.ndim)
    keep = [a for a in range(arr.ndim) if a not in axes]
    moved = np.transpose(arr, keep + list(axes))
    count = int(np.prod([arr.shape[a] for a in keep], dtype=int))
    return moved.reshape(count, int(np.prod([arr.shape[a] for a in axes], dtype=int)))


def as_number(entry: Any) -> Any:
    """A truth value as the number torch counts it (1 or 0); anything else unchanged.

    >>> x = sympy.Symbol("x", real=True)
    >>> as_number(x > 0), as_number(sympy.true), as_number(x)
    (Piecewise((1, x > 0), (0, True)), 1, x)
    """
    truth_value = isinstance(entry, sympy.logic.boolalg.Boolean) and not isinstance(entry, sympy.Expr)
    if isinstance(entry, bool) or truth_value:  # a SymPy Symbol is a Boolean too, but also an Expr
        return sympy.Piecewise((1, entry), (0, True))
    return entry


def reduce_sum(arr: np.ndarray, axes: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """Sum over ``axes`` with a single ``Add`` per output entry."""
    axes = tuple(a for a in axes if a < arr.ndim)  # torch lets a 0-d tensor be reduced over dim 0
    keep = [a for a in range(arr.ndim) if a not in axes]
    out_shape = tuple(arr.shape[a] for a in keep)
    flat = [sympy.Add(*(as_number(e) for e in row)) for row in groups(arr, axes)]
    out = object_array(flat, out_shape)
    if keepdim:
        out = out.reshape(tuple(1 if a in axes else arr.shape[a] for a in range(arr.ndim)))
    return out


def products(a: np.ndarray, b: np.ndarray, axes: tuple[list[int], list[int]]) -> np.ndarray:
    """The terms of ``np.tensordot(a, b, axes)``, unsummed: the free axes of ``a``, then of ``b``, then one axis
    listing each entry's products (sum it with :func:`add_last`, one ``Add`` per entry, where a chain of ``+``
    re-sorts the growing sum at every step).

    >>> x, y = sympy.symbols("x y")
    >>> add_last(products(np.array([x, y], dtype=object), np.array([2, 3], dtype=object), ([0], [0]))).tolist()
    2*x + 3*y
    """
    a_axes, b_axes = [d % a.ndim for d in axes[0]], [d % b.ndim for d in axes[1]]
    a_free = [d for d in range(a.ndim) if d not in a_axes]
    b_free = [d for d in range(b.ndim) if d not in b_axes]
    count = int(np.prod([a.shape[d] for d in a_axes], dtype=int))
    left = np.transpose(a, a_free + a_axes).reshape(*(a.shape[d] for d in a_free), *(1 for _ in b_free), count)
    right = np.transpose(b, b_free + b_axes).reshape(*(1 for _ in a_free), *(b.shape[d] for d in b_free), count)
    return left * right


def add_last(terms: np.ndarray) -> np.ndarray:
    """One ``Add`` of the entries along the last axis, per entry of the others."""
    return reduce_sum(terms, (terms.ndim - 1,), keepdim=False)


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """torch.matmul on object arrays: 1-D promotion and batch broadcasting included."""
    a2 = a.reshape((1, *a.shape)) if a.ndim == 1 else a
    b2 = b.reshape((*b.shape, 1)) if b.ndim == 1 else b
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    a2 = np.broadcast_to(a2, batch + a2.shape[-2:])
    b2 = np.broadcast_to(b2, batch + b2.shape[-2:])
    rows, inner, cols = a2.shape[-2], a2.shape[-1], b2.shape[-1]
    flat = []
    for index in itertools.product(*(range(d) for d in batch)):
        left, right = a2[index], b2[index]
        for i in range(rows):
            for j in range(cols):
                flat.append(sympy.Add(*[left[i, k] * right[k, j] for k in range(inner)]))
    out = object_array(flat, (*batch, rows, cols))
    if a.ndim == 1:
        out = out.reshape(out.shape[:-2] + out.shape[-1:])
    if b.ndim == 1:
        out = out.reshape(out.shape[:-1])
    return out


def topk_positions(values: np.ndarray, k: int, dim: int, largest: bool) -> np.ndarray:
    """The positions along ``dim`` of the ``k`` largest (or smallest) values, in order, as torch.topk picks
    them: a nan counts as larger than any number, and ties go to the lower position.

    >>> topk_positions(np.array([1.0, np.nan, 3.0, 2.0]), 2, 0, largest=True).tolist()
    [1, 2]
    """
    if values.ndim == 0:
        return np.zeros((), dtype=int)
    nan = np.isnan(values)
    keys = np.where(nan, -np.inf, -values) if largest else np.where(nan, np.inf, values)
    rank = np.where(nan, 0 if largest else 2, 1)  # nan first for the largest, last for the smallest
    order = np.lexsort((keys, rank), axis=dim) if values.ndim == 1 else _lexsort_along(keys, rank, dim)
    head = np.take(order, np.arange(min(k + 1, values.shape[dim])), axis=dim)
    key, kind = (np.moveaxis(np.take_along_axis(a, head, axis=dim), dim, -1) for a in (keys, rank))
    if np.any((key[..., 1:] == key[..., :-1]) & (kind[..., 1:] == kind[..., :-1])):
        raise UnsupportedError(
            "topk of tied values is not supported: torch's choice and order among equal entries is unspecified "
            "(the k picked entries and the next one must differ)"
        )
    return np.take(order, np.arange(k), axis=dim)


def _lexsort_along(keys: np.ndarray, rank: np.ndarray, dim: int) -> np.ndarray:
    moved_keys, moved_rank = np.moveaxis(keys, dim, -1), np.moveaxis(rank, dim, -1)
    order = np.empty(moved_keys.shape, dtype=int)
    for index in np.ndindex(moved_keys.shape[:-1]):
        order[index] = np.lexsort((moved_keys[index], moved_rank[index]))
    return np.moveaxis(order, -1, dim)
