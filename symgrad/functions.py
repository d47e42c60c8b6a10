"""Scalar SymPy functions that SymPy lacks, with torch's conventions.

Their derivatives are what torch uses at non-differentiable points:
``relu'(0) = 0`` (``Heaviside(x, 0)``); ``Abs'(0) = sign(0) = 0`` comes from SymPy.

>>> x = sympy.Symbol("x", real=True)
>>> sigmoid(x).diff(x)
(1 - sigmoid(x))*sigmoid(x)
>>> relu(x).diff(x)
Heaviside(x, 0)
"""

from __future__ import annotations

import sympy


class sigmoid(sympy.Function):  # noqa: N801 - spelled as in torch
    """The logistic function 1 / (1 + exp(-x))."""

    @classmethod
    def eval(cls, arg):
        if arg.is_Number:
            return 1 / (1 + sympy.exp(-arg))
        return None

    def fdiff(self, argindex=1):
        return self * (1 - self)

    def _eval_rewrite_as_exp(self, arg, **kwargs):
        return 1 / (1 + sympy.exp(-arg))

    def _eval_is_real(self):
        return self.args[0].is_real

    def _latex(self, printer, exp=None):
        body = rf"\sigma\left({printer._print(self.args[0])}\right)"
        return rf"{body}^{{{exp}}}" if exp else body


class relu(sympy.Function):  # noqa: N801 - spelled as in torch
    """max(x, 0), with derivative Heaviside(x, 0) so that relu'(0) = 0 as in torch."""

    @classmethod
    def eval(cls, arg):
        if arg.is_Number:
            return arg if arg > 0 else sympy.S.Zero
        if arg.is_nonnegative:
            return arg
        if arg.is_nonpositive:
            return sympy.S.Zero
        return None

    def fdiff(self, argindex=1):
        return sympy.Heaviside(self.args[0], 0)

    def _eval_rewrite_as_Max(self, arg, **kwargs):  # noqa: N802 - SymPy's hook name
        return sympy.Max(arg, 0)

    def _eval_is_real(self):
        return self.args[0].is_real

    def _latex(self, printer, exp=None):
        body = rf"\operatorname{{relu}}\left({printer._print(self.args[0])}\right)"
        return rf"{body}^{{{exp}}}" if exp else body
