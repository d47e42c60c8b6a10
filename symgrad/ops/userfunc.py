"""Elementwise functions defined by any SymPy expression.

>>> import sympy
>>> cube_sin = function("f", lambda t: t**3 + sympy.sin(t))
>>> from symgrad.core import symbols
>>> cube_sin(symbols("x", (2,))).sympy()
[x_0**3 + sin(x_0), x_1**3 + sin(x_1)]
"""

from __future__ import annotations

from collections.abc import Callable

import sympy

from ..core.errors import TorchTypeError
from ..core.tensor import Tensor, apply, check_name

VARIABLE = sympy.Symbol("t", real=True)


def function(
    label: str | sympy.FunctionClass, body: Callable[[sympy.Symbol], sympy.Expr] | sympy.Lambda | None = None
) -> Callable[[Tensor], Tensor]:
    """An elementwise function from a SymPy body: ``function("f", lambda t: t**3 + sympy.sin(t))``.

    A SymPy function class alone also works: ``function(sympy.erf)``.
    """
    if isinstance(label, sympy.FunctionClass):
        body, label = label, label.__name__
    if body is None:
        raise TorchTypeError("function() needs a body: a SymPy Lambda or a callable of one symbol")
    check_name(label)
    lam = body if isinstance(body, sympy.Lambda) else sympy.Lambda(VARIABLE, sympy.sympify(body(VARIABLE)))
    if len(lam.variables) != 1:
        raise TorchTypeError(f"an elementwise function takes one variable, {label} takes {len(lam.variables)}")

    def elementwise_function(x: Tensor) -> Tensor:
        return apply("map", x, fn=lam, label=label)

    elementwise_function.__name__ = label
    elementwise_function.__doc__ = f"Elementwise {label}(t) = {lam.expr}."
    return elementwise_function
