"""Basic indexing as torch does it: ints, slices, None and ``...``.

>>> index_shape((2, 3), normalize_index((0,)))
(3,)
>>> index_shape((2, 3), normalize_index((slice(None), None)))
(2, 1, 3)
"""

from __future__ import annotations

import numpy as np

from .dims import Shape, format_shape

IndexItem = object  # int | slice | None | Ellipsis


def normalize_index(index: object) -> tuple:
    """The index as a tuple of ints, slices, None and Ellipsis; anything else is refused."""
    items = index if isinstance(index, tuple) else (index,)
    out = []
    for item in items:
        if isinstance(item, bool):
            raise IndexError("boolean indices are not supported")
        if isinstance(item, (int, np.integer)):
            out.append(int(item))
        elif item is None or item is Ellipsis:
            out.append(item)
        elif isinstance(item, slice):
            for part in (item.start, item.stop, item.step):
                if part is not None and not isinstance(part, int):
                    raise IndexError(f"slice bounds must be integers, not {part!r}")
            if item.step == 0:
                raise ValueError("slice step cannot be zero")
            if item.step is not None and item.step < 0:
                raise ValueError("step must be greater than zero")
            out.append(item)
        elif isinstance(item, (list, np.ndarray)) or hasattr(item, "shape"):
            raise IndexError(
                f"advanced indexing (by a {type(item).__name__}) is not supported; use ints, slices (`:`), "
                "ellipsis (`...`) and None"
            )
        else:
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                f"(got {type(item).__name__})"
            )
    if sum(1 for i in out if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    return tuple(out)


def _expand_ellipsis(ndim: int, index: tuple) -> list[tuple[int, object]]:
    """The index with ``...`` spelled out as full slices, each item with its position in ``index``.

    The position is what torch calls the dimension in its out-of-bounds message.
    """
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    if ndim == 0 and len(index) == 1:  # x[0] and x[:] (torch words x[0, 0] and x[:, None] differently)
        if isinstance(index[0], int):
            raise IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to "
                "convert a 0-dim tensor to a number"
            )
        if isinstance(index[0], slice):
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    fill = [slice(None)] * (ndim - used)
    if Ellipsis in index:
        at = index.index(Ellipsis)
        before = list(enumerate(index[:at]))
        after = [(at + 1 + k, item) for k, item in enumerate(index[at + 1 :])]
        return before + [(at, item) for item in fill] + after
    return list(enumerate(index)) + [(len(index), item) for item in fill]


def index_shape(shape: Shape, index: tuple) -> Shape:
    """The shape ``x[index]`` has; symbolic dimensions allow ints and full slices."""
    full = _expand_ellipsis(len(shape), index)
    out: list = []
    axis = 0
    for position, item in full:
        if item is None:
            out.append(1)
            continue
        size = shape[axis]
        if isinstance(item, int):
            if isinstance(size, int) and not -size <= item < size:
                raise IndexError(f"index {item} is out of bounds for dimension {position} with size {size}")
        elif item == slice(None):
            out.append(size)
        elif isinstance(size, int):
            out.append(len(range(*item.indices(size))))
        else:
            raise IndexError(
                f"a partial slice of the symbolic dimension {size} (shape {format_shape(shape)}) needs a concrete size"
            )
        axis += 1
    return tuple(out)


def apply_index(arr: np.ndarray, index: tuple) -> np.ndarray:
    """Index an object array; NumPy's basic indexing is torch's."""
    result = arr[index]
    return result if isinstance(result, np.ndarray) else np.array(result, dtype=object)


def index_grad_fn(index: tuple) -> str:
    """The name torch gives the last backward node that ``x[index]`` creates."""
    last = [i for i in index if i is not Ellipsis][-1:] or [slice(None)]
    item = last[0]
    if item is None:
        return "UnsqueezeBackward0"
    if isinstance(item, int):
        return "SelectBackward0"
    if item == slice(None) and all(i == slice(None) or i is Ellipsis for i in index):
        return "AliasBackward0"
    return "SliceBackward0"


def format_index(index: tuple) -> str:
    """``(0, slice(None), None)`` → ``0, :, None`` as it is written in Python."""
    parts = []
    for item in index:
        if item is Ellipsis:
            parts.append("...")
        elif isinstance(item, slice):
            text = ":".join("" if p is None else str(p) for p in (item.start, item.stop))
            parts.append(text + (f":{item.step}" if item.step is not None else ""))
        else:
            parts.append(str(item))
    return ", ".join(parts)
