"""A graph with some of its nodes replaced: what a law derived with a stand-in leaf becomes once the stand-in is put
back (a column differentiated as a vector, a layer's output as a leaf of its own).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.graph import topological_all
from ..core.tensor import Tensor, with_inputs


def replaced(roots: Sequence[Tensor], mapping: dict[int, Tensor]) -> list[Tensor]:
    """``roots`` rebuilt with each node whose id is a key of ``mapping`` replaced by its value (of the same shape).

    >>> import symgrad as sg
    >>> x, y = sg.symbols("x", (2,)), sg.symbols("y", (2,))
    >>> replaced([(x * 2).sum()], {id(x): y})[0].name
    '(y * 2).sum()'
    """
    rebuilt: dict[int, Tensor] = dict(mapping)
    for node in topological_all(list(roots)):
        if id(node) not in rebuilt:
            rebuilt[id(node)] = node if node.op is None else with_inputs(node, [rebuilt[id(i)] for i in node.inputs])
    return [rebuilt[id(r)] for r in roots]
