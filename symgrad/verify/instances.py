"""Laws at concrete sizes: the symbolic dimensions of a graph replaced by numbers, for exact proofs.

Sizes are small and distinct (so that a transposition cannot hide), above any index value the user fixed
along a dimension (see :func:`size_floors`).

>>> from symgrad.core import dims, symbols
>>> import symgrad.ops
>>> n, m = dims("n m")
>>> x = symbols("x", (n, m))
>>> made = instantiate([x.T], {n: 2, m: 3})
>>> made[id(x.T)].shape if False else [t.shape for t in made.values()]
[(2, 3), (3, 2)]
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import sympy

from ..core.constructors import tensor
from ..core.dims import is_concrete, stood_in
from ..core.graph import topological_all
from ..core.tensor import Tensor, with_inputs

Sizes = dict[sympy.Symbol, int]


def size_assignments(
    dims: Sequence[sympy.Symbol], count: int = 2, start: int = 2, floors: Mapping[sympy.Symbol, int] | None = None
) -> list[Sizes]:
    """Distinct sizes per dimension (2, 3, 4, …), rotated for each further assignment; a dimension with a floor
    (see :func:`size_floors`) is at least that large, and the sizes stay distinct."""
    if not dims:  # nothing to vary: one proof at the given sizes
        return [above_floors({}, floors or {})]
    base = list(range(start, start + len(dims)))
    out = []
    for shift in range(count):
        if len(dims) > 1:
            sizes = base[shift % len(base) :] + base[: shift % len(base)]
        else:  # one dimension: try another size instead of the same rotation
            sizes = [b + shift for b in base]
        out.append(above_floors(dict(zip(dims, sizes)), floors or {}, shift))
    return out


def above_floors(sizes: dict, floors: Mapping[sympy.Symbol, int], shift: int = 0) -> dict:
    """``sizes`` with each dimension raised to its floor (plus ``shift``), then nudged until no two are equal."""
    out = {d: max(n, floors[d] + shift) if d in floors else n for d, n in sizes.items()}
    taken: set[int] = set()
    for d in sorted(out, key=lambda d: (d not in floors, str(d))):  # the floored ones keep their sizes
        while out[d] in taken:
            out[d] += 1
        taken.add(out[d])
    return out


def size_floors(roots: Sequence[Tensor]) -> dict[sympy.Symbol, int]:
    """The smallest size each dimension can take in a proof: larger than every index value the user gave along
    it (cross-entropy's targets along the class count, a gather's indices along its dim)."""
    floors: dict[sympy.Symbol, int] = {}
    for node in topological_all(roots):
        if node.op is None or node.op.indexes is None:
            continue
        for size, index in node.op.indexes(*node.inputs, **node.attrs):
            if not isinstance(size, sympy.Symbol) or not is_concrete(index.shape) or not index.has_values():
                continue
            picked = [int(v) for v in np.asarray(index.values(), dtype=object).reshape(-1) if int(v) >= 0]
            if picked:  # negative values: torch's ignore_index, or an error torch reports
                floors[size] = max(floors.get(size, 1), max(picked) + 1)
    return floors


def at_sizes(value: Any, sizes: Sizes) -> Any:
    """An attribute or shape with its dimensions replaced by ``sizes`` (integers where they become integers)."""
    if isinstance(value, sympy.Expr):
        result = sympy.sympify(value.xreplace(sizes))
        return int(result) if result.is_Integer else result
    if isinstance(value, tuple):
        return tuple(at_sizes(v, sizes) for v in value)
    return value


def instantiate(roots: Sequence[Tensor], sizes: Sizes, *, rng: random.Random | None = None) -> dict[int, Tensor]:
    """Rebuild the graphs below ``roots`` with dimensions replaced by ``sizes``.

    Leaves become concrete symbol tensors of the same name; integer leaves that
    declare a number of classes get random class indices.
    """
    rng = rng or random.Random(0)
    made: dict[int, Tensor] = {}
    for node in topological_all(roots):
        if node.op is None:
            made[id(node)] = instantiate_leaf(node, sizes, rng)
        else:
            attrs = {k: at_sizes(v, sizes) for k, v in node.attrs.items()}
            made[id(node)] = with_inputs(node, [made[id(i)] for i in node.inputs], attrs)
    return made


def instantiate_leaf(node: Tensor, sizes: Sizes, rng: random.Random, stand_ins: dict[int, int] | None = None) -> Tensor:
    """One leaf at ``sizes`` (see :func:`instantiate`); ``rng`` draws class indices. ``stand_ins`` replaces fixed
    sizes of a symbol leaf's shape and class count by smaller ones (see :mod:`.stand_ins`)."""
    stand_ins = stand_ins or {}
    shape = at_sizes(stood_in(tuple(node.shape), stand_ins), sizes)
    if node.kind != "symbol":
        entries = node.entries()
        flat = [sympy.sympify(e) for e in entries.reshape(-1)]
        if not any(e.free_symbols & sizes.keys() or e.has(sympy.Float) for e in flat):
            return node
        # Float literals become the exact binary fractions they stand for: SymPy's float arithmetic
        # would leave rounding residues (~1e-17) in the entrywise side that look like differences.
        values = np.array([_exact(e).xreplace(sizes) for e in flat], dtype=object)
        return Tensor(
            shape=entries.shape,
            entries=values.reshape(entries.shape),
            dtype=node.dtype,
            is_python_scalar=node.is_python_scalar,
        )
    classes = getattr(node, "classes", None)
    if classes is not None:
        bound = int(at_sizes(stood_in((classes,), stand_ins)[0], sizes))
        count = int(np.prod(shape, dtype=int))
        values = np.array([rng.randrange(bound) for _ in range(count)], dtype=object).reshape(shape)
        return tensor(values.tolist(), name=node.name, dtype="int64")
    return Tensor(shape=shape, name=node.name, dtype=node.dtype, requires_grad=node.requires_grad)


def _exact(expr: sympy.Expr) -> sympy.Expr:
    expr = sympy.sympify(expr)
    return expr.xreplace({f: sympy.Rational(f) for f in expr.atoms(sympy.Float)})


# Functions that split into cases: exact on rational arguments, so they stay in the rational form.
