"""LaTeX that a tensor needs to show itself: escaped names, shapes and (elided) matrices.

Everything a user types reaches LaTeX through these functions, so a tensor name
can never leave math mode or start a TeX command.

>>> text_latex("a_b & {c}")
'a\\\\_b \\\\& \\\\{c\\\\}'
>>> latex_name("w"), latex_name("alpha"), latex_name("w_1"), latex_name("x}$")
('w', '\\\\alpha', '\\\\mathrm{w\\\\_1}', '\\\\mathrm{x\\\\}\\\\$}')
>>> matrix_latex([["1", "2"], ["3", "4"]])
'\\\\begin{pmatrix} 1 & 2 \\\\\\\\ 3 & 4 \\\\end{pmatrix}'
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np
import sympy

# In TeX's text mode; math mode gets the same characters through \mathrm{} via ``latex_name``.
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

GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "theta", "lambda", "mu", "sigma", "tau", "phi", "omega"}


# Greek letters LaTeX spells as commands; the capitals that look like Latin ones (Α, Β, …) have none.
_SMALL = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lamda mu nu xi pi rho sigma tau upsilon phi chi psi omega"
)
_CAPITAL = "gamma delta theta lamda xi pi sigma upsilon phi psi omega"
_GREEK_COMMANDS = {
    unicodedata.lookup(f"GREEK {case} LETTER {name.upper()}"): "\\"
    + (name.capitalize() if case == "CAPITAL" else name).replace("amda", "ambda")
    for case, names in (("SMALL", _SMALL), ("CAPITAL", _CAPITAL))
    for name in names.split()
}


def _spelled(char: str, math: bool) -> str:
    """A character outside printable ASCII: a Greek letter as its command, anything else by its code
    point inside angle brackets, which no identifier can contain (``ω`` and ``u3c9`` stay apart)."""
    command = _GREEK_COMMANDS.get(char)
    if command is not None:
        return f"{{{command}}}" if math else f"${command}$"
    point = f"U+{ord(char):04X}"
    return rf"{{\langle}}{point}{{\rangle}}" if math else rf"$\langle${point}$\rangle$"


def text_latex(text: str, *, math: bool = False) -> str:
    """``text`` for TeX's text mode (``\\texttt{…}``, prose), or inside ``\\mathrm{}`` with ``math=True``:
    every special character escaped.

    Characters outside printable ASCII are spelled so that pdflatex can print them and distinct names
    stay distinct: Greek letters as ``\\omega``, anything else as ``⟨U+3C9⟩``.
    """
    escapes = _MATH_ESCAPES if math else _TEXT_ESCAPES
    out = []
    for char in str(text):
        if char in escapes:
            out.append(escapes[char])
        elif " " <= char <= "~":
            out.append(char)
        else:
            out.append(_spelled(char, math))
    return "".join(out)


def latex_name(name: str) -> str:
    """A tensor name as LaTeX math: one ASCII letter as is, a Greek letter's name as the letter,
    anything longer upright, with every TeX special character escaped (names can be labels such
    as ``(w @ x).sum()``, and nothing in a name may start a command or close a group)."""
    if len(name) == 1 and name.isascii() and name.isalpha():
        return name
    if name in _GREEK_COMMANDS:
        return _GREEK_COMMANDS[name]
    if name in GREEK:
        return "\\" + name
    return rf"\mathrm{{{text_latex(name, math=True)}}}"


def shape_latex(shape: Sequence[Any]) -> str:
    """``1 \\times 2``, ``k \\times n``; a 0-d shape is ``()``."""
    if not shape:
        return "()"
    return r" \times ".join(sympy.latex(sympy.sympify(d)) for d in shape)


def corner_indices(size: int, limit: int) -> list[int | None]:
    """All indices, or the first ``limit - 1`` and the last with ``None`` marking the gap."""
    if size <= limit:
        return list(range(size))
    return list(range(limit - 2)) + [None, size - 1]


def elided(items: Sequence[Any], limit: int = ELIDE_AFTER) -> list[Any]:
    """The items, or the first ``limit - 1`` and the last with ``None`` standing for the rest."""
    return [None if i is None else items[i] for i in corner_indices(len(items), limit)]


def matrix_latex(cells: Any, limit: int = ELIDE_AFTER) -> str:
    """A pmatrix of LaTeX strings; beyond ``limit`` rows or columns the middle becomes ⋯ / ⋮ / ⋱.

    A 1-d array is one row; a 0-d one is its entry; more dimensions are shown as
    rows of the first index with the rest flattened.
    """
    arr = np.asarray(cells, dtype=object)
    if arr.ndim == 0:
        return str(arr.item())
    arr = arr.reshape(1, -1) if arr.ndim == 1 else arr.reshape(arr.shape[0], -1)
    rows = corner_indices(arr.shape[0], limit)
    cols = corner_indices(arr.shape[1], limit)
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
