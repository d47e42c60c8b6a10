"""Evaluate a scalar SymPy expression on torch tensors, without generating code.

Used to run user-defined elementwise functions (``sg.function``) in torch for
the cross-check. It walks the expression tree; nothing is compiled or executed.

>>> import torch, sympy
>>> t = sympy.Symbol("t")
>>> evaluate(t**2 + sympy.sin(t), {t: torch.tensor(0.0)}, torch)
tensor(0.)
"""

from __future__ import annotations

import math
from typing import Any

import sympy

from ..core.errors import UnsupportedError
from . import functions

_UNARY = {
    sympy.exp: "exp",
    sympy.log: "log",
    sympy.sin: "sin",
    sympy.cos: "cos",
    sympy.tan: "tan",
    sympy.tanh: "tanh",
    sympy.sinh: "sinh",
    sympy.cosh: "cosh",
    sympy.asin: "asin",
    sympy.acos: "acos",
    sympy.atan: "atan",
    sympy.asinh: "asinh",
    sympy.acosh: "acosh",
    sympy.atanh: "atanh",
    sympy.Abs: "abs",
    sympy.sign: "sign",
    sympy.erf: "erf",
    sympy.erfc: "erfc",
    functions.sigmoid: "sigmoid",
    functions.relu: "relu",
    functions.sign: "sign",
}


def evaluate(expr: sympy.Expr, env: dict[sympy.Symbol, Any], torch: Any) -> Any:
    """The value of ``expr`` with symbols taken from ``env`` (torch tensors)."""
    if expr in env:
        return env[expr]
    if expr.is_number:  # a constant such as 3, pi, sqrt(2) or exp(2): SymPy evaluates it
        return _constant(expr)
    args = [evaluate(a, env, torch) for a in expr.args]
    if expr.is_Add:
        return _fold(args, lambda x, y: x + y)
    if expr.is_Mul:
        return _fold(args, lambda x, y: x * y)
    if expr.is_Pow:
        base, exponent = args
        if expr.exp == sympy.S.Half:
            return torch.sqrt(base)
        return base**exponent
    if expr.func in _UNARY:
        return getattr(torch, _UNARY[expr.func])(*args)
    if isinstance(expr, sympy.Heaviside):
        x = args[0]
        at_zero = args[1] if len(args) > 1 else 0.5
        return torch.where(x > 0, 1.0, torch.where(x < 0, 0.0, at_zero)).to(x.dtype)
    if isinstance(expr, functions.masked_div):
        a, b = (torch.as_tensor(v, dtype=torch.float64) for v in args)
        return torch.where(b == 0, torch.zeros_like(a / b), a / b)
    if isinstance(expr, (sympy.Max, sympy.Min, functions.maximum)):
        pick = torch.minimum if isinstance(expr, sympy.Min) else torch.maximum
        dtype = next((a.dtype for a in args if isinstance(a, torch.Tensor)), torch.float64)
        return _fold([torch.as_tensor(a, dtype=dtype) for a in args], pick)
    raise UnsupportedError(f"cannot evaluate {expr.func.__name__} in torch")


def _constant(expr: sympy.Expr) -> float:
    """A constant subexpression as a Python float (NaN when it is not real, as torch gives for real tensors)."""
    try:
        return float(expr)
    except TypeError:
        return math.nan


def _fold(values: list, combine) -> Any:
    out = values[0]
    for v in values[1:]:
        out = combine(out, v)
    return out


def python_source(expr: sympy.Expr, names: dict[sympy.Symbol, str]) -> str:
    """Torch source for a scalar SymPy expression whose symbols stand for the tensors in ``names``.

    >>> t = sympy.Symbol("t")
    >>> python_source(3 * t**2 + sympy.cos(t), {t: "x"})
    '((3 * (x ** 2)) + torch.cos(x))'
    """
    if expr in names:
        return names[expr]
    if expr.is_Integer:
        return str(int(expr))
    if expr.is_Number:
        return repr(float(expr))
    if expr.is_NumberSymbol:
        return f"math.{str(expr).lower()}" if str(expr) in ("pi", "E") else repr(float(expr))
    args = [python_source(a, names) for a in expr.args]
    if expr.is_Add:
        return "(" + " + ".join(args) + ")"
    if expr.is_Mul:
        return "(" + " * ".join(args) + ")"
    if expr.is_Pow:
        return f"({args[0]} ** {args[1]})"
    if expr.func in _UNARY:
        return f"torch.{_UNARY[expr.func]}({args[0]})"
    raise UnsupportedError(f"cannot write {expr.func.__name__} as torch code")
