"""Scalar SymPy functions that SymPy lacks, with torch's conventions.

Their derivatives are what torch uses at non-differentiable points:
``relu'(0) = 0`` (``Heaviside(x, 0)``), a tie in ``maximum`` gives each side half, the
gradient of a norm or a standard deviation is 0 where it is 0; ``Abs'(0) = sign(0) = 0``
comes from SymPy. None of them rewrites itself into another function (as SymPy's ``Max``
would absorb a nested ``Max``), so no simplification can lose those rules. Each gives its
float64 value, as torch computes it, through ``float64``.

>>> x = sympy.Symbol("x", real=True)
>>> sigmoid(x).diff(x)
(1 - sigmoid(x))*sigmoid(x)
>>> relu(x).diff(x)
Heaviside(x, 0)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
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

    @staticmethod
    def float64(x: float) -> float:
        with np.errstate(over="ignore"):
            return float(1 / (1 + np.exp(-np.float64(x))))

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

    @staticmethod
    def float64(x: float) -> float:
        return x if x > 0 or math.isnan(x) else 0.0  # relu(nan) is nan

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

    @staticmethod
    def float64(x: float) -> float:
        return x if x > 20 else float(np.log1p(np.exp(x)))  # torch's threshold: x itself above 20

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
            return sympy.nan if any(a is sympy.nan for a in args) else max(args)
        return None

    def fdiff(self, argindex=1):
        ties = sympy.Add(*[_indicator(sympy.Eq(a, self)) for a in self.args])
        return _indicator(sympy.Eq(self.args[argindex - 1], self)) / ties

    @staticmethod
    def float64(*xs: float) -> float:
        return math.nan if any(math.isnan(x) for x in xs) else max(xs)


class norm2(sympy.Function):  # noqa: N801
    """The Euclidean norm of the arguments; its gradient at 0 is 0, as torch's."""

    @classmethod
    def eval(cls, *args):
        if all(a.is_Number for a in args):
            return sympy.sqrt(sympy.Add(*[a**2 for a in args]))
        return None

    def fdiff(self, argindex=1):
        return masked_div(self.args[argindex - 1], self)

    @staticmethod
    def float64(*xs: float) -> float:
        return float(np.sqrt(np.sum(np.square(np.array(xs, dtype=np.float64)))))

    def _latex(self, printer, exp=None):
        body = r"\left\|" + ", ".join(printer._print(a) for a in self.args) + r"\right\|"
        return rf"{body}^{{{exp}}}" if exp else body


class masked_div(sympy.Function):  # noqa: N801
    """``a / b``, and 0 where ``b`` is 0: the guarded division in torch's norm and std backward."""

    @classmethod
    def eval(cls, a, b):
        if b.is_zero:
            return sympy.S.Zero
        if a.is_Number and b.is_Number:
            return a / b
        return None

    def fdiff(self, argindex=1):
        a, b = self.args
        return masked_div(1, b) if argindex == 1 else -masked_div(a, b**2)

    def _eval_rewrite_as_Piecewise(self, a, b, **kwargs):
        return sympy.Piecewise((0, sympy.Eq(b, 0)), (a / b, True))

    @staticmethod
    def float64(a: float, b: float) -> float:
        return 0.0 if b == 0 else a / b

    def _latex(self, printer, exp=None):
        body = rf"\frac{{{printer._print(self.args[0])}}}{{{printer._print(self.args[1])}}}"
        return rf"\left({body}\right)^{{{exp}}}" if exp else body


class maximum(sympy.Function):  # noqa: N801 - spelled as in torch
    """The larger of two values; at a tie each gets half of the derivative, as in torch.maximum's backward."""

    nargs = 2

    @classmethod
    def eval(cls, a, b):
        if a.is_Number and b.is_Number:
            if a is sympy.nan or b is sympy.nan or not (a.is_extended_real and b.is_extended_real):
                return sympy.nan
            return max(a, b)
        return None

    def fdiff(self, argindex=1):
        a, b = self.args
        return sympy.Heaviside(a - b, sympy.S.Half) if argindex == 1 else sympy.Heaviside(b - a, sympy.S.Half)

    def _eval_rewrite_as_Piecewise(self, a, b, **kwargs):
        return sympy.Piecewise((a, a >= b), (b, True))

    def _eval_is_real(self):
        return self.args[0].is_real and self.args[1].is_real

    @staticmethod
    def float64(a: float, b: float) -> float:
        return math.nan if math.isnan(a) or math.isnan(b) else max(a, b)

    def _latex(self, printer, exp=None):
        body = rf"\max\left({printer._print(self.args[0])}, {printer._print(self.args[1])}\right)"
        return rf"{body}^{{{exp}}}" if exp else body


class stdev(sympy.Function):  # noqa: N801
    """The standard deviation of all arguments but the first, which is the correction (torch's
    ``std``); its derivative is 0 where it is 0, as torch's std backward."""

    @classmethod
    def eval(cls, correction, *values):
        if all(v.is_Number for v in (correction, *values)):
            return sympy.sqrt(variance(list(values), correction))
        return None

    def fdiff(self, argindex=1):
        correction, *values = self.args
        if argindex == 1:
            raise sympy.ArgumentIndexError(self, argindex)
        mean = sympy.Add(*values) / len(values)
        return masked_div(values[argindex - 2] - mean, _divisor(len(values), correction) * self)

    @staticmethod
    def float64(correction: float, *values: float) -> float:
        data = np.array(values, dtype=np.float64)
        with np.errstate(all="ignore"):
            return float(np.sqrt(np.sum((data - data.mean()) ** 2) / max(0.0, len(values) - correction)))

    def _latex(self, printer, exp=None):
        body = r"\operatorname{std}\left(" + ", ".join(printer._print(a) for a in self.args[1:]) + r"\right)"
        return rf"{body}^{{{exp}}}" if exp else body


def _divisor(count: int, correction: Any) -> Any:
    """N − correction, never below 0: torch divides by 0 (giving inf or nan) when the correction is too large."""
    difference = count - correction
    return difference if not getattr(difference, "is_number", True) or difference > 0 else sympy.S.Zero


def variance(values: list, correction: Any) -> sympy.Expr:
    """Σ (x − mean)² / (N − correction), as torch.var (a float correction, too)."""
    mean = sympy.Add(*values) / len(values)
    divisor = _divisor(len(values), correction)
    total = sympy.Add(*[(v - mean) ** 2 for v in values])
    return total / divisor if divisor != 0 else total * sympy.oo  # inf, or nan for 0 / 0, as in torch


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
