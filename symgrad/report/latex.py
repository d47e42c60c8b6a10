"""LaTeX for documents: numbers, and formulas whose long sums are elided.

Names, shapes and matrices come from :mod:`symgrad.core.latex`; user text reaches
documents only through those functions and the ones here.

>>> number_latex(2.0), number_latex(1.5e-7)
('2', '1.5 \\\\times 10^{-7}')
"""

from __future__ import annotations

import math
from typing import Any

import sympy
from sympy.printing.latex import LatexPrinter
from sympy.printing.precedence import precedence
from sympy.printing.str import StrPrinter

from ..core.latex import ELIDE_AFTER


def number_latex(value: Any) -> str:
    """A number the way the document prints it: integers plainly, otherwise 6 significant digits."""
    x = float(value)
    if math.isnan(x):
        return r"\mathrm{nan}"
    if math.isinf(x):
        return r"\infty" if x > 0 else r"-\infty"
    if x == 0:
        return "0"
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    text = f"{x:.6g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        return rf"{mantissa} \times 10^{{{int(exponent)}}}"
    return text


class _ElidingLatexPrinter(LatexPrinter):
    """SymPy's LaTeX printer, except that a sum of more than ``limit`` terms, at any depth (the
    denominator of a softmax, say), keeps its first terms and its last around ``\\cdots``."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def _print_Add(self, expr: sympy.Add, order: str | None = None) -> str:
        if len(expr.args) <= self.limit:
            return super()._print_Add(expr, order)
        terms = list(expr.args)  # SymPy's own order: sorting a long sum only to drop most of it is slow
        text = ""
        for position, term in enumerate([*terms[: self.limit - 2], None, terms[-1]]):
            if term is None:
                text += r" + \cdots"
                continue
            if position and term.could_extract_minus_sign():
                text, term = text + " - ", -term
            elif position:
                text += " + "
            piece = self._print(term)
            text += rf"\left({piece}\right)" if self._needs_add_brackets(term) else piece
        return text


class _ElidingStrPrinter(StrPrinter):
    """SymPy's text printer, with sums of more than ``limit`` terms elided as in :func:`formula_latex`."""

    def __init__(self, limit: int) -> None:
        super().__init__({"order": "none"})
        self.limit = limit

    def _print_Add(self, expr: sympy.Add, order: str | None = None) -> str:
        if len(expr.args) <= self.limit:
            return super()._print_Add(expr, order)
        terms = [*expr.args[: self.limit - 2], None, expr.args[-1]]
        pieces = ["…" if term is None else self.parenthesize(term, precedence(expr)) for term in terms]
        return " + ".join(pieces)


def formula_text(expr: Any, limit: int | None = ELIDE_AFTER) -> str:
    """A SymPy formula as text; sums of more than ``limit`` terms, at any depth, are elided (None: never).

    >>> import sympy
    >>> formula_text(sum(sympy.symbols("a0:9")), limit=4)
    'a0 + a1 + … + a8'
    """
    expr = sympy.sympify(expr)
    return sympy.sstr(expr, order="none") if limit is None else _ElidingStrPrinter(limit).doprint(expr)


def formula_latex(expr: Any, limit: int = ELIDE_AFTER) -> str:
    """A SymPy formula as LaTeX; sums of more than ``limit`` terms, at any depth, are elided.

    >>> import sympy
    >>> formula_latex(sum(sympy.symbols("a0:9")), limit=4)
    'a_{0} + a_{1} + \\\\cdots + a_{8}'
    >>> x = sympy.symbols("x0:9")
    >>> formula_latex(sympy.exp(x[0]) / sum(map(sympy.exp, x)), limit=4)
    '\\\\frac{e^{x_{0}}}{e^{x_{0}} + e^{x_{1}} + \\\\cdots + e^{x_{8}}}'
    """
    return _ElidingLatexPrinter(limit).doprint(sympy.sympify(expr))
