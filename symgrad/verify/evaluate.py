"""Numbers from SymPy expressions, fast: a walk over the expression tree with mpmath or exact fractions.

SymPy's ``xreplace(point).evalf()`` rebuilds and re-simplifies the whole tree at every point;
proofs evaluate large differences (attention, softmax) at several points, where that dominates.
This walk visits each distinct subexpression once and computes with mpmath (``digits`` significant
digits) or with Python's exact :class:`fractions.Fraction`.

>>> x, y = sympy.symbols("x y", real=True)
>>> expr = sympy.exp(x) / (sympy.exp(x) + sympy.exp(y)) - 1 / (1 + sympy.exp(y - x))
>>> abs(to_mpmath(expr, {x: 0.5, y: 1.25}, digits=40)) < 1e-35
True
>>> to_fraction(x / (x + y) + sympy.Abs(x - y), {x: Fraction(1, 3), y: Fraction(1, 2)})
Fraction(17, 30)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import mpmath
import sympy
from sympy.functions.elementary.piecewise import ExprCondPair

from ..core.budget import tick
from ..ops import functions


class NotExact(Exception):  # noqa: N818 - a signal to fall back, not an error
    """The expression holds something that rational arithmetic cannot compute exactly (sqrt, exp, …)."""


def _postorder(expr: sympy.Basic) -> list[sympy.Basic]:
    """Distinct subexpressions, arguments before the expressions using them (no recursion); the last few
    expressions' orders are kept, as one difference is evaluated at several points."""
    for seen_expr, order in _RECENT:
        if seen_expr is expr:
            return order
    order = _walk(expr)
    _RECENT.insert(0, (expr, order))
    del _RECENT[8:]
    return order


_RECENT: list[tuple[sympy.Basic, list]] = []


def _walk(expr: sympy.Basic) -> list[sympy.Basic]:
    order: list[sympy.Basic] = []
    seen: set[sympy.Basic] = set()
    stack: list[tuple[sympy.Basic, bool]] = [(expr, False)]
    steps = 0
    while stack:
        steps += 1
        if steps % 8192 == 0:
            tick("evaluating a difference")
        node, ready = stack.pop()
        if ready:
            order.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        stack.extend((arg, False) for arg in node.args if arg not in seen)
    return order


def symbols_of(expr: sympy.Basic) -> list[sympy.Symbol]:
    """The symbols in ``expr``, sorted by name: each distinct subexpression visited once (SymPy's free_symbols
    visits a shared subexpression once per use, which is exponential in the depth of a network's entries)."""
    return sorted((node for node in _postorder(sympy.sympify(expr)) if node.is_Symbol), key=str)


def atoms_of(expr: sympy.Basic, *types: type) -> set[sympy.Basic]:
    """``expr.atoms(*types)``, each distinct subexpression visited once (see :func:`symbols_of`)."""
    return {node for node in _postorder(sympy.sympify(expr)) if isinstance(node, types)}


def has_any(expr: sympy.Basic, *types: type) -> bool:
    """``expr.has(*types)`` for classes, each distinct subexpression visited once (see :func:`symbols_of`)."""
    return any(isinstance(node, types) for node in _postorder(sympy.sympify(expr)))


def _truth(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise TypeError(f"not a truth value: {value!r}")


def _real(value: Any) -> Any:
    """Comparisons need real numbers; a complex value (sqrt of a negative) makes them undecidable."""
    if isinstance(value, mpmath.mpc):
        if value.imag != 0:
            raise ValueError("comparison of a complex value")
        return value.real
    return value


_RELATIONS: dict[type, Callable[[Any, Any], bool]] = {
    sympy.StrictGreaterThan: lambda a, b: a > b,
    sympy.GreaterThan: lambda a, b: a >= b,
    sympy.StrictLessThan: lambda a, b: a < b,
    sympy.LessThan: lambda a, b: a <= b,
    sympy.Equality: lambda a, b: a == b,
    sympy.Unequality: lambda a, b: a != b,
}


def _piecewise(node: sympy.Piecewise, values: dict) -> Any:
    for expr, condition in node.args:
        if _truth(values[condition]):
            return values[expr]
    return None  # no branch holds: undefined


def _common(node: sympy.Basic, values: dict, zero: Any, one: Any) -> Any:
    """Rules that hold in both arithmetics: relations, logic, case splits."""
    args = [values[a] for a in node.args]
    kind = type(node)
    if kind in _RELATIONS:
        return _RELATIONS[kind](_real(args[0]), _real(args[1]))
    if isinstance(node, sympy.And):
        return all(_truth(a) for a in args)
    if isinstance(node, sympy.Or):
        return any(_truth(a) for a in args)
    if isinstance(node, sympy.Not):
        return not _truth(args[0])
    if node is sympy.true:
        return True
    if node is sympy.false:
        return False
    if isinstance(node, sympy.Piecewise):
        return _piecewise(node, values)
    if isinstance(node, sympy.Heaviside):
        x = _real(args[0])
        at_zero = args[1] if len(args) > 1 else one / 2
        return one if x > 0 else zero if x < 0 else at_zero
    if isinstance(node, sympy.sign):  # SymPy's and symgrad's (whose derivative differs, not its value)
        x = _real(args[0])
        return one if x > 0 else -one if x < 0 else zero
    if isinstance(node, sympy.Abs):
        return abs(args[0])
    if isinstance(node, (sympy.Max, functions.amax)):
        return max(_real(a) for a in args)
    if isinstance(node, sympy.Min):
        return min(_real(a) for a in args)
    if isinstance(node, functions.relu):
        x = _real(args[0])
        return x if x > 0 else zero
    if isinstance(node, functions.maximum):
        return max(_real(args[0]), _real(args[1]))
    if isinstance(node, functions.masked_div):
        return zero if args[1] == 0 else args[0] / args[1]
    return _rounding(node, [_real(a) for a in args], zero, one)


def _rounding(node: sympy.Basic, args: list, zero: Any, one: Any) -> Any:
    """symgrad's rounding functions, the first maximum and the count of ties, exactly in both arithmetics."""
    if isinstance(node, functions.max_first):
        return max(args)
    if isinstance(node, functions.max_ties):
        top = max(args)
        return sum((one for a in args if a == top), zero)
    kind = type(node)
    if kind in (functions.floor, functions.ceil, functions.trunc, functions.round_half_even, functions.div_floor):
        x = args[0] / args[1] if kind is functions.div_floor else args[0]
        whole = {
            functions.floor: math.floor,
            functions.div_floor: math.floor,
            functions.ceil: math.ceil,
            functions.trunc: math.trunc,
            functions.round_half_even: lambda v: round(Fraction(v) if not isinstance(v, Fraction) else v),
        }[kind](x)
        return one * whole
    raise LookupError(node.func)


_MPMATH_FUNCTIONS: dict[Any, Callable] = {
    sympy.exp: mpmath.exp,
    sympy.log: mpmath.log,
    sympy.sin: mpmath.sin,
    sympy.cos: mpmath.cos,
    sympy.tan: mpmath.tan,
    sympy.tanh: mpmath.tanh,
    sympy.sinh: mpmath.sinh,
    sympy.cosh: mpmath.cosh,
    sympy.atan: mpmath.atan,
    sympy.asin: mpmath.asin,
    sympy.acos: mpmath.acos,
    sympy.erf: mpmath.erf,
    sympy.erfc: mpmath.erfc,
    functions.sigmoid: lambda x: 1 / (1 + mpmath.exp(-x)),
    functions.softplus: lambda x: mpmath.log(1 + mpmath.exp(x)),
    functions.norm2: lambda *xs: mpmath.sqrt(mpmath.fsum(x * x for x in xs)),
    sympy.atan2: lambda y, x: mpmath.atan2(_real(y), _real(x)),
    functions.hypot: lambda a, b: mpmath.hypot(_real(a), _real(b)),
    functions.logaddexp: lambda a, b: mpmath.log(mpmath.exp(a) + mpmath.exp(b)),
    functions.xlogy: lambda x, y: mpmath.mpf(0) if x == 0 else x * mpmath.log(y),
    functions.stdev: lambda c, *xs: mpmath.sqrt(
        mpmath.fsum((x - mpmath.fsum(xs) / len(xs)) ** 2 for x in xs) / max(0, len(xs) - c)
    ),
}


def to_mpmath(expr: sympy.Basic, point: Mapping[sympy.Symbol, Any], *, digits: int = 30) -> Any:
    """``expr`` at ``point`` with ``digits`` significant digits (an mpmath number; nan where undefined)."""
    with mpmath.workdps(digits):
        values: dict[sympy.Basic, Any] = {}
        for node in _postorder(sympy.sympify(expr)):
            values[node] = _mpmath_node(node, values, point, digits)
        return values[expr]


_PAIR = object()  # the value of a Piecewise's (expression, condition) pair: read through the Piecewise


def _mpmath_node(node: sympy.Basic, values: dict, point: Mapping, digits: int) -> Any:
    if isinstance(node, ExprCondPair):
        return _PAIR
    if node in point:
        return mpmath.mpf(point[node]) if not isinstance(point[node], Fraction) else _mpf_fraction(point[node])
    if node.is_Rational:
        return mpmath.mpf(node.p) / node.q
    if node.is_Float:
        return mpmath.mpf(node._mpf_)
    if node is sympy.nan or node is sympy.zoo:
        return mpmath.nan
    if node is sympy.oo:
        return mpmath.inf
    if node is sympy.S.NegativeInfinity:
        return -mpmath.inf
    if node is sympy.I:
        return mpmath.mpc(0, 1)
    if node.is_NumberSymbol:
        return mpmath.mpf(node.evalf(digits + 5)._mpf_)
    if node.is_Symbol:
        raise KeyError(f"no value for {node}")
    args = [values[a] for a in node.args]
    if node.is_Add:
        return mpmath.fsum(args)
    if node.is_Mul:
        return mpmath.fprod(args)
    if node.is_Pow:
        base, exponent = args
        if base == 0 and _real(exponent) < 0:
            return mpmath.nan if _real(exponent) != int(_real(exponent)) else mpmath.inf
        return mpmath.power(base, exponent)
    function = _MPMATH_FUNCTIONS.get(node.func) or getattr(node.func, "mpmath", None)
    if function is not None:  # (symgrad's special functions give their value at mpmath's precision)
        return function(*args)
    try:
        value = _common(node, values, mpmath.mpf(0), mpmath.mpf(1))
        return mpmath.nan if value is None else value
    except LookupError:
        pass
    except (TypeError, ValueError):
        return mpmath.nan
    substituted = node.xreplace({s: _exact_number(point[s], digits) for s in node.free_symbols})
    if substituted in (sympy.true, sympy.false):  # a test of a number (isnan, isfinite): a truth value
        return substituted is sympy.true
    numeric = sympy.N(substituted, digits)
    return mpmath.mpmathify(complex(numeric)) if numeric.is_number else mpmath.nan


def _exact_number(value: Any, digits: int) -> sympy.Expr:
    """A point's coordinate for SymPy: a fraction exactly, a float with ``digits`` digits."""
    if isinstance(value, Fraction):
        return sympy.Rational(value.numerator, value.denominator)
    return sympy.Float(str(value), digits)


def _mpf_fraction(value: Fraction) -> Any:
    return mpmath.mpf(value.numerator) / value.denominator


def to_fraction(expr: sympy.Basic, point: Mapping[sympy.Symbol, Fraction]) -> Fraction | None:
    """``expr`` at a rational ``point``, exactly; None where it is undefined (a division by zero).

    Raises :class:`NotExact` when the expression needs more than rational arithmetic.
    """
    values: dict[sympy.Basic, Any] = {}
    for node in _postorder(sympy.sympify(expr)):
        value = _fraction_node(node, values, point)
        if value is None:
            return None
        values[node] = value
    return values[expr]


def _fraction_node(node: sympy.Basic, values: dict, point: Mapping) -> Any:
    if isinstance(node, ExprCondPair):
        return _PAIR
    if node in point:
        return Fraction(point[node])
    if node.is_Rational:
        return Fraction(int(node.p), int(node.q))
    if node is sympy.nan or node is sympy.zoo:
        return None
    if node.is_Symbol or node.is_Float or node.is_NumberSymbol:
        raise NotExact(str(node))
    args = [values[a] for a in node.args]
    if node.is_Add:
        return sum(args, Fraction(0))
    if node.is_Mul:
        return math.prod(args, start=Fraction(1))
    if node.is_Pow:
        base, exponent = args
        if not isinstance(exponent, Fraction) or exponent.denominator != 1:
            raise NotExact(str(node))
        if base == 0 and exponent < 0:
            return None
        return base ** int(exponent)
    try:
        return _common(node, values, Fraction(0), Fraction(1))
    except (LookupError, TypeError, ValueError):
        raise NotExact(str(node.func)) from None
