"""LaTeX for documents: numbers, and formulas whose long sums are elided.

Names, shapes and matrices come from :mod:`symgrad.core.latex`; user text reaches
documents only through those functions and the ones here.

>>> number_latex(2.0), number_latex(1.5e-7)
('2', '1.5 \\\\times 10^{-7}')
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import sympy
from sympy.printing.latex import LatexPrinter
from sympy.printing.precedence import precedence
from sympy.printing.str import StrPrinter

from ..core.latex import ELIDE_AFTER, corner_indices


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


# Widths in em of the font the formula is set in; estimates that err on the wide side, so that a formula
# judged to fit does fit. The page's text is 16 cm wide: 45 em at 10 pt (article), 43 em at 10.5 pt (ctexart).
LINE_BUDGET = 38.0  # a displayed line, ``lhs = rhs``
MATRIX_BUDGET = 32.0  # a displayed matrix, leaving room for ``lhs =`` or a weight in front of it
CELL_SCALE = 0.85  # a matrix's cells against :func:`latex_width`'s estimate (0.75 let 10.5 pt Chinese pages overflow)

_NAMED = {"log", "exp", "tanh", "sinh", "cosh", "sin", "cos", "tan", "max", "min", "sign", "det", "ln"}
_ARGUMENT = {"mathrm", "mathbf", "mathit", "operatorname", "text", "bar", "overline", "hat", "tilde", "vec"}
_SPACES = {"quad": 1.0, "qquad": 2.0, ",": 0.17, ";": 0.28, ":": 0.22, " ": 0.33, "!": -0.17}
_OPERATORS = {"odot": 1.2, "cdot": 1.0, "times": 1.2, "cdots": 1.4, "ldots": 1.4, "le": 1.35, "ge": 1.35}


def _tokens(text: str) -> list[tuple[str, str]]:
    """LaTeX as ``("cmd", name)``, ``("group", inside)`` and ``("char", c)`` tokens."""
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            j = i + 1
            while j < len(text) and text[j].isalpha():
                j += 1
            j = max(j, i + 2)
            out.append(("cmd", text[i + 1 : j]))
            i = j
        elif c == "{":
            depth, j = 1, i + 1
            while j < len(text) and depth:
                if text[j] == "\\":
                    j += 2
                    continue
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            out.append(("group", text[i + 1 : j - 1]))
            i = j
        else:
            out.append(("char", c))
            i += 1
    return out


def _top_level_split(text: str, separators: tuple[str, ...]) -> list[str]:
    """``text`` cut at the separators that are outside every group, ``\\left…\\right`` and environment."""
    pieces, start, depth, i = [], 0, 0, 0
    while i < len(text):
        if depth == 0 and i > start:  # no separator opens or closes a group: look for one before the step
            hit = next((s for s in separators if text.startswith(s, i)), None)
            if hit is not None:
                pieces.append(text[start:i])
                start = i = i + len(hit)
                continue
        c = text[i]
        if c == "\\":
            j = i + 1
            while j < len(text) and text[j].isalpha():
                j += 1
            name = text[i + 1 : j]
            if name in ("left", "begin"):
                depth += 1
            elif name in ("right", "end"):
                depth -= 1
            if name in ("left", "right") and j < len(text) and text[j] != "\\":
                j += 1  # the delimiter, which is no group of its own
            i = max(j, i + 2)
            continue
        if c in "{([":
            depth += 1
        elif c in "})]":
            depth -= 1
        i += 1
    pieces.append(text[start:])
    return pieces


def _matrix_width(body: str, scale: float) -> float:
    lines = [re.sub(r"^\s*\[[\w.]*\]", "", row) for row in _top_level_split(body, (r"\\",))]  # no [0.6ex]
    rows = [_top_level_split(row, ("&",)) for row in lines]
    columns = max(len(r) for r in rows)
    widths = [max(latex_width(r[c], CELL_SCALE) if c < len(r) else 0.0 for r in rows) for c in range(columns)]
    return scale * (sum(widths) + 1.0 * (columns - 1) + 1.2)


def latex_width(text: str, scale: float = 1.0) -> float:
    """An estimate, in em, of how wide ``text`` (LaTeX math) is set; ``scale`` for scripts and
    fractions in text style.

    >>> round(latex_width("B_{0,0} + B_{0,1}"), 1)
    5.0
    """
    tokens = _tokens(text)
    total = 0.0
    i = 0
    while i < len(tokens):
        kind, value = tokens[i]
        i += 1
        if kind == "group":
            total += latex_width(value, scale)
        elif kind == "char":
            if value in "^_" and i < len(tokens):
                total += latex_width(_source(tokens[i]), scale * 0.7)
                i += 1
            elif value in "+-":
                total += 1.2 * scale
            elif value in "=<>":
                total += 1.35 * scale
            elif value == ",":
                total += 0.45 * scale
            elif value in "()[]|":
                total += 0.4 * scale
            elif value.isspace() or value == "&":
                pass
            elif value.isupper():
                total += 0.8 * scale
            else:
                total += 0.55 * scale
        elif value in ("frac", "dfrac", "tfrac"):
            parts = [_source(t) for t in tokens[i : i + 2]]
            i += 2
            total += max((latex_width(p, scale if scale < 1 else 1.0) for p in parts), default=0.0) + 0.2 * scale
        elif value == "begin" and i < len(tokens):
            environment = _source(tokens[i])
            end = _matching_end(tokens, i + 1)
            body = "".join(_source(t) for t in tokens[i + 1 : end])
            if "matrix" in environment:
                total += _matrix_width(body, scale)
            else:  # aligned, gathered: as wide as its widest line
                total += max(latex_width(line, scale) for line in _top_level_split(body, (r"\\",)))
            i = end + 2
        elif value in ("left", "right"):
            if i < len(tokens):
                i += 1
            total += 0.45 * scale
        elif value in _ARGUMENT and i < len(tokens):
            total += latex_width(_source(tokens[i]), scale)
            i += 1
        elif value == "texttt" and i < len(tokens):
            total += 0.53 * scale * len(_source(tokens[i]))
            i += 1
        elif value in _NAMED:
            total += (0.5 * len(value) + 0.3) * scale
        elif value in _SPACES:
            total += _SPACES[value] * scale
        elif value in _OPERATORS:
            total += _OPERATORS[value] * scale
        elif value in ("{", "}", "$", "&", "%", "#", "_"):
            total += 0.5 * scale
        else:
            total += 1.0 * scale
    return total


def _matching_end(tokens: list[tuple[str, str]], start: int) -> int:
    """The index of the ``\\end`` that closes the environment whose body starts at ``start``."""
    depth = 1
    for k in range(start, len(tokens)):
        depth += {("cmd", "begin"): 1, ("cmd", "end"): -1}.get(tokens[k], 0)
        if depth == 0:
            return k
    return len(tokens)


def _source(token: tuple[str, str]) -> str:
    kind, value = token
    return {"cmd": "\\" + value, "group": "{" + value + "}"}.get(kind, value)


def break_formula(rhs: str, room: float) -> list[str]:
    """``rhs`` as lines no wider than ``room`` em where it can be: cut before its top-level ``+``, ``-``,
    ``\\odot`` and ``\\cdot``, each later line starting with its operator. A formula that fits is one line.

    >>> break_formula("a + b + c", 100.0)
    ['a + b + c']
    >>> break_formula("a + b - c", 3.0)
    ['a + b', '- c']
    """
    if latex_width(rhs) <= room:
        return [rhs]
    separators = (" + ", " - ", r" \odot ", r" \cdot ")
    pieces = _top_level_split(rhs, separators)
    operators = _top_level_operators(rhs, separators)
    lines = [pieces[0]]
    for operator, piece in zip(operators, pieces[1:]):
        candidate = f"{lines[-1]} {operator} {piece}"
        if latex_width(candidate) <= room:
            lines[-1] = candidate
        else:
            lines.append(f"{operator} {piece}")
    return lines


def _top_level_operators(text: str, separators: tuple[str, ...]) -> list[str]:
    """The separators :func:`_top_level_split` cut ``text`` at, in order, without their spaces."""
    marked = _top_level_split(text, separators)
    operators = []
    position = 0
    for piece in marked[:-1]:
        position += len(piece)
        hit = next(s for s in separators if text.startswith(s, position))
        operators.append(hit.strip())
        position += len(hit)
    return operators


def fit_matrix_latex(cells: Any, budget: float = MATRIX_BUDGET, limit: int = ELIDE_AFTER) -> str:
    """:func:`symgrad.core.latex.matrix_latex` with as many columns as fit in ``budget`` em: the first ones and
    the last, with ``\\cdots`` between (at least the first and the last)."""
    arr = np.asarray(cells, dtype=object)
    if arr.ndim == 0:
        return str(arr.item())
    arr = arr.reshape(1, -1) if arr.ndim == 1 else arr.reshape(arr.shape[0], -1)
    rows = [r for r in corner_indices(arr.shape[0], limit) if r is not None]
    widths = [max(latex_width(str(arr[r, c]), CELL_SCALE) for r in rows) for c in range(arr.shape[1])]
    columns = min(arr.shape[1], limit)
    while columns > 3:
        shown = [c for c in corner_indices(arr.shape[1], columns) if c is not None]
        gaps = len(shown) - 1 + (columns < arr.shape[1])
        if sum(widths[c] for c in shown) + 1.4 * (columns < arr.shape[1]) + gaps + 1.2 <= budget:
            break
        columns -= 1
    return _matrix(arr, corner_indices(arr.shape[0], limit), corner_indices(arr.shape[1], columns))


def _matrix(arr: np.ndarray, rows: list[int | None], cols: list[int | None], gap: str = "") -> str:
    """``gap``: extra space between rows (``[0.6ex]``), for cells of several lines."""
    lines = []
    for r in rows:
        if r is None:
            lines.append(" & ".join(r"\ddots" if c is None else r"\vdots" for c in cols))
        else:
            lines.append(" & ".join(r"\cdots" if c is None else str(arr[r, c]) for c in cols))
    return r"\begin{pmatrix} " + (r" \\" + gap + " ").join(lines) + r" \end{pmatrix}"


def fit_formula_matrix(entries: Any, budget: float = MATRIX_BUDGET) -> str:
    """A matrix of SymPy formulas in ``budget`` em: columns are elided first; if even the first and last
    columns are too wide, the sums in the cells keep fewer terms, and then the cells break into lines.

    >>> import sympy
    >>> x = sympy.symbols("x0:3")
    >>> text = fit_formula_matrix([[sympy.tanh(x[0] + x[1]) + sympy.exp(x[2]), x[2]]], budget=6.0)
    >>> r"\\begin{aligned}&e^{x_{2}}\\\\&\\quad + \\tanh" in text, text.endswith(r"& \\cdots \\end{pmatrix}")
    (True, True)
    """
    arr = np.asarray(entries, dtype=object)
    cells = arr
    for terms in (ELIDE_AFTER, 4, 3):
        flat = [formula_latex(e, limit=terms) for e in arr.reshape(-1)]
        cells = np.array(flat, dtype=object).reshape(arr.shape)
        text = fit_matrix_latex(cells, budget)
        if latex_width(text) <= budget:
            return text
    return broken_matrix_latex(cells, budget)


def broken_matrix_latex(cells: Any, budget: float = MATRIX_BUDGET) -> str:
    """A matrix whose cells are too wide for ``budget`` em even with only its first and last columns: each cell
    breaks into lines (as :func:`break_formula` does), with the first and last columns, or else the first
    column alone, before ``\\cdots``. The narrowest of these if none fits."""
    arr = np.asarray(cells, dtype=object)
    if arr.ndim == 0:
        return str(arr.item())  # a display breaks it as a line of its own
    arr = arr.reshape(1, -1) if arr.ndim == 1 else arr.reshape(arr.shape[0], -1)
    rows = corner_indices(arr.shape[0], ELIDE_AFTER)
    n = arr.shape[1]
    choices = [corner_indices(n, 3), [0, None] if n > 1 else [0]]
    text = ""
    for cols in choices:
        shown = [c for c in cols if c is not None]
        room = (budget - 1.2 - 1.4 * (None in cols) - (len(cols) - 1)) / len(shown) - 1.0  # 1 em: \quad
        stacked = arr.copy()
        for r in rows:
            for c in shown:
                if r is not None:
                    stacked[r, c] = _stacked(break_formula(str(arr[r, c]), room))
        text = _matrix(stacked, rows, cols, gap="[0.6ex]" if any("aligned" in str(x) for x in stacked.flat) else "")
        if latex_width(text) <= budget:
            break
    return text


def _stacked(lines: list[str]) -> str:
    """Lines of one cell, the later ones hanging under the first."""
    if len(lines) == 1:
        return lines[0]
    return r"\begin{aligned}&" + r"\\&\quad ".join(lines) + r"\end{aligned}"
