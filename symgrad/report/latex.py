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
        terms = self._as_ordered_terms(expr, order=order)
        if len(terms) <= self.limit:
            return super()._print_Add(expr, order)
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
