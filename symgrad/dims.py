"""Shapes: concrete sizes (ints) or symbolic dimensions (SymPy symbols).

>>> n, m = dims("n m")
>>> format_shape((n, 2))
'n×2'
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Union

import sympy

from .errors import ShapeError, SymbolicShapeError

Dim = Union[int, sympy.Expr]
Shape = tuple[Dim, ...]


def dims(names: str) -> tuple[sympy.Symbol, ...]:
    """Symbolic dimensions, one per name: ``k, n = dims("k n")``."""
    symbols = tuple(sympy.Symbol(name, integer=True, positive=True) for name in names.replace(",", " ").split())
    if not symbols:
        raise ValueError("dims() needs at least one name")
    return symbols


def as_dim(value: object) -> Dim:
    """Normalise one size: Python/SymPy integers become int, symbols stay symbols."""
    if isinstance(value, bool):
        raise ShapeError(f"a size must be an integer or a dimension symbol, not {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, sympy.Integer):
        return int(value)
    if isinstance(value, sympy.Expr) and value.is_integer is not False and value.free_symbols:
        return value
    if isinstance(value, str) and value.isidentifier():
        return dims(value)[0]
    raise ShapeError(f"a size must be an integer or a dimension symbol, not {value!r}")


def as_shape(shape: Iterable[object] | int) -> Shape:
    """Normalise a shape given as an int, a tuple of ints/symbols or a torch.Size-like."""
    if isinstance(shape, int):
        return (shape,)
    return tuple(as_dim(d) for d in shape)


def is_concrete(shape: Shape) -> bool:
    return all(isinstance(d, int) for d in shape)


def require_concrete(shape: Shape, what: str) -> tuple[int, ...]:
    if not is_concrete(shape):
        raise SymbolicShapeError(
            f"{what} needs concrete sizes, but the shape is {format_shape(shape)}; "
            "use the matrix-form engine for symbolic dimensions"
        )
    return tuple(int(d) for d in shape)  # type: ignore[arg-type]


def numel(shape: Shape) -> Dim:
    out: Dim = 1
    for d in shape:
        out = out * d
    return out


def format_shape(shape: Shape) -> str:
    """``(1, 2)`` → ``1×2``; a 0-d shape is ``scalar``."""
    return "×".join(str(d) for d in shape) if shape else "scalar"


def torch_size(shape: Shape) -> str:
    """The way torch prints a shape: ``torch.Size([1, 2])``."""
    return f"torch.Size([{', '.join(str(d) for d in shape)}])"


def normalize_dim(dim: int, ndim: int) -> int:
    """A possibly negative dim as an index, with torch's error when out of range."""
    low, high = -max(ndim, 1), max(ndim, 1) - 1
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, not {type(dim).__name__}")
    if dim < low or dim > high:
        raise IndexError(f"Dimension out of range (expected to be in range of [{low}, {high}], but got {dim})")
    return dim % max(ndim, 1)


def normalize_dims(dim: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """``dim`` of a reduction as sorted, non-negative axes; None means all."""
    if dim is None:
        return tuple(range(ndim))
    items = (dim,) if isinstance(dim, int) else tuple(dim)
    axes = tuple(sorted({normalize_dim(d, ndim) for d in items}))
    if len(axes) != len(items):
        raise RuntimeError(f"dim {tuple(items)} appears multiple times in the list of dims")
    return axes


def broadcast_shapes(a: Shape, b: Shape) -> Shape:
    """torch's broadcasting rule, with torch's message when it fails."""
    ndim = max(len(a), len(b))
    pa = (1,) * (ndim - len(a)) + tuple(a)
    pb = (1,) * (ndim - len(b)) + tuple(b)
    out: list[Dim] = []
    for axis, (da, db) in enumerate(zip(pa, pb)):
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            raise ShapeError(
                f"The size of tensor a ({da}) must match the size of tensor b ({db}) "
                f"at non-singleton dimension {axis} (shapes {format_shape(a)} and {format_shape(b)})"
            )
    return tuple(out)


def reshape_target(shape: Shape, target: Sequence[object]) -> Shape:
    """Resolve a reshape target (one -1 allowed) against the source shape."""
    new = [d if isinstance(d, int) and d == -1 else as_dim(d) for d in target]
    if sum(1 for d in new if isinstance(d, int) and d == -1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    total = numel(shape)
    known = numel(tuple(d for d in new if not (isinstance(d, int) and d == -1)))
    if any(isinstance(d, int) and d == -1 for d in new):
        if known == 0 or sympy.simplify(total % known if is_concrete((total, known)) else 0) != 0:
            raise ShapeError(f"shape '[{', '.join(map(str, target))}]' is invalid for input of size {total}")
        inferred = sympy.simplify(total / known) if not is_concrete((total, known)) else total // known
        new = [as_dim(inferred) if isinstance(d, int) and d == -1 else d for d in new]
    if sympy.simplify(numel(tuple(new)) - total) != 0:
        raise ShapeError(f"shape '[{', '.join(map(str, target))}]' is invalid for input of size {total}")
    return tuple(new)


def prod(values: Iterable[int]) -> int:
    return math.prod(values)


def same_dim(a: Dim, b: Dim) -> bool:
    return a == b or (not isinstance(a, int) or not isinstance(b, int)) and sympy.simplify(a - b) == 0


def matmul_shape(a: Shape, b: Shape, *, strict_2d: bool = False) -> Shape:
    """Output shape of ``torch.matmul`` (or ``torch.mm`` when ``strict_2d``), torch's errors included."""
    if strict_2d:
        if len(a) != 2:
            raise ShapeError(f"self must be a matrix (got shape {format_shape(a)})")
        if len(b) != 2:
            raise ShapeError(f"mat2 must be a matrix (got shape {format_shape(b)})")
    if not a or not b:
        raise ShapeError(
            f"both arguments to matmul need to be at least 1D, but they are {len(a)}D and {len(b)}D "
            f"(shapes {format_shape(a)} and {format_shape(b)})"
        )
    a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
    b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
    if not same_dim(a2[-1], b2[-2]):
        if len(a) == 1 and len(b) == 1:
            raise ShapeError(
                f"inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to have the same "
                f"number of elements, but got {a[0]} and {b[0]} elements respectively"
            )
        left = "x".join(map(str, a2[-2:])) if len(a) > 1 else f"1x{a[0]}"
        right = "x".join(map(str, b2[-2:])) if len(b) > 1 else f"{b[0]}x1"
        raise ShapeError(f"mat1 and mat2 shapes cannot be multiplied ({left} and {right})")
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out
