"""Walking tensor graphs: dependency order, the dimension symbols used, uniform constants.

Every walk is iterative, so deep graphs (a long chain of ops) cannot hit Python's
recursion limit.

>>> from symgrad.core import symbols
>>> import symgrad.ops  # the op table
>>> x = symbols("x", (2, 3))
>>> [t.name for t in topological((x * 2).sum())][-1]
'(x * 2).sum()'
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy

if TYPE_CHECKING:
    from .tensor import Tensor


def topological(root: Tensor) -> list[Tensor]:
    """The nodes below ``root`` in dependency order (inputs first), ``root`` last."""
    return topological_all([root])


def topological_all(roots: Iterable[Tensor]) -> list[Tensor]:
    """The nodes below all ``roots``, each once, in dependency order."""
    return list(in_dependency_order(roots))


def in_dependency_order(roots: Iterable[Tensor]) -> Iterator[Tensor]:
    """:func:`topological_all`'s nodes one at a time, for a search that stops at the first it wants."""
    seen: set[int] = set()
    for root in roots:
        stack: list[tuple[Tensor, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                yield node
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            for part in reversed(node.inputs):
                if id(part) not in seen:
                    stack.append((part, False))


def dims_of(roots: Sequence[Tensor]) -> list[sympy.Symbol]:
    """The dimension symbols in the shapes of the graphs below ``roots``, sorted by name."""
    found: set[sympy.Symbol] = set()
    for node in topological_all(roots):
        for d in node.shape:
            if isinstance(d, sympy.Expr):
                found |= d.free_symbols
    return sorted(found, key=lambda s: s.name)


def is_size(value: sympy.Expr) -> bool:
    """A number made of symbolic sizes, such as ``1/n`` (its symbols are integer dimensions)."""
    return bool(value.free_symbols) and all(s.is_integer for s in value.free_symbols)


def uniform_constant(t: Tensor) -> sympy.Expr | None:
    """The value of a tensor whose entries are all the same known number, else None."""
    if t.op is not None:
        if t.op.has("creation") and "value" in t.attrs:
            return sympy.sympify(t.attrs["value"])
        if t.op.has("layout"):  # moving equal numbers around keeps them equal
            return uniform_constant(t.inputs[0])
        return None
    if t.kind != "formula" or t.given_name is not None:
        return None
    if t.fill_value is not None:
        return _uniform_entries(np.array([t.fill_value], dtype=object))
    known = t.__dict__.get("_uniform_value", _UNKNOWN)  # a formula's entries never change: decided once
    if known is _UNKNOWN:
        known = t.__dict__["_uniform_value"] = _uniform_entries(t.entries().reshape(-1))
    return known


_UNKNOWN = object()


def _uniform_entries(entries: Any) -> sympy.Expr | None:
    if entries.size == 0:
        return None
    first = sympy.sympify(entries[0])
    if not (first.is_number or is_size(first)):
        return None
    return first if all(sympy.sympify(e) == first for e in entries) else None


def is_matrix_transpose(t: Tensor) -> bool:
    """``w.T``, ``w.mT``, ``w.transpose(0, 1)`` or ``w.permute(1, 0)`` of a matrix."""
    return t.op is not None and t.op.name in ("transpose", "permute") and len(t.shape) == 2
