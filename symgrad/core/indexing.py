"""Indexing as torch does it: basic (ints, slices, None, ``...``) and advanced (integer tensors, lists, masks).

Basic indexing is one ``index`` op (NumPy's basic indexing is torch's). A slice of a symbolic
dimension works when its step is 1 and its bounds are integers (``X[:, 1:]``, ``X[:-1]``): the
bounds are taken to lie inside the dimension, so ``X[1:]`` has ``n - 1`` rows.

Advanced indexing follows torch's layout, which differs from NumPy's where ints and index
tensors mix: ints select first, then the index tensors (masks become their ``nonzero``) pick
along the dims they stand at; their broadcast shape takes the place of those dims when they are
adjacent, and comes first otherwise. It is built from ``gather`` (see :mod:`symgrad.ops.indexing`),
so its gradient accumulates repeated picks, as torch's does.

>>> index_shape((2, 3), normalize_index((0,)))
(3,)
>>> index_shape((2, 3), normalize_index((slice(None), None)))
(2, 1, 3)
>>> n = sympy.Symbol("n", integer=True, positive=True)
>>> index_shape((n, 3), normalize_index((slice(1, None),)))
(n - 1, 3)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy
from sympy.logic.boolalg import BooleanAtom

from .dims import Shape, as_dim, broadcast_shapes, format_shape, is_concrete, normalize_dim, numel, require_concrete
from .errors import TorchIndexError, TorchRuntimeError, TorchTypeError, TorchValueError, UnsupportedError
from .numbers import as_entries

if TYPE_CHECKING:
    from .tensor import Tensor

IndexItem = object  # int | slice | None | Ellipsis | bool | list | Tensor


def normalize_index(index: object) -> tuple:
    """The index as a tuple of ints, slices, None and Ellipsis; anything else is refused."""
    items = index if isinstance(index, tuple) else (index,)
    out = []
    for item in items:
        if isinstance(item, bool):
            raise TorchIndexError("boolean indices are not supported")
        if isinstance(item, (int, np.integer)):
            out.append(int(item))
        elif item is None or item is Ellipsis:
            out.append(item)
        elif isinstance(item, slice):
            for part in (item.start, item.stop, item.step):
                if isinstance(part, sympy.Expr) and part.free_symbols:
                    raise UnsupportedError(
                        f"a slice bound made of a symbolic size ({part}) is not supported; slice at fixed bounds, "
                        "or leave the size out of dynamic_shapes"
                    )
                if part is not None and not isinstance(part, int):
                    raise TorchIndexError(f"slice bounds must be integers, not {part!r}")
            if item.step == 0:
                raise TorchValueError("slice step cannot be zero")
            if item.step is not None and item.step < 0:
                raise TorchValueError("step must be greater than zero")
            out.append(item)
        else:
            raise TorchIndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                f"(got {type(item).__name__})"
            )
    if sum(1 for i in out if i is Ellipsis) > 1:
        raise TorchIndexError("an index can only have a single ellipsis ('...')")
    return tuple(out)


def _expand_ellipsis(ndim: int, index: tuple) -> list[tuple[int, object]]:
    """The index with ``...`` spelled out as full slices, each item with its position in ``index``.

    The position is what torch calls the dimension in its out-of-bounds message.
    """
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    if ndim == 0 and len(index) == 1:  # x[0] and x[:] (torch words x[0, 0] and x[:, None] differently)
        if isinstance(index[0], int):
            raise TorchIndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to "
                "convert a 0-dim tensor to a number"
            )
        if isinstance(index[0], slice):
            raise TorchIndexError("slice() cannot be applied to a 0-dim tensor.")
    if used > ndim:
        raise TorchIndexError(f"too many indices for tensor of dimension {ndim}")
    fill = [slice(None)] * (ndim - used)
    if Ellipsis in index:
        at = index.index(Ellipsis)
        before = list(enumerate(index[:at]))
        after = [(at + 1 + k, item) for k, item in enumerate(index[at + 1 :])]
        return before + [(at, item) for item in fill] + after
    return list(enumerate(index)) + [(len(index), item) for item in fill]


def _symbolic_slice_length(size: sympy.Expr, item: slice, shape: Shape) -> object:
    """``len(range(n)[item])`` for a symbolic ``n``, with the slice's bounds taken to lie inside ``n``."""
    if item.step not in (None, 1):
        raise UnsupportedError(
            f"a slice with step {item.step} of the symbolic dimension {size} (shape {format_shape(shape)}) is not "
            "supported; give a concrete size"
        )

    def place(bound: int | None, default: object) -> object:
        return default if bound is None else (bound if bound >= 0 else size + bound)

    length = sympy.sympify(place(item.stop, size) - place(item.start, 0))
    return max(int(length), 0) if length.is_Integer else as_dim(length)


def index_shape(shape: Shape, index: tuple) -> Shape:
    """The shape ``x[index]`` has; a symbolic dimension takes ints and slices of step 1."""
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
                raise TorchIndexError(f"index {item} is out of bounds for dimension {position} with size {size}")
        elif item == slice(None):
            out.append(size)
        elif isinstance(size, int):
            out.append(len(range(*item.indices(size))))
        else:
            out.append(_symbolic_slice_length(size, item, shape))
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


# ── advanced indexing ──────────────────────────────────────────────────────
def is_tensor(item: object) -> bool:
    """A symgrad tensor (told apart without importing :mod:`.tensor`, which imports this module)."""
    return hasattr(item, "apply_op") and hasattr(item, "shape")


def index_items(index: object) -> tuple:
    """The items of ``x[index]``. A list is one index (an array of ints or bools) unless it holds slices,
    None, ``...``, sequences or tensors: then torch reads it as a tuple (its legacy rule, kept for NumPy)."""
    if isinstance(index, tuple):
        return index
    if isinstance(index, list) and len(index) < 32:
        if any(isinstance(i, (list, tuple, slice)) or i is None or i is Ellipsis or is_tensor(i) for i in index):
            return tuple(index)
    return (index,)


def is_advanced(item: object) -> bool:
    if isinstance(item, (bool, np.bool_)):
        return True
    if isinstance(item, np.generic):  # a NumPy integer is an int
        return False
    return isinstance(item, (list, tuple, np.ndarray)) or hasattr(item, "shape")


def known_values(t: Tensor) -> np.ndarray | None:
    """An integer or boolean tensor's values as a NumPy int array; None while they are symbols."""
    if not is_concrete(t.shape):
        return None
    if t.has_values():  # its numbers, computed as torch computes them (no formulas needed)
        return np.asarray(t.numbers()).astype(np.int64).reshape(t.shape)
    flat = [sympy.sympify(e) for e in t.entries().reshape(-1)]
    if not all(e.is_Integer or isinstance(e, BooleanAtom) for e in flat):
        return None
    numbers = [int(bool(v)) if isinstance(v, BooleanAtom) else int(v) for v in flat]
    return np.array(numbers, dtype=np.int64).reshape(t.shape)


def int_constant(like: Tensor, values: np.ndarray) -> Tensor:
    """An int64 tensor of known values (an index symgrad computed), of ``like``'s class."""
    values = np.asarray(values, dtype=np.int64)
    out = type(like)(shape=values.shape, entries=lambda: as_entries(values), dtype="int64")
    out.know_numbers(values)
    return out


def _as_index(item: object) -> tuple[str, Any]:
    """An advanced item as ("mask", bools), ("ints", values) or ("bool", flag); tensors stay tensors."""
    if isinstance(item, (bool, np.bool_)):
        return "bool", bool(item)
    if is_tensor(item):
        if item.dtype in ("bool", "uint8"):
            if not item.shape:
                values = known_values(item)
                if values is None:
                    raise UnsupportedError("indexing by a 0-d boolean tensor of unknown value is not supported")
                return "bool", bool(values)
            return "mask", item
        if item.dtype not in ("int64", "int32"):
            raise TorchIndexError("tensors used as indices must be long, int, byte or bool tensors")
        return "ints", item
    try:
        values = np.asarray(item)
    except ValueError:
        raise TorchIndexError(f"an index sequence must be rectangular, got {item!r}") from None
    if values.size == 0:
        return "ints", values.astype(np.int64)
    if values.dtype == bool:
        return ("bool", bool(values)) if values.ndim == 0 else ("mask", values)
    if values.dtype.kind not in "iu":
        raise TorchIndexError("tensors used as indices must be long, int, byte or bool tensors")
    return "ints", values.astype(np.int64)


def take(t: Tensor, dim: int, index: Tensor | np.ndarray) -> Tensor:
    """``t`` indexed along ``dim`` by an integer tensor: ``t[:, index]`` for ``dim`` 1, index_select for a
    1-D index. The result has ``index``'s shape in place of ``dim``. Built as one ``gather``."""
    idx = index if is_tensor(index) else int_constant(t, index)
    flat = idx if len(idx.shape) == 1 else idx.reshape(-1)
    if len(t.shape) > 1:
        spread = (None,) * dim + (slice(None),) + (None,) * (len(t.shape) - dim - 1)
        target = (*t.shape[:dim], flat.shape[0], *t.shape[dim + 1 :])
        flat = flat[spread].expand(*target)
    picked = t.apply_op("gather", t, flat, dim=dim)
    shape = (*t.shape[:dim], *idx.shape, *t.shape[dim + 1 :])
    return picked if picked.shape == shape else picked.reshape(*shape)


def _index_values(index: Tensor | np.ndarray) -> np.ndarray | None:
    return known_values(index) if is_tensor(index) else index


def getitem(t: Tensor, index: object) -> Tensor:
    """``t[index]`` as torch reads it: basic indexing, or advanced indexing by integer tensors, lists and masks."""
    items = index_items(index)
    if not any(is_advanced(item) for item in items):
        return t.apply_op("index", t, index=normalize_index(items), via="index")
    parsed = [_as_index(item) if is_advanced(item) else ("basic", item) for item in items]
    consumed = 0
    for kind, value in parsed:
        if kind == "mask":
            consumed += len(value.shape)
        elif kind == "ints" or (kind == "basic" and value is not None and value is not Ellipsis):
            consumed += 1
    if consumed > len(t.shape):
        raise TorchIndexError(f"too many indices for tensor of dimension {len(t.shape)}")
    basic: list = []
    found: list[tuple[int, str, Any]] = []  # (dim of the basic result, kind, value)
    at = 0
    for kind, value in parsed:
        if kind == "basic":
            basic.append(value)
            if value is Ellipsis:
                at += len(t.shape) - consumed
            elif not isinstance(value, (int, np.integer)):
                at += 1
        elif kind == "bool":  # x[True] is x[None][[0]], x[False] is x[None][[]]
            basic.append(None)
            found.append((at, "ints", np.zeros(int(value), dtype=np.int64)))
            at += 1
        else:
            width = len(value.shape) if kind == "mask" else 1
            basic.extend([slice(None)] * width)
            found.append((at, kind, value))
            at += width
    trivial = all(item is Ellipsis or item == slice(None) for item in basic)
    base = t if trivial else t.apply_op("index", t, index=normalize_index(tuple(basic)), via="index")
    return _advanced(base, found)


def _mask_indices(base: Tensor, at: int, mask: Any) -> list[tuple[int, np.ndarray]]:
    values = known_values(mask) if is_tensor(mask) else np.asarray(mask, dtype=np.int64)
    if values is None:
        raise UnsupportedError(
            "indexing by a boolean mask of unknown values is not supported (the result's shape depends on them); "
            "give the mask values, or use torch.where(mask, x, 0)"
        )
    for j, size in enumerate(values.shape):
        have = base.shape[at + j]
        if not isinstance(have, int) or have != size:
            raise TorchIndexError(
                f"The shape of the mask {list(values.shape)} at index {j} does not match the shape of the indexed "
                f"tensor {list(base.shape)} at index {at + j}"
            )
    return [(at + j, positions) for j, positions in enumerate(np.nonzero(values))]


def _advanced(base: Tensor, found: list) -> Tensor:
    indices: list[tuple[int, Any]] = []
    for at, kind, value in found:
        indices += _mask_indices(base, at, value) if kind == "mask" else [(at, value)]
    shapes = [tuple(value.shape) for _, value in indices]
    if len(shapes) > 1 and not all(is_concrete(shape) for shape in shapes):
        raise UnsupportedError(
            "indexing by several index tensors of symbolic shapes is not supported; index one dim at a time"
        )
    try:
        broadcast = shapes[0] if len(shapes) == 1 else np.broadcast_shapes(*shapes)
    except ValueError:
        raise TorchIndexError(
            "shape mismatch: indexing tensors could not be broadcast together with shapes "
            + ", ".join(str(list(s)) for s in shapes)
        ) from None
    indexed = {dim for dim, _ in indices}
    empty = 0 in broadcast or any(size == 0 for j, size in enumerate(base.shape) if j not in indexed)
    checked = []  # (dim, index tensor or values, values or None), the values counted from 0
    for k, (dim, value) in enumerate(indices):
        values, size = _index_values(value), base.shape[dim]
        if values is None and is_tensor(value):
            note_index_range(value, size)
        if values is not None and isinstance(size, int):
            bad = values[(values < -size) | (values >= size)]
            if bad.size and not empty:  # torch checks only the entries it picks
                raise TorchIndexError(
                    f"index {int(bad.reshape(-1)[0])} is out of bounds for dimension {k} with size {size}"
                )
            if not is_tensor(value) or (values < 0).any():  # a named index tensor stays itself when it can
                value = values % max(size, 1)
            values = values % max(size, 1)
        checked.append((dim, value, values))
    if len(checked) == 1:
        dim, value, _ = checked[0]
        return take(base, dim, value)
    return _several(base, checked, broadcast)


def _several(base: Tensor, checked: list, broadcast: tuple) -> Tensor:
    """Several index tensors: their dims merged into one, indexed by the row-major position in them."""
    dims = [dim for dim, _, _ in checked]
    sizes = [base.shape[dim] for dim in dims]
    if any(values is None for _, _, values in checked) or not is_concrete(tuple(sizes)):
        raise UnsupportedError(
            "indexing by several index tensors needs their values and concrete sizes of the dims they index; "
            "give the values, or index one dim at a time"
        )
    if dims != list(range(dims[0], dims[0] + len(dims))):  # apart: their broadcast shape comes first
        base = base.permute(*dims, *(d for d in range(len(base.shape)) if d not in dims))
        dims = list(range(len(dims)))
    first, last = dims[0], dims[-1] + 1
    linear = np.zeros(broadcast, dtype=np.int64)
    for (_, _, values), stride in zip(checked, _strides(sizes)):
        linear = linear + np.broadcast_to(values, broadcast) * stride
    merged = base.reshape(*base.shape[:first], math.prod(sizes), *base.shape[last:])
    return take(merged, first, linear)


def _strides(sizes: list[int]) -> list[int]:
    return [math.prod(sizes[k + 1 :]) for k in range(len(sizes))]


# ── splitting ──────────────────────────────────────────────────────────────
def split_sizes(size: object, split: object, dim: int, shape: Shape) -> list[int]:
    """The sizes ``torch.split(x, split, dim)`` cuts a dimension of ``size`` into, with torch's errors."""
    if not isinstance(size, int):
        raise UnsupportedError(
            f"splitting the symbolic dimension {size} (shape {format_shape(shape)}) is not supported; "
            "give a concrete size"
        )
    if isinstance(split, (list, tuple)):
        sizes = [int(s) for s in split]
        if sum(sizes) != size or any(s < 0 for s in sizes):
            raise TorchRuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at dimension "
                f"{dim}), but got split_sizes={sizes}"
            )
        return sizes
    step = int(split)
    if step < 0:
        raise TorchRuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
    if step == 0:
        if size != 0:
            raise TorchRuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}"
            )
        return [0]
    return [min(step, size - start) for start in range(0, size, step)] or [0]


def chunk_sizes(size: object, chunks: int, dim: int, shape: Shape) -> list[int]:
    """The sizes ``torch.chunk(x, chunks, dim)`` gives: pieces of ceil(size / chunks), maybe fewer of them."""
    if chunks <= 0:
        raise TorchRuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if size == 0:
        return [0] * chunks
    return split_sizes(size, -(-size // chunks) if isinstance(size, int) else size, dim, shape)


# ── arguments of the index functions ───────────────────────────────────────
def as_int(value: object, what: str) -> int:
    """An int argument given as a Python int or as a 0-d integer tensor of known value (``torch.narrow``'s start)."""
    if is_tensor(value):
        values = known_values(value)
        if values is None or values.size != 1:
            raise UnsupportedError(f"{what} must be a known integer; {value.name} is not supported")
        return int(values.reshape(-1)[0])
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TorchTypeError(f"{what} must be an int, not {type(value).__name__}")
    return int(value)


def index_tensor(index: object, message: str) -> Tensor:
    """``index`` checked to be an int64 (or int32) tensor, with torch's ``message`` when it is not."""
    if not is_tensor(index):
        raise TorchTypeError(f"index must be a Tensor, not {type(index).__name__}")
    if index.dtype not in ("int64", "int32") and not (index.dtype.startswith(("int", "uint")) and index.numel() == 0):
        raise TorchRuntimeError(message)  # torch lets an empty index of any integer dtype through
    return index


def check_range(index: Tensor, size: object, dim: int, *, unique_along: int | None = None) -> None:
    """torch's error for an index value outside ``[0, size)`` (when the values are known); with
    ``unique_along``, refuse repeated targets (``scatter``'s written value would be unspecified)."""
    values = known_values(index)
    if values is None or not isinstance(size, int) or values.size == 0:
        return
    bad = values[(values < 0) | (values >= size)]
    if bad.size:
        raise TorchRuntimeError(
            f"index {int(bad.reshape(-1)[0])} is out of bounds for dimension {dim} with size {size}"
        )
    if unique_along is not None:
        grid = np.indices(values.shape if values.ndim else (1,)).reshape(max(values.ndim, 1), -1)
        grid[unique_along if values.ndim else 0] = values.reshape(-1)
        if len({tuple(column) for column in grid.T.tolist()}) < values.size:
            raise UnsupportedError(
                "scatter with a repeated index along dim writes one of the values, and torch leaves which one "
                "unspecified; use scatter_add (or scatter_reduce) for repeated indices"
            )


# ── torch's index functions (the Tensor methods call these) ────────────────
def narrow(t: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """``t.narrow(dim, start, length)``: ``length`` entries from ``start`` (a symbolic size may be narrowed)."""
    if not t.shape:
        raise TorchRuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    axis, start = normalize_dim(dim, t.ndim), as_int(start, "narrow()'s start")
    length = as_dim(length)  # a symbolic length narrows a symbolic size: W.narrow(0, 1, n - 1)
    size = t.shape[axis]
    if isinstance(size, int) and isinstance(length, int):
        if not -size <= start <= size:
            raise TorchIndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
        start = start + size if start < 0 else start
        if length < 0:
            raise TorchRuntimeError("narrow(): length must be non-negative.")
        if start + length > size:
            raise TorchRuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    elif start < 0:
        start = size + start
    return t.apply_op("narrow", t, dim=axis, start=start, length=length)


def select(t: Tensor, dim: int, index: Any) -> Tensor:
    """``t.select(dim, index)``: ``t[:, ..., index]`` with ``index`` at ``dim``."""
    if not t.shape:
        raise TorchIndexError("select() cannot be applied to a 0-dim tensor.")
    axis, index = normalize_dim(dim, t.ndim), as_int(index, "select()'s index")
    size = t.shape[axis]
    if isinstance(size, int) and not -size <= index < size:
        raise TorchIndexError(
            f"select(): index {index} out of range for tensor of size {list(t.shape)} at dimension {dim}"
        )
    return t[(slice(None),) * axis + (index,)]


def split(t: Tensor, split_size: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """``torch.split``: slices of ``split_size`` along ``dim`` (the last may be shorter), or of the sizes listed."""
    if not t.shape:
        raise TorchRuntimeError("split expects at least a 1-dimensional tensor")
    axis = normalize_dim(dim, t.ndim)
    return _pieces(t, axis, split_sizes(t.shape[axis], split_size, axis, t.shape))


def chunk(t: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``torch.chunk``: at most ``chunks`` slices of equal size along ``dim`` (the last may be shorter)."""
    if not t.shape:
        raise TorchRuntimeError("chunk expects at least a 1-dimensional tensor")
    axis = normalize_dim(dim, t.ndim)
    return _pieces(t, axis, chunk_sizes(t.shape[axis], int(chunks), axis, t.shape))


def _pieces(t: Tensor, axis: int, sizes: list[int]) -> tuple[Tensor, ...]:
    pieces, start = [], 0
    for size in sizes:
        pieces.append(t[(slice(None),) * axis + (slice(start, start + size),)])
        start += size
    return tuple(pieces)


def unbind(t: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """``torch.unbind``: the slices at each position of ``dim``, that dim removed."""
    axis = normalize_dim(dim, t.ndim)
    size = require_concrete(t.shape[axis : axis + 1], "unbind")[0]
    return tuple(t.apply_op("index", t, index=(slice(None),) * axis + (i,), via="unbind") for i in range(size))


def index_select(t: Tensor, dim: int, index: Any) -> Tensor:
    """``torch.index_select``: the entries at the positions of a 1-D index along ``dim``."""
    index = index_tensor(index, "index_select(): Expected dtype int32 or int64 for index")
    if len(index.shape) > 1:
        raise TorchIndexError("index_select(): Index is supposed to be a vector")
    axis = normalize_dim(dim, t.ndim)
    values, size = known_values(index), (t.shape[axis] if t.shape else 1)
    if values is not None and isinstance(size, int) and ((values < 0) | (values >= size)).any():
        raise TorchIndexError("index out of range in self")
    flat = index if index.shape else index.reshape(1)
    return take(t.reshape(1), 0, flat).reshape() if not t.shape else take(t, axis, flat)


def gather(t: Tensor, dim: int, index: Any) -> Tensor:
    """``torch.gather``: ``out[i][j] = t[index[i][j]][j]`` for ``dim`` 0."""
    index = index_tensor(index, "gather(): Expected dtype int32/int64 for index")
    axis = normalize_dim(dim, t.ndim)
    out = t.apply_op("gather", t, index, dim=axis)
    check_range(index, t.shape[axis] if t.shape else 1, axis)
    return out


def scatter(t: Tensor, dim: int, index: Any, src: Any, reduce: str | None = None) -> Tensor:
    """``torch.scatter``: ``src`` (a tensor, or a number) written at ``index``; repeated targets are refused."""
    if reduce is not None:
        if reduce != "add":
            raise UnsupportedError(f"scatter(reduce={reduce!r}) is not supported; use reduce='add' (scatter_add)")
        return scatter_add(t, dim, index, src)
    index = index_tensor(index, "scatter(): Expected dtype int32/int64 for index")
    source = src if is_tensor(src) else t.apply_op("full", shape=tuple(index.shape), value=src)
    axis = normalize_dim(dim, t.ndim)
    out = t.apply_op("scatter", t, index, source, dim=axis)
    check_range(index, t.shape[axis] if t.shape else 1, axis, unique_along=axis)
    return out


def scatter_add(t: Tensor, dim: int, index: Any, src: Any) -> Tensor:
    """``torch.scatter_add``: ``src`` added at ``index`` (repeated targets add up)."""
    index = index_tensor(index, "scatter(): Expected dtype int32/int64 for index")
    axis = normalize_dim(dim, t.ndim)
    out = t.apply_op("scatter_add", t, index, src, dim=axis)
    check_range(index, t.shape[axis] if t.shape else 1, axis)
    return out


def take_along_dim(t: Tensor, indices: Any, dim: int | None = None) -> Tensor:
    """``torch.take_along_dim``: gather after broadcasting ``t`` and ``indices`` (negative indices from the end)."""
    indices = index_tensor(indices, "torch.take_along_dim(): dtype of indices should be Long but got Float")
    if indices.dtype != "int64":
        raise TorchRuntimeError("torch.take_along_dim(): dtype of indices should be Long but got Int")
    if dim is None:
        return take(t.reshape(-1), 0, _from_zero(indices.reshape(-1), numel(t.shape)))
    axis = normalize_dim(dim, t.ndim)
    if t.ndim != indices.ndim:
        raise TorchRuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of dimensions, but got "
            f"{t.ndim} dimensions for input, and {indices.ndim} dimensions for indices"
        )
    wanted = [*t.shape[:axis], indices.shape[axis] if t.shape else 1, *t.shape[axis + 1 :]]
    shape = broadcast_shapes(tuple(wanted), indices.shape)
    source = (*shape[:axis], *t.shape[axis : axis + 1], *shape[axis + 1 :])
    picked = indices if indices.shape == shape else indices.expand(*shape)
    whole = t if tuple(t.shape) == source else t.expand(*source)
    return gather(whole, axis, _from_zero(picked, t.shape[axis] if t.shape else 1))


def _from_zero(indices: Tensor, size: Any) -> Tensor:
    """Indices counted from 0 (take_along_dim takes negative ones from the end; gather does not)."""
    values = known_values(indices)
    if values is None or not (values < 0).any() or not isinstance(size, int):
        return indices
    return int_constant(indices, values % max(size, 1))


def note_index_range(index: Tensor, rows: Any) -> None:
    """Note that the symbolic integer tensors whose entries ``index`` holds (through views, slices, joins and
    ``where``) index ``rows`` rows: a proof at concrete sizes then picks their values in ``[0, rows)``."""
    from .dtypes import is_floating
    from .graph import topological_all

    nodes = topological_all([index])
    if not all(n.op is None or n.op.has("layout") or n.op.name in ("where", "cat") for n in nodes):
        return
    for node in nodes:
        if node.kind == "symbol" and not is_floating(node.dtype) and getattr(node, "classes", None) is None:
            node.classes = rows
