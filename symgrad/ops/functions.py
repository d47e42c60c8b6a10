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
        if arg is sympy.S.NaN or arg is sympy.S.ComplexInfinity:
            return sympy.S.NaN
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
        if arg is sympy.S.NaN or arg is sympy.S.ComplexInfinity:
            return sympy.S.NaN  # torch.relu(nan) is nan; zoo has no sign (a 1/0 upstream)
        if arg.is_Number:
            return arg if arg > 0 else sympy.S.Zero
        if arg.is_nonnegative:
            return arg
        if arg.is_nonpositive:
            return sympy.S.Zero
        return None

    def fdiff(self, argindex=1):
        return sympy.Heaviside(self.args[0], 0)

    def _eval_rewrite_as_Max(self, arg, **kwargs):
        return sympy.Max(arg, 0)

    def _eval_is_real(self):
        return self.args[0].is_real

    def _latex(self, printer, exp=None):
        body = rf"\operatorname{{relu}}\left({printer._print(self.args[0])}\right)"
        return rf"{body}^{{{exp}}}" if exp else body


class sign(sympy.sign):  # noqa: N801 - spelled as in torch
    """SymPy's sign with torch's gradient: 0 everywhere (SymPy's is 2·DiracDelta, undefined at 0)."""

    def _eval_derivative(self, x):
        return sympy.S.Zero

    def fdiff(self, argindex=1):
        return sympy.S.Zero


class softplus(sympy.Function):  # noqa: N801 - spelled as in torch
    """log(1 + exp(x)); its derivative is the sigmoid."""

    @classmethod
    def eval(cls, arg):
        if arg.is_Number:
            return sympy.log(1 + sympy.exp(arg))
        return None

    def fdiff(self, argindex=1):
        return sigmoid(self.args[0])

    def _eval_is_real(self):
        return self.args[0].is_real

    def _latex(self, printer, exp=None):
        body = rf"\operatorname{{softplus}}\left({printer._print(self.args[0])}\right)"
        return rf"{body}^{{{exp}}}" if exp else body


def _indicator(condition) -> sympy.Expr:
    return sympy.Piecewise((1, condition), (0, True))


class amax(sympy.Function):  # noqa: N801 - spelled as in torch
    """The largest argument; ties share the derivative evenly, as torch's amax and max() do."""

    @classmethod
    def eval(cls, *args):
        if all(a.is_Number for a in args):
            return max(args)
        return None

    def fdiff(self, argindex=1):
        ties = sympy.Add(*[_indicator(sympy.Eq(a, self)) for a in self.args])
        return _indicator(sympy.Eq(self.args[argindex - 1], self)) / ties


class norm2(sympy.Function):  # noqa: N801
    """The Euclidean norm of the arguments; its gradient at 0 is 0, as torch's."""

    @classmethod
    def eval(cls, *args):
        if all(a.is_Number for a in args):
            return sympy.sqrt(sympy.Add(*[a**2 for a in args]))
        return None

    def fdiff(self, argindex=1):
        return sympy.Piecewise((0, sympy.Eq(self, 0)), (self.args[argindex - 1] / self, True))

    def _latex(self, printer, exp=None):
        body = r"\left\|" + ", ".join(printer._print(a) for a in self.args) + r"\right\|"
        return rf"{body}^{{{exp}}}" if exp else body


def first_max(args: list) -> sympy.Expr:
    """max with the derivative going to the first maximal argument, as torch's max(dim) does."""
    pieces = []
    for i, a in enumerate(args):
        condition = sympy.And(*[a > b for b in args[:i]], *[a >= b for b in args[i + 1 :]])
        pieces.append((a, condition))
    pieces[-1] = (args[-1], True)
    return sympy.Piecewise(*pieces)


def first_max_indicator(args: list, i: int) -> sympy.Expr:
    """1 where ``args[i]`` is the first maximal argument, else 0."""
    a = args[i]
    condition = sympy.And(*[a > b for b in args[:i]], *[a >= b for b in args[i + 1 :]])
    return _indicator(condition)
