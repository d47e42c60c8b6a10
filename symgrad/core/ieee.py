"""Numbers as torch computes them: SymPy expressions evaluated in IEEE float64.

SymPy's own arithmetic is exact and complex-valued: ``sqrt(-1)`` is ``I``, ``log(0)`` and
``1/0`` are ``zoo``. torch works on real float64 numbers, where they are ``nan``, ``-inf``
and ``inf``, and every later op follows IEEE rules (``0 * inf`` is ``nan``, comparisons with
``nan`` are false). This module evaluates expressions the torch way, visiting each distinct
subexpression once. SymPy functions defined by symgrad give their float64 value through a
``float64`` class method, so this module names none of them.

>>> x, y = sympy.symbols("x y", real=True)
>>> float64_values([1 / (2 * sympy.sqrt(x)), sympy.sqrt(y) * x, sympy.log(x)], {x: 0.0, y: -1.0})
[inf, nan, -inf]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import sympy
from sympy.functions.elementary.piecewise import ExprCondPair

from .errors import ValuesUnknownError

_FUNCTIONS: dict[Any, Callable[..., float]] = {
    sympy.exp: np.exp,
    sympy.log: np.log,
    sympy.sin: np.sin,
    sympy.cos: np.cos,
    sympy.tan: np.tan,
    sympy.tanh: np.tanh,
    sympy.sinh: np.sinh,
    sympy.cosh: np.cosh,
    sympy.asin: np.arcsin,
    sympy.acos: np.arccos,
    sympy.atan: np.arctan,
    sympy.asinh: np.arcsinh,
    sympy.acosh: np.arccosh,
    sympy.atanh: np.arctanh,
    sympy.atan2: np.arctan2,
    sympy.Abs: np.abs,
    sympy.erf: lambda x: math.erf(x) if not math.isnan(x) else math.nan,
    sympy.erfc: lambda x: math.erfc(x) if not math.isnan(x) else math.nan,
    sympy.floor: np.floor,
    sympy.ceiling: np.ceil,
}

_RELATIONS: dict[type, Callable[[Any, Any], bool]] = {
    sympy.StrictGreaterThan: lambda a, b: bool(a > b),
    sympy.GreaterThan: lambda a, b: bool(a >= b),
    sympy.StrictLessThan: lambda a, b: bool(a < b),
    sympy.LessThan: lambda a, b: bool(a <= b),
    sympy.Equality: lambda a, b: bool(a == b),
    sympy.Unequality: lambda a, b: bool(a != b),
}

_PAIR = object()  # a Piecewise's (expression, condition) pair: read through its Piecewise


def _nan_max(values: list[float]) -> float:
    return math.nan if any(math.isnan(v) for v in values) else max(values)


def _nan_min(values: list[float]) -> float:
    return math.nan if any(math.isnan(v) for v in values) else min(values)


def _number(node: sympy.Basic) -> float:
    if node.is_Integer:
        return float(int(node))
    if node.is_Rational:
        return int(node.p) / int(node.q)
    if node is sympy.oo:
        return math.inf
    if node is sympy.S.NegativeInfinity:
        return -math.inf
    if node is sympy.nan or node is sympy.zoo or node is sympy.I:
        return math.nan  # undefined, or not real: torch's real tensors hold nan
    value = complex(node)
    return value.real if value.imag == 0 else math.nan


def _node_value(node: sympy.Basic, values: dict, point: Mapping) -> Any:
    if isinstance(node, ExprCondPair):
        return _PAIR
    if node.is_Symbol:
        try:
            return float(point[node])
        except KeyError:
            drawn = getattr(node, "drawn_value", None)  # a random draw's entry knows its number (ops.draws)
            if drawn is not None:
                return drawn
            raise ValuesUnknownError(
                f"{node} has no value; give its tensor values, or use .sympy() for the formula"
            ) from None
    if node.is_Number or node.is_NumberSymbol or node is sympy.I:
        return _number(node)
    if node is sympy.true:
        return True
    if node is sympy.false:
        return False
    args = [values[a] for a in node.args]
    if node.is_Add:
        return float(np.sum(np.array(args, dtype=np.float64)))
    if node.is_Mul:
        return float(np.prod(np.array(args, dtype=np.float64)))
    if node.is_Pow:
        if args[1] == -0.5:  # torch computes x ** -0.5 as rsqrt, 1 / sqrt(x): -inf at -0.0, where C's pow gives inf
            return float(1.0 / np.sqrt(np.float64(args[0])))
        return float(np.power(np.float64(args[0]), np.float64(args[1])))
    kind = type(node)
    if kind in _RELATIONS:
        return _RELATIONS[kind](args[0], args[1])
    if isinstance(node, sympy.And):
        return all(args)
    if isinstance(node, sympy.Or):
        return any(args)
    if isinstance(node, sympy.Not):
        return not args[0]
    if isinstance(node, sympy.ITE):  # SymPy's if-then-else of truth values, from a simplified condition
        return args[1] if args[0] else args[2]
    if isinstance(node, sympy.Piecewise):
        for expr, condition in node.args:
            if values[condition]:
                return values[expr]
        return math.nan
    own = getattr(node.func, "float64", None)  # symgrad's functions (sigmoid, relu, ...) know their value
    if own is not None:
        return float(own(*args))
    if isinstance(node, sympy.Heaviside):
        x = args[0]
        at_zero = args[1] if len(args) > 1 else 0.5
        return 1.0 if x > 0 else 0.0 if x < 0 or math.isnan(x) else float(at_zero)  # torch: heaviside(nan) = 0
    if isinstance(node, sympy.sign):
        return 0.0 if math.isnan(args[0]) else float(np.sign(args[0]))  # torch: sign(nan) = 0
    if isinstance(node, sympy.Max):
        return _nan_max(args)
    if isinstance(node, sympy.Min):
        return _nan_min(args)
    function = _FUNCTIONS.get(node.func)
    if function is not None:
        return float(function(*args))
    numeric = node.xreplace({s: sympy.Float(point[s]) for s in node.free_symbols if s in point}).evalf()
    return _number(numeric) if numeric.is_number else math.nan


def float64_values(exprs: Iterable[Any], point: Mapping[sympy.Symbol, float]) -> list[float]:
    """Each expression's value at ``point`` in IEEE float64 (subexpressions shared by several
    expressions are computed once)."""
    values: dict[sympy.Basic, Any] = {}
    out = []
    with np.errstate(all="ignore"):
        for expr in exprs:
            expr = sympy.sympify(expr)
            if expr not in values:
                for node in _postorder(expr, values):
                    values[node] = _node_value(node, values, point)
            out.append(float(values[expr]))
    return out


def _postorder(expr: sympy.Basic, done: Mapping) -> list[sympy.Basic]:
    """Subexpressions not yet in ``done``, arguments first (no recursion: formulas can be deep)."""
    order: list[sympy.Basic] = []
    seen: set[sympy.Basic] = set()
    stack: list[tuple[sympy.Basic, bool]] = [(expr, False)]
    while stack:
        node, ready = stack.pop()
        if ready:
            order.append(node)
            continue
        if node in seen or node in done:
            continue
        seen.add(node)
        stack.append((node, True))
        stack.extend((arg, False) for arg in node.args if arg not in seen and arg not in done)
    return order


def as_sympy_number(value: float, *, integer: bool = False) -> sympy.Expr:
    """A float64 result back as a SymPy number (``nan``, ``oo`` and ``-oo`` included; ``-0.0`` stays a float)."""
    if math.isnan(value):
        return sympy.nan
    if math.isinf(value):
        return sympy.oo if value > 0 else -sympy.oo
    if integer and float(value).is_integer():
        return sympy.Integer(int(value))
    if value == 0 and math.copysign(1.0, value) < 0:
        return -0.0  # SymPy has no negative zero; the float keeps its sign for 1 / x and atan2 further on
    return sympy.Float(value)


def rounded_to(values: np.ndarray, dtype: str) -> np.ndarray:
    """float64 numbers rounded to ``dtype``'s precision (to nearest, ties to even), as a cast rounds them; numbers
    stay float64 otherwise (symgrad computes in float64 whatever the label)."""
    if dtype in ("float32", "float16"):
        return values.astype(dtype).astype(float)
    if dtype == "bfloat16":  # float32's upper 16 bits, rounded to nearest even (nan and inf pass)
        bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        out = rounded.astype(np.uint32).view(np.float32).astype(float)
        return np.where(np.isfinite(values), out, values)
    return values
