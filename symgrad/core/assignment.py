"""Assignment through an index: what ``x[index] = value`` and ``x.index_put_(indices, values, accumulate)`` leave
in ``x``, as a new tensor built from ops that have derivatives (``where``, ``gather``, ``scatter_add``).

Basic indices (ints, slices, None, ``...``) place ``value`` through ``index_backward``. Advanced ones (integer
tensors, lists, masks) need their values: the positions they reach are computed once, with NumPy's indexing, which
reads a key as torch does, and the result takes ``value``'s entries there and ``x``'s elsewhere.

>>> import symgrad as sg
>>> x = sg.tensor([1.0, 2.0, 3.0])
>>> assigned(x, x > 1.5, 0.5).tolist()
[1.0, 0.5, 0.5]
>>> index_put(x, (sg.tensor([0, 0]),), sg.tensor([1.0, 2.0]), accumulate=True).tolist()
[4.0, 2.0, 3.0]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .dims import is_concrete
from .dtypes import is_floating
from .errors import TorchIndexError, UnsupportedError
from .indexing import (
    getitem,
    index_items,
    int_constant,
    is_advanced,
    is_tensor,
    known_values,
    normalize_index,
    scatter_add,
    take,
)

if TYPE_CHECKING:
    from .tensor import Tensor


def assigned(t: Tensor, index: object, value: Any) -> Tensor:
    """What ``t[index] = value`` leaves in ``t``: ``value`` (broadcast, in ``t``'s dtype) where the index reaches,
    ``t`` elsewhere."""
    if t.dtype == "bool":
        raise UnsupportedError("x[index] = value into a boolean tensor is not followed; use torch.where instead")
    items = index_items(index)
    masked = _by_mask(t, items, value)
    if masked is not None:
        return masked
    if any(is_advanced(item) for item in items):
        return _put(t, items, value, accumulate=False, what="x[index] = value")
    key = normalize_index(items)
    region = getitem(t, index)
    value = _fitted(t, value, region.shape)
    placed = t.apply_op("index_backward", value, shape=t.shape, index=key)
    reached = t.apply_op("index_backward", t.apply_op("full", shape=region.shape, value=1), shape=t.shape, index=key)
    return t.apply_op("where", reached.ne(0), placed, t)


def _by_mask(t: Tensor, items: tuple, value: Any) -> Tensor | None:
    """``t[mask] = value`` as ``where(mask, value, t)``, for any mask (its values may be symbols, ``x < 0``, and the
    sizes symbolic): the index is one boolean tensor beside full slices, over the dims it covers, and ``value``
    is one number or broadcasts over the dims after the mask. None when the assignment is not of that form."""
    full = [isinstance(i, slice) and i == slice(None) for i in items]
    masks = [k for k, i in enumerate(items) if is_tensor(i) and i.dtype == "bool"]
    if len(masks) != 1 or not all(f for k, f in enumerate(full) if k != masks[0]):
        return None
    at, mask = masks[0], items[masks[0]]
    covered = t.shape[at : at + mask.ndim]
    after = t.shape[at + mask.ndim :]
    if len(covered) != mask.ndim or tuple(str(d) for d in covered) != tuple(str(d) for d in mask.shape):
        return None  # torch's own error, from the general path
    view = mask if not at and not after else mask.reshape(*((1,) * at), *mask.shape, *((1,) * len(after)))
    if isinstance(value, (int, float)) and (is_floating(t.dtype) or isinstance(value, int)):
        return t.apply_op("where", view, value, t)  # a Python number, as torch.where(mask, number, t) has it
    value = value if is_tensor(value) else t.apply_op("full", shape=(), value=value)
    scalar = is_concrete(value.shape) and int(np.prod(value.shape, dtype=np.int64)) == 1
    trailing = value.ndim <= len(after) and all(
        str(v) in ("1", str(d)) for v, d in zip(reversed(value.shape), reversed(after))
    )
    if not scalar and not trailing:
        return None  # a value per reached entry: its order follows the mask's values
    if scalar and value.ndim:
        value = value.reshape(())
    if value.dtype != t.dtype:
        value = value.to(t.dtype)
    return t.apply_op("where", view, value, t)


def index_put(t: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """``torch.index_put(t, indices, values, accumulate)``: ``t[indices] = values``, or ``+=`` with ``accumulate``
    (where an index repeats, its values add up)."""
    if not isinstance(indices, (tuple, list)):
        raise TorchIndexError(f"index_put(): indices must be a tuple of tensors, not {type(indices).__name__}")
    items = tuple(slice(None) if i is None else i for i in indices)
    if t.dtype == "bool" and not accumulate:
        return assigned(t, items, values)
    return _put(t, items, values, accumulate=accumulate, what="index_put")


def _fitted(t: Tensor, value: Any, shape: tuple) -> Tensor:
    """``value`` as a tensor of ``t``'s dtype and the indexed region's ``shape`` (torch drops its leading 1s)."""
    value = value if is_tensor(value) else t.apply_op("full", shape=(), value=value)
    if value.dtype != t.dtype:
        value = value.to(t.dtype)
    while value.ndim > len(shape) and value.shape[0] == 1:
        value = value[0]
    return value if tuple(value.shape) == tuple(shape) else value.expand(*shape)


def _put(t: Tensor, items: tuple, value: Any, *, accumulate: bool, what: str) -> Tensor:
    reached = _positions(t, items, what)
    value = _fitted(t, value, reached.shape)
    if reached.size == 0:
        return t
    flat = reached.reshape(-1)
    entries = value.reshape(-1)
    size = int(np.prod(t.shape, dtype=np.int64))
    if accumulate:
        zeros = t.apply_op("full", shape=(size,), value=0)
        added = scatter_add(zeros.to(t.dtype), 0, int_constant(t, flat), entries)
        return t + added.reshape(*t.shape)
    if len(np.unique(flat)) != flat.size:
        raise UnsupportedError(
            f"{what} with an index that reaches one entry twice: torch leaves which value it keeps undefined; "
            "pass accumulate=True to add them, or an index without repeats"
        )
    source = np.zeros(size, dtype=np.int64)
    source[flat] = np.arange(flat.size)
    mask = np.zeros(size, dtype=np.int64)
    mask[flat] = 1
    picked = take(entries, 0, source).reshape(*t.shape)
    return t.apply_op("where", int_constant(t, mask.reshape(t.shape)).ne(0), picked, t)


def _positions(t: Tensor, items: tuple, what: str) -> np.ndarray:
    """The flat positions of ``t``'s entries that ``t[items]`` reads, in the shape of ``t[items]``."""
    if not is_concrete(t.shape):
        raise UnsupportedError(f"{what} with an index of tensors, lists or masks needs concrete sizes, not {t.shape}")
    key = []
    for item in items:
        if is_tensor(item):
            values = known_values(item)
            if values is None:
                raise UnsupportedError(
                    f"{what} with an index whose values are symbols is not followed: give the index as numbers"
                )
            key.append(values.astype(bool) if item.dtype in ("bool", "uint8") else values)
        elif isinstance(item, list):
            key.append(np.asarray(item))
        else:
            key.append(item)
    positions = np.arange(int(np.prod(t.shape, dtype=np.int64)), dtype=np.int64).reshape(t.shape)
    try:
        return positions[tuple(key)]
    except IndexError as error:
        raise TorchIndexError(str(error)) from None
