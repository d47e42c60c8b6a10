"""Python numbers computed from symbolic sizes where Python gives symgrad no hook.

``1 / x.size(-1)`` reaches :class:`~symgrad.torch.sizes.SizeInt`'s own division and stays symbolic, but
``1.0 / x.size(-1)`` is float's division of a float by an int, and ``math.sqrt(x.size(-1))`` converts the size
to a float first: both give plain floats, which the graph would keep as the example's number. The trace's probe
runs at other sizes show such a number changing with a size; where it changes as ``q · Π (d + o)^p`` (a power
``p`` of a size ``d``, or of ``d ± 1``, with a rational ``q``), it becomes that expression, once a run at yet
other sizes confirms it. A number that changes any other way still refuses the trace.

>>> n = sympy.Symbol("n", integer=True, positive=True)
>>> power_of(4, 5, 0.25, 0.2)
(0, -1)
>>> fitted(0.25, {n: 4}, {n: (0, -1)})
1/n
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import sympy

from ..core.tensor import Tensor, with_inputs
from ..derive.replacing import replaced
from .trace_runs import flat, graph_signature, rebuilt

EXPONENTS = (-2, -1, sympy.Rational(-1, 2), sympy.Rational(1, 2), 1, 2)
OFFSETS = (0, -1, 1)  # d, d - 1 (an unbiased variance's n - 1), d + 1


def scalar_differences(first: Any, second: Any) -> dict[int, tuple[Tensor, float, float]] | None:
    """Where two runs' graphs differ only in the values of Python numbers: their positions in graph order, with
    the first run's node and both values; None when they differ otherwise."""
    a, b = graph_signature(first), graph_signature(second)
    if len(a) != len(b):
        return None
    found = {}
    for position, ((key_a, node_a), (key_b, node_b)) in enumerate(zip(a, b)):
        if key_a == key_b:
            continue
        if _number(node_a) and _number(node_b) and key_a[2:] == key_b[2:]:
            found[position] = (node_a, _value(node_a), _value(node_b))
        elif _fill(node_a) and _fill(node_b) and _without_value(node_a) == _without_value(node_b):
            found[position] = (node_a, _value(node_a), _value(node_b))  # fill_(1.0 / x.numel())
        else:
            return None
    return found


def _number(node: Tensor) -> bool:
    return node.op is None and node.kind == "formula" and node.is_python_scalar and not node.shape


def _fill(node: Tensor) -> bool:
    """A tensor filled with one Python number (``torch.full``, ``fill_``), which may be made from the sizes."""
    return node.op is not None and node.op.name == "full" and isinstance(node.attrs.get("value"), float)


def _without_value(node: Tensor) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in node.attrs.items() if k != "value")), node.dtype


def _value(node: Tensor) -> float:
    if node.op is not None:
        return float(node.attrs["value"])
    return float(node.entries().reshape(()).item())


def power_of(size_a: int, size_b: int, value_a: float, value_b: float) -> tuple[int, Any] | None:
    """The offset and exponent ``(o, p)`` with ``value ∝ (size + o)^p`` at both sizes, or None."""
    if value_a == 0 or value_b == 0 or (value_a > 0) != (value_b > 0):
        return None
    for offset in OFFSETS:
        if size_a + offset < 1 or size_b + offset < 1:
            continue
        p = math.log(value_b / value_a) / math.log((size_b + offset) / (size_a + offset))
        for exponent in EXPONENTS:
            if abs(p - float(exponent)) < 1e-9:
                return offset, exponent
    return None


def fitted(value: float, sizes: Mapping[sympy.Symbol, int], powers: Mapping[sympy.Symbol, tuple[int, Any]]) -> Any:
    """``q · Π (d + o)^p`` equal to ``value`` at ``sizes``, with ``q`` a simple rational; None if there is none."""
    shape = sympy.Mul(*((d + o) ** p for d, (o, p) in powers.items()))
    at_example = shape.xreplace(dict(sizes))
    q = sympy.nsimplify(value / float(at_example), rational=True, tolerance=1e-12)
    if q.q > 1000 or q == 0:
        return None
    expression = q * shape
    return expression if _same(float(expression.xreplace(dict(sizes))), value) else None


def _same(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 4e-16 * max(abs(a), abs(b))


def confirmed(expressions: Mapping[int, Any], first: Any, third: Any, sizes: Mapping[sympy.Symbol, int]) -> bool:
    """Whether a run at other ``sizes`` has the first run's graph with each fitted number (a position in graph
    order) at its expression's value there."""
    changed = scalar_differences(first, third)
    if changed is None:
        return False
    unchanged = graph_signature(first) if any(p not in changed for p in expressions) else []
    at_third = {p: changed[p][2] if p in changed else _value(unchanged[p][1]) for p in expressions}
    return all(_same(at_third[p], float(e.xreplace(dict(sizes)))) for p, e in expressions.items())


def with_expressions(output: Any, nodes: Mapping[int, Tensor], expressions: Mapping[int, Any]) -> Any:
    """``output`` (a tensor, or a structure of them) with each number node replaced by its expression."""
    mapping = {}
    for p, e in expressions.items():
        number = Tensor(shape=(), entries=np.array(e, dtype=object), dtype=nodes[p].dtype, is_python_scalar=True)
        if nodes[p].op is not None:  # a fill: ones times the number
            number = with_inputs(nodes[p], [], {**nodes[p].attrs, "value": 1}) * number
        mapping[id(nodes[p])] = number
    roots = [t for t in flat(output) if isinstance(t, Tensor)]
    new = dict(zip((id(t) for t in roots), replaced(roots, mapping)))
    return _rebuild(output, new)


def _rebuild(value: Any, new: dict[int, Tensor]) -> Any:
    if isinstance(value, Tensor):
        return new.get(id(value), value)
    if isinstance(value, (list, tuple)):
        return rebuilt(value, (_rebuild(v, new) for v in value))
    if isinstance(value, dict):
        return {k: _rebuild(v, new) for k, v in value.items()}
    return value
