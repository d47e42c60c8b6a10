"""Indexing by integer tensors: ``gather`` and its two scatters.

``gather`` picks one entry of ``x`` per entry of an int64 index tensor; its VJP is the
linear ``scatter_add`` of the gradient into zeros, whose own VJP is ``gather`` again. The
index is an input of the op (an integer tensor, never differentiated), so it may be a
symbolic int64 leaf: the law then holds for every index, while entries need its values.
index_select, take_along_dim, embedding and advanced indexing are built from these rows.
Each output entry is a plain pick (or a sum of picks), so the Jacobian's work is its non-zeros.

>>> import symgrad as sg
>>> x = sg.tensor([[1.0, 2.0], [3.0, 4.0]], name="x")
>>> i = sg.tensor([[1, 0]], name="i", dtype="int64")
>>> x.gather(0, i).tolist()
[[3.0, 2.0]]
"""

from __future__ import annotations

import numpy as np
import sympy

from ..core.dims import Shape
from ..core.errors import ShapeError, UnsupportedError
from ..core.registry import Op, register
from ..core.tensor import Tensor, apply


def index_values(index: np.ndarray, what: str) -> np.ndarray:
    """The entries of an index tensor as a NumPy int array; refused when they are symbols."""
    flat = [sympy.sympify(v) for v in index.reshape(-1)]
    unknown = [v for v in flat if not v.is_Integer]
    if unknown:
        raise UnsupportedError(
            f"{what} needs the values of its index tensor (it holds {unknown[0]}); give the index values, "
            "or symbolic sizes for the law that holds for every index"
        )
    return np.array([int(v) for v in flat], dtype=np.int64).reshape(index.shape)


def _nonempty(shape: Shape) -> Shape:
    """torch's ``ensure_nonempty``: a 0-d tensor counts as one entry along dim 0."""
    return tuple(shape) if shape else (1,)


def _smaller(a: object, b: object) -> bool:
    return isinstance(a, int) and isinstance(b, int) and a > b


def _gather_shape(x: Shape, index: Shape, dim: int) -> Shape:
    if 0 in index:  # torch checks nothing for an empty index
        return tuple(index)
    if len(_nonempty(x)) != len(_nonempty(index)):
        raise ShapeError("Index tensor must have the same number of dimensions as input tensor")
    for axis, (have, want) in enumerate(zip(_nonempty(x), _nonempty(index))):
        if axis != dim and _smaller(want, have):
            raise ShapeError(
                f"Size does not match at dimension {axis} expected index {list(index)} to be no larger than "
                f"self {list(x)} apart from dimension {dim}"
            )
    return tuple(index)


def _positions(values: np.ndarray, dim: int) -> tuple:
    """NumPy's index of the picked entries: ``values`` along ``dim``, the entry's own position elsewhere."""
    grid = list(np.indices(values.shape, sparse=True))
    grid[dim] = values
    return tuple(grid)


def _check_range(values: np.ndarray, size: int, dim: int) -> None:
    bad = values[(values < 0) | (values >= size)]
    if bad.size:
        raise ShapeError(f"index {int(bad[0])} is out of bounds for dimension {dim} with size {size}")


def _picked(index_entry: sympy.Expr, choices: list) -> sympy.Expr:
    """The choice an index entry whose value is a formula (an argmax's) picks: a case split over its values, nan
    past them (where torch raises an out-of-range error)."""
    return sympy.Piecewise(*((c, sympy.Eq(index_entry, j)) for j, c in enumerate(choices)), (sympy.nan, True))


def _symbolic(index: np.ndarray) -> bool:
    """Whether the index's values are formulas computed from values (an argmax's case split); an index leaf of
    free symbols (any integer at all, out of range too) still needs its values."""
    entries = [sympy.sympify(v) for v in index.reshape(-1)]
    return any(not v.is_Integer for v in entries) and not any(v.is_Symbol for v in entries)


def _gather_by_formulas(x: np.ndarray, index: np.ndarray, dim: int) -> np.ndarray:
    """gather with an index whose values are formulas: each entry a case split over the positions along ``dim``."""
    source, idx = x.reshape(_nonempty(x.shape)), index.reshape(_nonempty(index.shape))
    out = np.empty(idx.shape, dtype=object)
    for position in np.ndindex(*idx.shape):
        choices = [source[(*position[:dim], j, *position[dim + 1 :])] for j in range(source.shape[dim])]
        out[position] = _picked(sympy.sympify(idx[position]), choices)
    return out.reshape(index.shape)


def _scatter_by_formulas(base: np.ndarray, index: np.ndarray, src: np.ndarray, dim: int, add: bool) -> np.ndarray:
    """scatter(_add) with an index whose values are formulas: each target entry adds (or, for scatter, takes) the
    sources whose index equals its position along ``dim``. scatter writes one value per row along ``dim`` only:
    with more, two could meet at one entry, where torch keeps an unspecified one."""
    out, idx = base.reshape(_nonempty(base.shape)), index.reshape(_nonempty(index.shape))
    if not add and idx.shape[dim] > 1:
        raise UnsupportedError(
            "scatter with an index computed from the inputs (an argmax's) and more than one entry along dim: two "
            "could reach one entry, where torch keeps an unspecified one; use scatter_add"
        )
    sources = src.reshape(_nonempty(src.shape))
    result = np.empty(out.shape, dtype=object)
    for target in np.ndindex(*out.shape):
        reaching = [
            (sympy.sympify(idx[p]), sources[p])
            for p in np.ndindex(*idx.shape)
            if all(p[a] == target[a] for a in range(len(p)) if a != dim)
        ]
        hits = [(value, sympy.Eq(i, target[dim])) for i, value in reaching]
        if add:
            result[target] = sympy.Add(out[target], *(sympy.Piecewise((v, c), (0, True)) for v, c in hits))
        else:
            result[target] = sympy.Piecewise(*hits, (out[target], True)) if hits else out[target]
    return result.reshape(base.shape)


def _gather(x: np.ndarray, index: np.ndarray, dim: int) -> np.ndarray:
    if index.size == 0:
        return np.empty(index.shape, dtype=object)
    if _symbolic(index):
        return _gather_by_formulas(x, index, dim)
    values = index_values(index, "gather").reshape(_nonempty(index.shape))
    source = x.reshape(_nonempty(x.shape))
    _check_range(values, source.shape[dim], dim)
    return np.asarray(source[_positions(values, dim)], dtype=object).reshape(index.shape)


def _scatter_shape(base: Shape, index: Shape, src: Shape, dim: int) -> Shape:
    if 0 not in index:
        for other, what in ((base, "self"), (src, "src")):
            if len(_nonempty(other)) != len(_nonempty(index)):
                raise ShapeError(f"Index tensor must have the same number of dimensions as {what} tensor")
        for axis, (b, i, s) in enumerate(zip(_nonempty(base), _nonempty(index), _nonempty(src))):
            if _smaller(i, s) or (axis != dim and _smaller(i, b)):
                raise ShapeError(
                    f"Expected index {list(index)} to be no larger than self {list(base)} apart from dimension "
                    f"{dim} and to be no larger size than src {list(src)}"
                )
    return tuple(base)


def _scatter(base: np.ndarray, index: np.ndarray, src: np.ndarray, dim: int, add: bool) -> np.ndarray:
    if index.size == 0:
        return base.copy()
    if _symbolic(index):
        return _scatter_by_formulas(base, index, src, dim, add)
    values = index_values(index, "scatter_add" if add else "scatter").reshape(_nonempty(index.shape))
    out = base.reshape(_nonempty(base.shape))
    _check_range(values, out.shape[dim], dim)
    sources = src.reshape(_nonempty(src.shape))[tuple(slice(0, n) for n in values.shape)]
    targets = np.ravel_multi_index(np.broadcast_arrays(*_positions(values, dim)), out.shape).reshape(-1)
    if not add and len(set(targets.tolist())) < targets.size:
        raise UnsupportedError(
            "scatter with a repeated index along dim writes one of the values, and torch leaves which one "
            "unspecified; use scatter_add (or scatter_reduce) for repeated indices"
        )
    terms: list[list] = [[entry] if add else [] for entry in out.reshape(-1)]
    for target, entry in zip(targets.tolist(), sources.reshape(-1)):
        terms[target] = [*terms[target], entry] if add else [entry]
    flat = [sympy.Add(*t) if t else entry for t, entry in zip(terms, out.reshape(-1))]
    result = np.empty(len(flat), dtype=object)
    result[:] = flat
    return result.reshape(base.shape)


def _source_grad(g: Tensor, index: Tensor, src: Tensor, dim: int) -> Tensor:
    """``g.gather(dim, index)``, as torch's rule, zero-padded where ``src`` is larger than ``index``
    (torch itself raises there: its rule gives a gradient of the index's shape)."""
    picked = apply("gather", g, index, dim=dim)
    widths = tuple((0, s - i) for s, i in zip(src.shape, index.shape))
    if len(src.shape) != len(index.shape) or not any(isinstance(w, int) and w > 0 for _, w in widths):
        return picked
    return apply("pad", picked, widths=widths, value=0)


def _is_fill(t: Tensor) -> bool:
    return t.op is not None and t.op.name == "full"


def _zeros(shape: Shape) -> Tensor:
    return apply("full", shape=tuple(shape), value=0)


register(
    Op(
        "gather",
        _gather_shape,
        _gather,
        lambda torch, x, index, dim: torch.gather(x, dim, index.long()),
        "torch.gather({0}, {dim}, {1})",
        r"\operatorname{{gather}}_{{{dim}}}\left({0}, {1}\right)",
        "GatherBackward0",
        vjp=lambda g, out, x, index, dim: (apply("scatter_add", _zeros(x.shape), index, g, dim=dim), None),
        tags=frozenset({"layout", "linear"}),
        indexes=lambda x, index, dim: [(x.shape[dim], index)] if x.ndim else [],
    )
)
register(
    Op(
        "scatter_add",
        _scatter_shape,
        lambda base, index, src, dim: _scatter(base, index, src, dim, add=True),
        lambda torch, base, index, src, dim: torch.scatter_add(base, dim, index.long(), src),
        "{0}.scatter_add({dim}, {1}, {2})",
        r"\operatorname{{scatter\_add}}_{{{dim}}}\left({0}, {1}, {2}\right)",
        "ScatterAddBackward0",
        vjp=lambda g, out, base, index, src, dim: (g, None, _source_grad(g, index, src, dim)),
        tags=frozenset({"linear"}),
        indexes=lambda base, index, src, dim: [(base.shape[dim], index)] if base.ndim else [],
    )
)
register(
    Op(
        "scatter",
        _scatter_shape,
        lambda base, index, src, dim: _scatter(base, index, src, dim, add=False),
        lambda torch, base, index, src, dim: torch.scatter(base, dim, index.long(), src),
        "{0}.scatter({dim}, {1}, {2})",
        r"\operatorname{{scatter}}_{{{dim}}}\left({0}, {1}, {2}\right)",
        lambda inputs, dim: "ScatterBackward1" if _is_fill(inputs[2]) else "ScatterBackward0",
        vjp=lambda g, out, base, index, src, dim: (
            apply("scatter", g, index, _zeros(index.shape), dim=dim),
            None,
            _source_grad(g, index, src, dim),
        ),
        tags=frozenset({"linear"}),
        indexes=lambda base, index, src, dim: [(base.shape[dim], index)] if base.ndim else [],
    )
)
