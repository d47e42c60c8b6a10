"""The work budget: entrywise work is estimated before it is done, and refused when it is too large.

An entry of a symbolic tensor is a SymPy expression; building them costs about one object per
term, so a matrix product of n×n matrices costs n³ and a determinant of an n×n matrix of symbols
n!·n. Above :data:`MAX_TERMS` symgrad refuses in one line and names the ways out: symbolic shapes
(the matrix law costs the same at every size), smaller sizes, or numbers alone.

>>> import symgrad as sg
>>> x = sg.symbols("x", (100_000, 100_000))
>>> x.sum().sympy()  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
symgrad.WorkBudgetError: the entries of x.sum() would take about ... terms (symgrad's limit is 2,000,000): ...
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .errors import WorkBudgetError

if TYPE_CHECKING:
    from .tensor import Tensor

MAX_TERMS = 2_000_000
"""The largest entrywise work symgrad starts, in SymPy terms (a product of 1000×1000 matrices is 10⁹)."""


def _numel(shape: tuple) -> int:
    return math.prod(int(d) for d in shape)


def node_cost(node: Tensor) -> int:
    """About how many terms building ``node``'s entries from its inputs' takes (0 for symbolic shapes, which
    have no entries: asking for them raises SymbolicShapeError)."""
    if not all(isinstance(d, int) for part in (node, *node.inputs) for d in part.shape):
        return 0
    if node.op is None:
        return _numel(node.shape)
    inputs = [tuple(int(d) for d in part.shape) for part in node.inputs]
    if node.op.cost is not None:
        return int(node.op.cost(*inputs, **node.attrs))
    return _numel(node.shape) + sum(_numel(shape) for shape in inputs)


def check_budget(nodes: Iterable[Tensor], what: Callable[[], str]) -> None:
    """Refuse, in one line, when building the entries of ``nodes`` would exceed :data:`MAX_TERMS`.
    ``what`` names them, called only then: a tensor's name may print its whole expression."""
    total = sum(node_cost(node) for node in nodes)
    if total > MAX_TERMS:
        raise WorkBudgetError(
            f"the entries of {what()} would take about {total:,} terms (symgrad's limit is {MAX_TERMS:,}): "
            "give symbolic shapes (e.g. --shape A=n,m) for the law that holds at every size, or smaller sizes"
        )
