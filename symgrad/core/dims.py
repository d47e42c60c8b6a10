"""Shapes: concrete sizes (ints) or symbolic dimensions (SymPy symbols).

>>> n, m = dims("n m")
>>> format_shape((n, 2))
'n×2'
"""

from __future__ import annotations

import functools
import math
import unicodedata
from collections.abc import Iterable, Sequence
from numbers import Integral

import sympy

from .errors import ShapeError, SymbolicShapeError, TorchIndexError, TorchTypeError, TorchValueError

Dim = int | sympy.Expr
Shape = tuple[Dim, ...]


def dims(names: str) -> tuple[sympy.Symbol, ...]:
    """Symbolic dimensions, one per name: ``k, n = dims("k n")``."""
    spelled = unicodedata.normalize("NFKC", names).replace(",", " ").split()  # as Python reads identifiers
    symbols = tuple(sympy.Symbol(name, integer=True, positive=True) for name in spelled)
    if not symbols:
        raise TorchValueError("dims() needs at least one name")
    return symbols


def as_dim(value: object) -> Dim:
    """Normalise one size: Python/SymPy integers become int, symbols stay symbols."""
    if isinstance(value, bool):
        raise ShapeError(f"a size must be an integer or a dimension symbol, not {value!r}")
    if isinstance(value, Integral):  # Python and NumPy integers
        return int(value)
    if isinstance(value, sympy.Integer):
        return int(value)
    if isinstance(value, sympy.Expr) and value.is_integer is not False and value.free_symbols:
        return value
    if isinstance(value, str) and value.isidentifier():
        return dims(value)[0]
    raise ShapeError(f"a size must be an integer or a dimension symbol, not {value!r}")


def as_shape(shape: Iterable[object] | int) -> Shape:
    """Normalise a shape given as an int, a tuple of ints/symbols or a torch.Size-like."""
    out = (as_dim(shape),) if isinstance(shape, Integral) else tuple(as_dim(d) for d in shape)
    for d in out:
        if isinstance(d, int) and d < 0:
            raise ShapeError(f"Trying to create tensor with negative dimension {d}: [{', '.join(map(str, out))}]")
    return out


def is_unit(d: object) -> bool:
    """Whether a size is 1 (a symbolic size is not known to be)."""
    return isinstance(d, int) and d == 1


def sized_axes(shape: Shape) -> list[tuple[int, Dim]]:
    """``(axis, size)`` of the dims whose size is not 1: ``[(0, n), (2, d)]`` for ``(n, 1, d)``."""
    return [(axis, d) for axis, d in enumerate(shape) if not is_unit(d)]


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
    if not isinstance(dim, Integral) or isinstance(dim, bool):
        raise TorchTypeError(f"dim must be an int, not {type(dim).__name__}")
    dim = int(dim)
    if dim < low or dim > high:
        raise TorchIndexError(f"Dimension out of range (expected to be in range of [{low}, {high}], but got {dim})")
    return dim % max(ndim, 1)


def normalize_dims(dim: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """``dim`` of a reduction as sorted, non-negative axes; None (or an empty list, as in torch) means all."""
    if dim is None:
        return tuple(range(ndim))
    items = (dim,) if isinstance(dim, Integral) else tuple(dim)
    if not items:
        return tuple(range(ndim))
    seen: list[int] = []
    for d in items:
        axis = normalize_dim(d, ndim)
        if axis in seen:
            raise ShapeError(f"dim {axis} appears multiple times in the list of dims")
        seen.append(axis)
    return tuple(sorted(seen))


def broadcast_shapes(a: Shape, b: Shape) -> Shape:
    """torch's broadcasting rule, with torch's message when it fails (the last mismatching dimension)."""
    ndim = max(len(a), len(b))
    pa = (1,) * (ndim - len(a)) + tuple(a)
    pb = (1,) * (ndim - len(b)) + tuple(b)
    out: list[Dim] = []
    for axis in reversed(range(ndim)):
        da, db = pa[axis], pb[axis]
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            raise ShapeError(
                f"The size of tensor a ({da}) must match the size of tensor b ({db}) "
                f"at non-singleton dimension {axis} (shapes {format_shape(a)} and {format_shape(b)})"
            )
    return tuple(reversed(out))


def reshape_target(shape: Shape, target: Sequence[object]) -> Shape:
    """Resolve a reshape target (one -1 allowed) against the source shape, with torch's errors."""
    shown = f"[{', '.join(map(str, target))}]"
    new: list = []
    infer: int | None = None
    for position, d in enumerate(target):
        if isinstance(d, Integral) and not isinstance(d, bool) and d < 0:
            if d != -1:
                raise ShapeError(f"invalid shape dimension {d} at index {position} of shape {shown}")
            if infer is not None:
                raise ShapeError("only one dimension can be inferred")
            infer = position
            new.append(-1)
        else:
            new.append(as_dim(d))
    total = numel(shape)
    if infer is not None:
        known = numel(tuple(d for i, d in enumerate(new) if i != infer))
        if known == 0:
            if total == 0:
                raise ShapeError(
                    f"cannot reshape tensor of 0 elements into shape {shown} because the unspecified dimension size "
                    "-1 can be any value and is ambiguous"
                )
            raise ShapeError(f"shape '{shown}' is invalid for input of size {total}")
        if is_concrete((total, known)):
            if total % known != 0:
                raise ShapeError(f"shape '{shown}' is invalid for input of size {total}")
            inferred: Dim = total // known
        else:
            inferred = sympy.simplify(total / known)
        new[infer] = as_dim(inferred)
    if sympy.simplify(numel(tuple(new)) - total) != 0:
        raise ShapeError(f"shape '{shown}' is invalid for input of size {total}")
    return tuple(new)


def stood_in(shape: Sequence[object], mapping: dict[int, int]) -> tuple:
    """``shape`` with each fixed size in ``mapping`` replaced by its stand-in, inside symbolic sizes too (a proof
    checks a rule at small sizes in place of large ones an architecture fixes).

    >>> m = sympy.Symbol("m")
    >>> stood_in((2, 64 * m, 50257), {64: 4, 50257: 5})
    (2, 4*m, 5)
    """
    replacements = {sympy.Integer(k): sympy.Integer(v) for k, v in mapping.items()}
    return tuple(
        mapping.get(d, d)
        if isinstance(d, Integral)
        else d.xreplace(replacements)
        if isinstance(d, sympy.Expr) and replacements
        else d
        for d in shape
    )


def reshape_at_stand_ins(mapping: dict[int, int], source: Shape, shape: Sequence[object]) -> tuple:
    """A reshape's target at stand-in sizes (a proof checks a rule at small sizes in place of large fixed ones): its
    sizes replaced as the source's are where that keeps the count of entries; else each run of source dims merged
    into one target dim takes the product of their stand-ins, and a dim split into several keeps the split where the
    stand-ins still multiply out, else puts its stand-in first.

    >>> reshape_at_stand_ins({64: 4, 50257: 5}, (2, 64, 50257), (128, 50257))
    (8, 5)
    >>> reshape_at_stand_ins({64: 4, 768: 3}, (2, 64, 768), (2, 64, 12, 64))
    (2, 4, 3, 1)
    """
    target = reshape_target(source, shape)
    small_source, replaced = stood_in(source, mapping), stood_in(target, mapping)
    if same_dim(numel(replaced), numel(small_source)):
        return replaced
    if not all(isinstance(d, int) for d in (*source, *target)) or 0 in source:
        raise ShapeError(f"no stand-in for the reshape of {format_shape(source)} as {format_shape(target)}")
    new: list[int] = []
    for ins, outs in reshape_runs(tuple(source), tuple(target)):
        small = math.prod(small_source[k] for k in ins)
        if len(outs) == 1:
            new.append(small)
            continue
        split = [replaced[k] for k in outs]
        if math.prod(split) != small:  # heads split from a width: the rule reads no split, so the stand-in need not
            split = [small] + [1] * (len(outs) - 1)
        new.extend(split)
    return tuple(new)


def reshape_runs(source: tuple[int, ...], target: tuple[int, ...]) -> list[tuple[list[int], list[int]]]:
    """The shortest runs of source and target positions with equal products, in order (a size-1 dim alone)."""
    runs: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(source) or j < len(target):
        if i < len(source) and source[i] == 1 and (j >= len(target) or target[j] != 1):
            runs.append(([i], []))
            i += 1
            continue
        if j < len(target) and target[j] == 1 and (i >= len(source) or source[i] != 1):
            runs.append(([], [j]))
            j += 1
            continue
        ins, outs, a, b = [i], [j], source[i], target[j]
        i, j = i + 1, j + 1
        while a != b:
            if a < b:
                a, i = a * source[i], i + 1
                ins.append(i - 1)
            else:
                b, j = b * target[j], j + 1
                outs.append(j - 1)
        runs.append((ins, outs))
    return runs


def count(shape: Shape, dim: Sequence[int]) -> Dim:
    """How many entries a reduction over ``dim`` adds up (an int or a SymPy product of dims)."""
    total = sympy.Integer(1)
    for axis in dim:
        if axis < len(shape):  # torch lets a 0-d tensor be reduced over dim 0
            total *= shape[axis]
    return int(total) if total.is_Integer else total


def prod(values: Iterable[int]) -> int:
    return math.prod(values)


def same_dim(a: Dim, b: Dim) -> bool:
    """Whether two sizes are equal for every value of their symbols.

    >>> k, n = dims("k n")
    >>> same_dim(2 * k + n, k + n + k), same_dim(k, n)
    (True, False)
    """
    if a == b:
        return True
    if isinstance(a, int) and isinstance(b, int):
        return False
    return _difference_is_zero(a - b)  # at least one is a SymPy expression, so the difference is one


@functools.lru_cache(maxsize=4096)
def _difference_is_zero(difference: sympy.Expr) -> bool:
    # expand settles the polynomial sizes that shapes are made of; simplify only what expand leaves (floor, Max).
    expanded = sympy.expand(difference)
    if expanded == 0:
        return True
    if expanded.is_polynomial():
        return False  # a non-zero polynomial is not zero for every value of its symbols
    return sympy.simplify(expanded) == 0


def matmul_shape(a: Shape, b: Shape, *, strict_2d: bool = False) -> Shape:
    """Output shape of ``torch.matmul`` (or ``torch.mm`` when ``strict_2d``), torch's errors included.

    torch's message depends on the kernel ``matmul`` dispatches to (dot, mv, mm on a folded batch, or bmm);
    the messages here follow that dispatch for contiguous tensors that do not require grad. (For batched
    products, torch folds differently when an operand requires grad and may then word a size mismatch as
    an ``mm``/``mv`` error; the shape rule sees shapes only.)

    >>> matmul_shape((2, 3), (4,))
    Traceback (most recent call last):
    ...
    symgrad.ShapeError: size mismatch, got input (2), mat (2x3), vec (4)
    """
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
    da, db = len(a), len(b)
    n = a[-2] if da > 1 else 1
    m1 = a[-1]
    m2 = b[-2] if db > 1 else b[0]
    p = b[-1] if db > 1 else 1

    def mm_error(rows: Dim, inner: Dim, k: Dim, cols: Dim) -> ShapeError:
        return ShapeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{inner} and {k}x{cols})")

    def mv_error(rows: Dim, inner: Dim, k: Dim) -> ShapeError:
        return ShapeError(f"size mismatch, got input ({rows}), mat ({rows}x{inner}), vec ({k})")

    fits = same_dim(m1, m2)
    if da == 1 and db == 1:  # dot
        if not fits:
            raise ShapeError(
                f"inconsistent tensor size, expected tensor [{m1}] and src [{m2}] to have the same "
                f"number of elements, but got {m1} and {m2} elements respectively"
            )
        return ()
    if da <= 2 and db <= 2:  # mv, or mm (a 1-D left operand is a 1×k matrix)
        if not fits:
            raise mv_error(n, m1, m2) if db == 1 else mm_error(n, m1, m2, p)
        return (a[0],) if db == 1 else (b[-1],) if da == 1 else (a[0], b[1])
    if db <= 2:  # batch of a folded into rows: one mm or mv
        if not fits:
            rows = numel(tuple(a[:-1]))
            raise mv_error(rows, m1, m2) if db == 1 else mm_error(rows, m1, m2, p)
        return (*a[:-1], p) if db == 2 else tuple(a[:-1])
    if da == 1 and (m2 == 1 or numel(b) == 0):  # b's batch folded into the rows of b.mT: one mv
        if not fits:
            rows = numel(tuple(b[:-2])) * p
            raise mv_error(rows, m2, m1)
        return (*b[:-2], p)
    batch = broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))  # bmm on broadcast batches
    if not fits:
        size = numel(batch)
        raise ShapeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{size}, {m1}] but got: [{size}, {m2}]."
        )
    return (*batch, n, p) if da > 1 else (*batch, p)
