"""Shape and layout: transposes, reshapes, joining and splitting, indexing by integer tensors, triangles,
diagonals and padding.

``cat`` is one op with any number of inputs (its VJP narrows the gradient back into pieces);
``gather`` and ``scatter_add`` carry index_select, take_along_dim and advanced indexing; padding
is a ``pad`` op (constant) or a ``cat`` of slices of the input (reflect, replicate, circular), so
each gradient sums what torch's sums, also where an entry is copied several times.

>>> import symgrad.torch as torch
>>> x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], name="x")
>>> torch.cat([x, x[:1]]).tolist(), torch.index_select(x, 1, torch.tensor([1, 1])).tolist()
([[1.0, 2.0], [3.0, 4.0], [1.0, 2.0]], [[2.0, 2.0], [4.0, 4.0]])
>>> torch.nn.functional.pad(x, (1, 0), mode="reflect").tolist()
[[2.0, 1.0, 2.0], [4.0, 3.0, 4.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.constructors import tensor
from ..core.dims import normalize_dim, numel
from ..core.errors import ShapeError, TorchNotImplementedError, TorchRuntimeError, TorchValueError, UnsupportedError
from ..core.tensor import Tensor, apply


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    return input.transpose(dim0, dim1)


def t(input: Tensor) -> Tensor:
    return input.t()


def permute(input: Tensor, dims: Any) -> Tensor:
    return input.permute(dims)


def reshape(input: Tensor, shape: Any) -> Tensor:
    return input.reshape(shape)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    return input.unsqueeze(dim)


def squeeze(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    return input.squeeze(dim)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    return input.flatten(start_dim, end_dim)


def ravel(input: Tensor) -> Tensor:
    return input.ravel()


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    return input.unflatten(dim, sizes)


def flip(input: Tensor, dims: Any) -> Tensor:
    return input.flip(dims)


def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    return input.roll(shifts, dims)


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None) -> Tensor:
    return input.diff(n, dim, prepend, append)


# ── joining and splitting ──────────────────────────────────────────────────
def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors joined along ``dim``. As in torch, a 1-D empty tensor (shape ``(0,)``) joins anything."""
    tensors = list(tensors)
    if not tensors:
        raise TorchValueError("torch.cat(): expected a non-empty list of Tensors")
    for position, part in enumerate(tensors):
        if not part.shape:
            raise TorchRuntimeError(f"zero-dimensional tensor (at position {position}) cannot be concatenated")
    kept = [part for part in tensors if tuple(part.shape) != (0,)] or tensors
    return apply("cat", *kept, dim=normalize_dim(dim, len(kept[0].shape)))


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors (all of one shape) joined along a new dimension ``dim``."""
    tensors = list(tensors)
    if not tensors:
        raise TorchRuntimeError("stack expects a non-empty TensorList")
    for position, part in enumerate(tensors[1:], start=1):
        if tuple(part.shape) != tuple(tensors[0].shape):
            raise ShapeError(
                f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at entry 0 and "
                f"{list(part.shape)} at entry {position}"
            )
    axis = normalize_dim(dim, len(tensors[0].shape) + 1)
    return apply("cat", *(part.unsqueeze(axis) for part in tensors), dim=axis)


def split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    return tensor.split(split_size_or_sections, dim)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    return input.chunk(chunks, dim)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    return input.unbind(dim)


def narrow(input: Tensor, dim: int, start: Any, length: int) -> Tensor:
    return input.narrow(dim, start, length)


def select(input: Tensor, dim: int, index: Any) -> Tensor:
    return input.select(dim, index)


# ── indexing by integer tensors ────────────────────────────────────────────
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    return input.index_select(dim, index)


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    return input.gather(dim, index)


def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, value: Any = None, *, reduce: Any = None):
    return input.scatter(dim, index, src, value, reduce=reduce)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    return input.scatter_add(dim, index, src)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    return input.take_along_dim(indices, dim)


def index_put(input: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    return input.index_put(indices, values, accumulate)


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    return input.masked_fill(mask, value)


# ── triangles and diagonals ────────────────────────────────────────────────
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    return input.tril(diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    return input.triu(diagonal)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    return input.diagonal(offset, dim1, dim2)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    return input.diag(diagonal)


# ── padding (torch.nn.functional.pad) ──────────────────────────────────────
_SUPPORTED = (
    "Supported combinations for non-constant padding:\n"
    "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
    "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
    "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
)


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """``torch.nn.functional.pad``: ``pad`` is (left, right) of the last dim, then of the one before, ...;
    negative widths crop. Modes ``constant`` (with ``value``), ``reflect``, ``replicate`` and ``circular``."""
    if any(not isinstance(w, int) and getattr(w, "free_symbols", None) for w in pad):
        raise UnsupportedError("pad() by a symbolic size is not supported; pad by fixed widths")
    widths = [int(w) for w in pad]
    shape, ndim = list(input.shape), len(input.shape)
    if len(widths) % 2:
        raise TorchRuntimeError("Padding length must be divisible by 2")
    if len(widths) // 2 > ndim:
        raise TorchRuntimeError(
            "Padding length should be less than or equal to two times the input dimension but got padding length "
            f"{len(widths)} and input of dimension {ndim}"
        )
    pairs = [(0, 0)] * (ndim - len(widths) // 2) + [(widths[k], widths[k + 1]) for k in range(len(widths) - 2, -1, -2)]
    if mode == "constant":
        return apply("pad", input, widths=tuple(pairs), value=0 if value is None else value)
    if mode not in _EDGES:
        raise TorchNotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise TorchRuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    padded = len(widths) // 2
    if ndim not in (padded + 1, padded + 2):
        raise TorchNotImplementedError(
            f"Padding size {len(widths)} is not supported for {ndim}D input tensor.\n{_SUPPORTED}"
        )
    axes = list(range(ndim - padded, ndim))
    _check_edges(mode, shape, pairs, axes, batched=ndim == padded + 2)
    out = input
    for axis in axes:
        low, high = pairs[axis]
        out = _EDGES[mode](out, axis, low, high) if low >= 0 and high >= 0 else _mapped(mode, out, axis, low, high)
    return out


def _check_edges(mode: str, shape: list, pairs: list, axes: list[int], batched: bool) -> None:
    """torch's checks of reflect, replicate and circular padding, in torch's order."""
    known = lambda *values: all(isinstance(v, int) for v in values)  # noqa: E731 - symbolic sizes pass
    sizes = {axis: shape[axis] + sum(pairs[axis]) for axis in axes}
    if mode == "circular":
        for axis in axes:
            if known(shape[axis]) and max(pairs[axis]) > shape[axis]:
                raise TorchRuntimeError("Padding value causes wrapping around more than once.")
            if known(sizes[axis]) and sizes[axis] < 0:
                raise TorchRuntimeError("Negative padding value is resulting in an empty dimension")
        return
    if any(size == 0 for axis, size in enumerate(shape) if not (batched and axis == 0)):
        raise TorchRuntimeError(
            f"Expected {len(axes) + 1}D or {len(axes) + 2}D (batch mode) tensor with possibly 0 batch size and other "
            f"non-zero dimensions for input, but got: {shape}"
        )
    for position, axis in enumerate(reversed(axes)):
        if mode == "reflect" and known(shape[axis]) and max(pairs[axis]) >= shape[axis]:
            raise TorchRuntimeError(
                f"Argument #{4 + 2 * position}: Padding size should be less than the corresponding input dimension, "
                f"but got: padding {pairs[axis]} at dimension {axis} of input {shape}"
            )
    if len(axes) == 1 and known(sizes[axes[0]]) and sizes[axes[0]] < 1:
        raise TorchRuntimeError(f"input (W: {shape[axes[0]]}) is too small. Calculated output W: {sizes[axes[0]]}")
    for size in sizes.values():
        if known(size) and size < 0:
            wanted = [sizes.get(a, d) for a, d in enumerate(shape)]
            raise TorchRuntimeError(f"Trying to create tensor with negative dimension {size}: {wanted}")


def _along(x: Tensor, axis: int, start: int | None, stop: int | None) -> Tensor:
    return x[(slice(None),) * axis + (slice(start, stop),)]


def _join(axis: int, parts: list[Tensor | None]) -> Tensor:
    kept = [p for p in parts if p is not None]
    return kept[0] if len(kept) == 1 else apply("cat", *kept, dim=axis)


def _reflect(x: Tensor, axis: int, low: int, high: int) -> Tensor:
    left = _along(x, axis, 1, low + 1).flip(axis) if low > 0 else None
    right = _along(x, axis, -1 - high, -1).flip(axis) if high > 0 else None
    return _join(axis, [left, x, right])


def _replicate(x: Tensor, axis: int, low: int, high: int) -> Tensor:
    def edge(start: int, stop: int | None, count: int) -> Tensor | None:
        if count <= 0:
            return None
        piece = _along(x, axis, start, stop)
        return piece.expand(*(count if a == axis else d for a, d in enumerate(piece.shape)))

    return _join(axis, [edge(0, 1, low), x, edge(-1, None, high)])


def _circular(x: Tensor, axis: int, low: int, high: int) -> Tensor:
    left = _along(x, axis, -low, None) if low > 0 else None
    right = _along(x, axis, 0, high) if high > 0 else None
    return _join(axis, [left, x, right])


def _mapped(mode: str, x: Tensor, axis: int, low: int, high: int) -> Tensor:
    """Padding that also crops (a negative width): each output position picks the input position torch reads."""
    size = x.shape[axis]
    if not isinstance(size, int):
        raise UnsupportedError(
            f"{mode} padding with a negative width of the symbolic dimension {size} is not supported"
        )
    count = size + low + high
    if not numel(x.shape):  # nothing to read: only the shape matters
        widths = tuple((low, high) if a == axis else (0, 0) for a in range(len(x.shape)))
        return apply("pad", x, widths=widths, value=0)
    if mode == "reflect":
        positions = [abs(o - low) if o - low < size else 2 * (size - 1) - (o - low) for o in range(count)]
    elif mode == "replicate":
        positions = [min(max(o - low, 0), size - 1) for o in range(count)]
    else:  # circular: the cropped input, wrapped
        kept, start = size + min(low, 0) + min(high, 0), max(-low, 0)
        if count and (kept <= 0 or max(low, high) > kept):
            raise UnsupportedError(
                f"circular padding {(low, high)} wraps around more than the {max(kept, 0)} entries left after "
                "cropping (torch then reads entries it never wrote); crop and pad in two steps"
            )
        positions = [start + (o - max(low, 0)) % kept for o in range(count)] if count else []
    return x.index_select(axis, tensor(positions, dtype="int64"))


_EDGES = {"reflect": _reflect, "replicate": _replicate, "circular": _circular}


def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy of ``input``: the same numbers, the gradient passing through."""
    return input.clone()


__all__ = [
    "cat", "chunk", "clone", "concat", "concatenate", "diag", "diagonal", "diff", "flatten", "flip", "gather",
    "index_put", "index_select", "masked_fill", "narrow", "permute", "ravel", "reshape", "roll", "scatter",
    "scatter_add", "select", "split", "squeeze", "stack", "t", "take_along_dim", "transpose", "tril", "triu",
    "unbind", "unflatten", "unsqueeze",
]  # fmt: skip
