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
from fractions import Fraction
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
        return 0.0 if x < 0 else x  # as torch's kernel: relu(nan) is nan, relu(-0.0) is -0.0

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


def compare(relation: type, a: Any, b: Any) -> Any:
    """``relation(a, b)`` as torch compares: nan, and a complex value (an out-of-domain result, nan in torch),
    compares False, or True for ``!=``; SymPy raises TypeError on those, also deep inside a Piecewise.

    >>> compare(sympy.GreaterThan, sympy.log(-2), -2), compare(sympy.Ne, sympy.nan, 1)
    (False, True)
    """
    a, b = sympy.sympify(a), sympy.sympify(b)
    if a.has(sympy.Piecewise) or b.has(sympy.Piecewise):  # SymPy folds it into the comparison later, unsafely
        a, b = sympy.piecewise_fold(a), sympy.piecewise_fold(b)
        for side, piecewise in ((0, a), (1, b)):
            if isinstance(piecewise, sympy.Piecewise):
                branches = [(compare(relation, *((e, b) if side == 0 else (a, e))), c) for e, c in piecewise.args]
                return _boolean_cases(branches)
    try:
        return relation(a, b)
    except TypeError:
        if a.free_symbols or b.free_symbols:
            raise
    return sympy.true if relation is sympy.Ne else sympy.false


def gt(a: Any, b: Any) -> Any:
    """``a > b`` as torch compares (nan and out-of-domain values: False)."""
    return compare(sympy.StrictGreaterThan, a, b)


def ge(a: Any, b: Any) -> Any:
    """``a >= b`` as torch compares."""
    return compare(sympy.GreaterThan, a, b)


def lt(a: Any, b: Any) -> Any:
    """``a < b`` as torch compares."""
    return compare(sympy.StrictLessThan, a, b)


def le(a: Any, b: Any) -> Any:
    """``a <= b`` as torch compares."""
    return compare(sympy.LessThan, a, b)


def _boolean_cases(branches: list[tuple[Any, Any]]) -> Any:
    """A Piecewise of truth values as one Boolean: the first branch whose condition holds decides."""
    cases, earlier = [], []
    for value, condition in branches:
        cases.append(sympy.And(value, condition, *(sympy.Not(c) for c in earlier)))
        earlier.append(condition)
    return sympy.Or(*cases)


def _indicator(condition) -> sympy.Expr:
    return sympy.Piecewise((1, condition), (0, True), evaluate=False)


class ManyArguments:
    """A mixin for functions of many arguments: the chain rule over the arguments that hold the symbol only
    (SymPy's visits every argument, which is quadratic for a reduction)."""

    def _eval_derivative(self, s):
        terms = [
            self.fdiff(i + 1) * (sympy.S.One if a == s else a.diff(s))
            for i, a in enumerate(self.args)
            if s in a.free_symbols
        ]
        return sympy.Add(*terms)


class amax(ManyArguments, sympy.Function):  # noqa: N801 - spelled as in torch
    """The largest argument; ties share the derivative evenly, as torch's amax and max() do."""

    @classmethod
    def eval(cls, *args):
        if all(a.is_Number for a in args):
            return sympy.nan if any(a is sympy.nan for a in args) else max(args)
        return None

    def fdiff(self, argindex=1):
        if any(a.has(sympy.Piecewise) for a in self.args):  # SymPy would fold the Piecewise into Eq: exponential
            return is_max(argindex - 1, *self.args) / max_ties(*self.args)
        return _indicator(sympy.Eq(self.args[argindex - 1], self, evaluate=False)) / max_ties(*self.args)

    @staticmethod
    def float64(*xs: float) -> float:
        return math.nan if any(math.isnan(x) for x in xs) else max(xs)


class is_max(sympy.Function):  # noqa: N801
    """``is_max(i, *args)``: 1 where ``args[i]`` equals the largest argument (or, with ``first=True`` as
    ``is_first_max``, is the first of them), else 0.

    An indicator as a function rather than ``Piecewise((1, Eq(args[i], amax(*args))), (0, True))``: SymPy folds
    every Piecewise inside a condition into the condition, which for arguments that are themselves Piecewise
    (clamp, where, threshold) takes exponential time.

    >>> a, b = sympy.symbols("a b", real=True)
    >>> is_max(0, a, b).subs({a: 2, b: 2}), is_max(1, a, b).subs({a: 3, b: 2})
    (1, 0)
    """

    first = False

    @classmethod
    def eval(cls, index, *args):
        if all(a.is_Number for a in args):
            return sympy.Integer(int(cls.float64(index, *args)))
        return None

    def fdiff(self, argindex=1):
        return sympy.S.Zero

    @classmethod
    def float64(cls, index: float, *xs: float) -> float:
        i = int(index)
        if any(math.isnan(x) for x in xs):
            return 0.0
        top = max(xs)
        if cls.first:
            return 1.0 if xs[i] == top and all(x < top for x in xs[:i]) else 0.0
        return 1.0 if xs[i] == top else 0.0

    def _latex(self, printer, exp=None):
        index, *args = self.args
        listed = ", ".join(printer._print(a) for a in args)
        relation = r"\text{ is the first maximum of }" if self.first else r" = \max"
        body = rf"\left[{printer._print(args[int(index)])}{relation}\left({listed}\right)\right]"
        return rf"{body}^{{{exp}}}" if exp else body


class is_first_max(is_max):  # noqa: N801
    """1 where ``args[i]`` is the first maximal argument, else 0 (torch's max(dim) backward)."""

    first = True


class max_ties(sympy.Function):  # noqa: N801
    """How many arguments equal the largest (the share of amax's gradient each tie gets is its inverse)."""

    @classmethod
    def eval(cls, *args):
        if all(a.is_Number for a in args):
            top = amax(*args)
            return sympy.Integer(sum(1 for a in args if a == top)) if top is not sympy.nan else sympy.nan
        return None

    def _eval_rewrite_as_Piecewise(self, *args, **kwargs):
        top = amax(*args)
        return sympy.Add(*[_indicator(sympy.Eq(a, top)) for a in args])

    @staticmethod
    def float64(*xs: float) -> float:
        top = amax.float64(*xs)
        return math.nan if math.isnan(top) else float(sum(1 for x in xs if x == top))


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


class log_of_determinant(sympy.Function):  # noqa: N801 - spelled like a SymPy function
    """torch's logdet of a determinant d: log d, -inf at 0, and nan where d < 0 (torch computes
    ``where(sign == -1, nan, logabsdet)``), so its derivative there is 0: no gradient flows from the nan."""

    @classmethod
    def eval(cls, d):
        if d is sympy.nan:
            return sympy.nan
        if d.is_Number:
            return sympy.nan if d < 0 else (-sympy.oo if d == 0 else sympy.log(d))
        return None

    def fdiff(self, argindex=1):
        (d,) = self.args
        return sympy.Piecewise((0, lt(d, 0)), (1 / d, True))

    def _eval_rewrite_as_Piecewise(self, d, **kwargs):
        return sympy.Piecewise((sympy.nan, lt(d, 0)), (sympy.log(d), True))

    @staticmethod
    def float64(d: float) -> float:
        return math.nan if d < 0 else (-math.inf if d == 0 else math.log(d))

    def _sympystr(self, printer):
        return f"log({printer._print(self.args[0])})"

    def _latex(self, printer, exp=None):
        body = rf"\log\left({printer._print(self.args[0])}\right)"
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
    return args[0] if len(args) == 1 else max_first(*args)


class max_first(ManyArguments, sympy.Function):  # noqa: N801
    """The largest argument; its derivative goes to the first maximal one (torch's max(dim) backward).

    A function rather than a Piecewise: SymPy differentiates a Piecewise of n branches slowly, this in n steps.
    """

    @classmethod
    def eval(cls, *args):
        if all(a.is_Number for a in args):
            return sympy.nan if any(a is sympy.nan for a in args) else max(args)
        return None

    def fdiff(self, argindex=1):
        return first_max_indicator(list(self.args), argindex - 1)

    def _eval_rewrite_as_Piecewise(self, *args, **kwargs):
        pieces = [(a, _first_max_condition(list(args), i)) for i, a in enumerate(args[:-1])]
        return sympy.Piecewise(*pieces, (args[-1], True))

    @staticmethod
    def float64(*xs: float) -> float:
        return math.nan if any(math.isnan(x) for x in xs) else max(xs)

    def _latex(self, printer, exp=None):
        body = r"\max\left(" + ", ".join(printer._print(a) for a in self.args) + r"\right)"
        return rf"{body}^{{{exp}}}" if exp else body


def _first_max_condition(args: list, i: int):
    """args[i] is above every argument before it and at least every one after it (built without SymPy's
    assumption queries, which would dominate the time of a Jacobian)."""
    a = args[i]
    before = [_above(a, b, strict=True) for b in args[:i]]
    after = [_above(a, b, strict=False) for b in args[i + 1 :]]
    return sympy.And(*before, *after)


def _above(a: sympy.Expr, b: sympy.Expr, strict: bool):
    """``a > b`` (or ``>=``), decided when both are numbers, a nan counting as the largest as in torch's argmax
    (SymPy's Piecewise cannot canonicalise an unevaluated ``1 >= 1``, and a nan comparison raises)."""
    if a.is_Number and b.is_Number:
        if a is sympy.nan or b is sympy.nan:
            return sympy.true if a is sympy.nan and (b is not sympy.nan or not strict) else sympy.false
        return sympy.true if (a > b if strict else a >= b) else sympy.false
    return sympy.StrictGreaterThan(a, b, evaluate=False) if strict else sympy.GreaterThan(a, b, evaluate=False)


def first_max_indicator(args: list, i: int) -> sympy.Expr:
    """1 where ``args[i]`` is the first maximal argument, else 0."""
    if any(a.has(sympy.Piecewise) for a in args):  # as in amax.fdiff: no Piecewise inside a condition
        return is_first_max(i, *args)
    return sympy.Piecewise((1, _first_max_condition(args, i)), (0, True), evaluate=False)


# ── rounding: torch's gradient is 0 everywhere ────────────────────────────
class _Flat:
    """A mixin for SymPy functions whose derivative torch takes to be 0 (rounding)."""

    def fdiff(self, argindex=1):
        return sympy.S.Zero

    def _eval_derivative(self, x):
        return sympy.S.Zero


class floor(_Flat, sympy.floor):  # noqa: N801 - spelled as in torch
    """floor(x), with torch's zero gradient (SymPy's is left unevaluated)."""

    float64 = staticmethod(lambda x: float(np.floor(x)))


class ceil(_Flat, sympy.ceiling):  # noqa: N801 - spelled as in torch
    """ceil(x), with torch's zero gradient."""

    float64 = staticmethod(lambda x: float(np.ceil(x)))


class trunc(_Flat, sympy.Function):  # noqa: N801 - spelled as in torch
    """x rounded toward zero, with torch's zero gradient."""

    @classmethod
    def eval(cls, arg):
        if arg.is_Integer or arg in (sympy.nan, sympy.oo, -sympy.oo):
            return arg
        if arg.is_Rational:
            return sympy.Integer(int(arg))
        if arg.is_Float:
            return sympy.Float(float(np.trunc(float(arg))))
        return None

    float64 = staticmethod(lambda x: float(np.trunc(x)))


class round_half_even(_Flat, sympy.Function):  # noqa: N801
    """torch.round: to the nearest integer, ties to even (IEEE's nearbyint), with torch's zero gradient."""

    @classmethod
    def eval(cls, arg):
        if arg.is_Integer or arg in (sympy.nan, sympy.oo, -sympy.oo):
            return arg
        if arg.is_Rational:
            return sympy.Integer(round(Fraction(int(arg.p), int(arg.q))))  # Python rounds ties to even
        if arg.is_Float:
            return sympy.Float(float(np.round(float(arg))))
        return None

    float64 = staticmethod(lambda x: float(np.round(x)))

    def _sympystr(self, printer):
        return f"round({printer._print(self.args[0])})"

    def _latex(self, printer, exp=None):
        body = rf"\operatorname{{round}}\left({printer._print(self.args[0])}\right)"
        return rf"{body}^{{{exp}}}" if exp else body


class div_floor(_Flat, sympy.Function):  # noqa: N801
    """torch.div(a, b, rounding_mode="floor"): floor(a / b), computed as Python's ``//`` (a / b for b = 0)."""

    nargs = 2

    @classmethod
    def eval(cls, a, b):
        if a.is_Number and b.is_Number:
            if a.is_Rational and b.is_Rational and b != 0:
                return sympy.floor(a / b)
            return sympy.Float(div_floor.float64(float(a), float(b)))
        return None

    @staticmethod
    def float64(a: float, b: float) -> float:
        with np.errstate(all="ignore"):
            return float(np.floor_divide(np.float64(a), np.float64(b)))

    def _latex(self, printer, exp=None):
        a, b = (printer._print(x) for x in self.args)
        body = rf"\left\lfloor\frac{{{a}}}{{{b}}}\right\rfloor"
        return rf"{body}^{{{exp}}}" if exp else body


# ── binary functions with torch's numerics ─────────────────────────────────
class hypot(sympy.Function):  # noqa: N801 - spelled as in torch
    """sqrt(a² + b²) without overflow; its gradient a / hypot is nan at (0, 0), as torch's."""

    nargs = 2

    @classmethod
    def eval(cls, a, b):
        if a.is_Number and b.is_Number:
            return sympy.sqrt(a**2 + b**2) if not (a.is_Float or b.is_Float) else sympy.Float(math.hypot(a, b))
        return None

    def fdiff(self, argindex=1):
        return self.args[argindex - 1] / self

    def _eval_rewrite_as_sqrt(self, a, b, **kwargs):
        return sympy.sqrt(a**2 + b**2)

    float64 = staticmethod(lambda a, b: float(np.hypot(a, b)))

    def _eval_is_real(self):
        return self.args[0].is_real and self.args[1].is_real


class logaddexp(sympy.Function):  # noqa: N801 - spelled as in torch
    """log(exp(a) + exp(b)), computed as torch does: max + log1p(exp(-|a - b|))."""

    nargs = 2

    @classmethod
    def eval(cls, a, b):
        if a.is_Float and b.is_Float:
            return sympy.Float(logaddexp.float64(float(a), float(b)))
        return None

    def fdiff(self, argindex=1):
        a, b = self.args
        return 1 / (1 + sympy.exp(b - a)) if argindex == 1 else 1 / (1 + sympy.exp(a - b))

    def _eval_rewrite_as_log(self, a, b, **kwargs):
        return sympy.log(sympy.exp(a) + sympy.exp(b))

    @staticmethod
    def float64(a: float, b: float) -> float:
        if math.isinf(a) and a == b:
            return a
        with np.errstate(all="ignore"):
            return float(np.maximum(a, b) + np.log1p(np.exp(-np.abs(np.float64(a) - b))))

    def _eval_is_real(self):
        return self.args[0].is_real and self.args[1].is_real


class xlogy(sympy.Function):  # noqa: N801 - spelled as in torch
    """x · log(y), and 0 where x is 0 (unless y is nan), as torch.xlogy."""

    nargs = 2

    @classmethod
    def eval(cls, x, y):
        if y is sympy.nan:
            return sympy.nan
        if x.is_zero:
            return sympy.S.Zero
        if x.is_Number and y.is_Number:
            return x * sympy.log(y) if not (x.is_Float or y.is_Float) else sympy.Float(xlogy.float64(x, y))
        return None

    def fdiff(self, argindex=1):
        x, y = self.args
        if argindex == 2:
            return x / y
        return sympy.Piecewise((0, sympy.Eq(x, 0) & (y <= 0)), (sympy.log(y), True))  # torch's value at x = 0

    @staticmethod
    def float64(x: float, y: float) -> float:
        if math.isnan(y):
            return math.nan
        if x == 0:
            return 0.0
        with np.errstate(all="ignore"):
            return float(np.float64(x) * np.log(np.float64(y)))


class isnan(sympy.logic.boolalg.BooleanFunction):  # noqa: N801 - spelled as in torch
    """Whether x is nan (left unevaluated for a symbol: its value decides)."""

    @classmethod
    def eval(cls, arg):
        if arg is sympy.nan:
            return sympy.true
        if arg.is_Number:
            return sympy.false
        return None

    float64 = staticmethod(lambda x: math.isnan(x))

    def _eval_as_set(self):
        # Over the reals isnan is never true, but the symbol stands for a float that may be nan: SymPy must not
        # drop a branch guarded by isnan, so the set is left unknown (SymPy then keeps the condition as it is).
        raise NotImplementedError("isnan has no set over the reals")


def first_argmax(args: list) -> sympy.Expr:
    """The index of the first maximal argument, as a Piecewise of integers (torch's argmax and max(dim))."""
    if len(args) == 1:
        return sympy.S.Zero
    pieces = [(i, _first_max_condition(args, i)) for i in range(len(args) - 1)]
    return sympy.Piecewise(*pieces, (len(args) - 1, True))
