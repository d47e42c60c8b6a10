"""Safe LaTeX pieces for documents: escaped text, numbers, shapes and elided matrices.

Everything a user types reaches a document through these functions, so a tensor
name or an expression can never leave math mode or start a TeX command.

>>> text_latex("a_b & {c}")
'a\\\\_b \\\\& \\\\{c\\\\}'
>>> number_latex(2.0), number_latex(1.5e-7)
('2', '1.5 \\\\times 10^{-7}')
>>> matrix_latex([["1", "2"], ["3", "4"]])
'\\\\begin{pmatrix} 1 & 2 \\\\\\\\ 3 & 4 \\\\end{pmatrix}'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import sympy
from sympy.printing.latex import LatexPrinter

# In TeX's text mode; math mode gets the same characters through \mathrm{} via ``symbols.latex_name``.
_TEXT_ESCAPES = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "#": r"\#",
    "%": r"\%",
    "_": r"\_",
    "^": r"\^{}",
    "~": r"\~{}",
}

# In math mode (inside \mathrm{}), where text-mode accents and \textbackslash are errors.
_MATH_ESCAPES = {**_TEXT_ESCAPES, "\\": r"\backslash{}", "^": r"\wedge{}", "~": r"\sim{}"}

ELIDE_AFTER = 6  # rows or columns shown in full; beyond this a matrix keeps its corners


def text_latex(text: str, *, math: bool = False) -> str:
    """``text`` for TeX's text mode (``\\texttt{…}``, prose), or inside ``\\mathrm{}`` with ``math=True``:
    every special character escaped.

    Characters outside printable ASCII are spelled by their code point (``ω`` → ``u3c9``): pdflatex
    has no glyph for most of them, and distinct names must stay distinct.
    """
    escapes = _MATH_ESCAPES if math else _TEXT_ESCAPES
    out = []
    for char in str(text):
        if char in escapes:
            out.append(escapes[char])
        elif " " <= char <= "~":
            out.append(char)
        else:  # spelled by its code point, so that different names stay different (ω → u3c9)
            out.append(f"u{ord(char):x}")
    return "".join(out)


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


def shape_latex(shape: Sequence[Any]) -> str:
    """``1 \\times 2``, ``k \\times n``; a 0-d shape is ``()``."""
    if not shape:
        return "()"
    return r" \times ".join(sympy.latex(sympy.sympify(d)) for d in shape)


def _corner_indices(size: int, limit: int) -> list[int | None]:
    """All indices, or the first ``limit - 1`` and the last with ``None`` marking the gap."""
    if size <= limit:
        return list(range(size))
    return list(range(limit - 2)) + [None, size - 1]


def matrix_latex(cells: Any, limit: int = ELIDE_AFTER) -> str:
    """A pmatrix of LaTeX strings; beyond ``limit`` rows or columns the middle becomes ⋯ / ⋮ / ⋱.

    A 1-d array is one row; a 0-d one is its entry; more dimensions are shown as
    rows of the first index with the rest flattened.
    """
    arr = np.asarray(cells, dtype=object)
    if arr.ndim == 0:
        return str(arr.item())
    arr = arr.reshape(1, -1) if arr.ndim == 1 else arr.reshape(arr.shape[0], -1)
    rows = _corner_indices(arr.shape[0], limit)
    cols = _corner_indices(arr.shape[1], limit)
    lines = []
    for r in rows:
        line = []
        for c in cols:
            if r is None:
                line.append(r"\ddots" if c is None else r"\vdots")
            else:
                line.append(r"\cdots" if c is None else str(arr[r, c]))
        lines.append(" & ".join(line))
    return r"\begin{pmatrix} " + r" \\ ".join(lines) + r" \end{pmatrix}"


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


def elided(items: Sequence[Any], limit: int = ELIDE_AFTER) -> list[Any]:
    """The items, or the first ``limit - 1`` and the last with ``None`` standing for the rest."""
    return [None if i is None else items[i] for i in _corner_indices(len(items), limit)]
