"""Helpers for the ``batch`` column of the op table: operands with extra leading (batch) dims.

A batching rule receives the op's inputs, which of them carry ``nb`` leading batch dims, and the op's
attributes, and builds the same op for every batch entry at once (see :mod:`symgrad.derive.batching`).

>>> import symgrad as sg
>>> v = sg.symbols("v", (4, 3))
>>> lift(v, 1, 2).shape
(4, 1, 1, 3)
"""

from __future__ import annotations

from typing import Any

from ..core.tensor import Tensor


def lift(t: Tensor, nb: int, extra: int) -> Tensor:
    """Insert ``extra`` size-1 dims right after the ``nb`` batch dims (``v[:, None]``)."""
    if extra <= 0:
        return t
    return t[(slice(None),) * nb + (None,) * extra]


def batch_sizes(inputs: list[Tensor], flags: list[bool], nb: int) -> tuple:
    """The batch dims' sizes, read from a batched input."""
    return next(t.shape[:nb] for t, f in zip(inputs, flags) if f)


def repeated(t: Tensor, sizes: tuple) -> Tensor:
    """An unbatched operand repeated along the batch dims (for ops that do not broadcast)."""
    return t.expand(*sizes, *t.shape)


def shift(value: Any, nb: int) -> Any:
    """Dimension attributes moved past ``nb`` leading dims (they are normalized, so never negative)."""
    if isinstance(value, (tuple, list)):
        return tuple(d + nb for d in value)
    return value + nb


def shift_index(index: tuple, nb: int) -> tuple:
    """A basic index that leaves the batch dims alone (an index starting with ``...`` already does)."""
    if index and index[0] is Ellipsis:
        return index
    return (slice(None),) * nb + tuple(index)
